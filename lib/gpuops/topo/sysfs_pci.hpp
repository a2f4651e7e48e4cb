// PCIe link capabilities from Linux sysfs: what a link can train to, not the idle-throttled current speed.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gpuops/core/units.hpp"

namespace gpuops::topo::sysfs {

/// The link from the text of max_link_speed ("16.0 GT/s PCIe") and max_link_width ("16"). Width 0 (unknown)
/// when the width is not a PCIe width; nullopt when the speed is unknown or unreadable.
[[nodiscard]] std::optional<units::PcieLink> parse_max_link(std::string_view speed, std::string_view width);

/// The same from <devices>/<bus id>/max_link_{speed,width}; nullopt where the kernel does not say.
[[nodiscard]] std::optional<units::PcieLink> max_link(const std::string& bus_id,
                                                      const std::string& devices = "/sys/bus/pci/devices");

}  // namespace gpuops::topo::sysfs
