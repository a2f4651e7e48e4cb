// PCIe link capabilities from Linux sysfs: what a link can train to, not the idle-throttled current speed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuops/core/units.hpp"
#include "gpuops/topo/topology.hpp"

namespace gpuops::topo::sysfs {

/// The link from the text of max_link_speed ("16.0 GT/s PCIe") and max_link_width ("16"). Width 0 (unknown)
/// when the width is not a PCIe width; nullopt when the speed is unknown or unreadable.
[[nodiscard]] std::optional<units::PcieLink> parse_max_link(std::string_view speed, std::string_view width);

/// The same from <devices>/<bus id>/max_link_{speed,width}; nullopt where the kernel does not say.
[[nodiscard]] std::optional<units::PcieLink> max_link(const std::string& bus_id,
                                                      const std::string& devices = "/sys/bus/pci/devices");

/// A NIC's wire speed in bytes/s: the fastest of its RDMA ports (<sys_class>/infiniband/<dev>/ports/*/rate,
/// "200 Gb/sec (4X HDR)") and network interfaces (<sys_class>/net/<if>/speed in Mb/s; -1 while the link is
/// down). nullopt when no interface says.
[[nodiscard]] std::optional<double> nic_port_speed(const std::vector<std::string>& interfaces,
                                                   const std::string& sys_class = "/sys/class");

/// Sets the port speed of every NIC of `topology` that has none, from the kernel's view of its interfaces, so a
/// cluster composed from a live probe can use each NIC's own speed.
void annotate_nic_speeds(Topology& topology, const std::string& sys_class = "/sys/class");

}  // namespace gpuops::topo::sysfs
