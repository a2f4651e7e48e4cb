// Reading max_link_speed/max_link_width under /sys/bus/pci/devices.
#include "gpuops/topo/sysfs_pci.hpp"

#include <fstream>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"
#include "gpuops/core/text.hpp"

namespace gpuops::topo::sysfs {
namespace {

std::optional<std::string> first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    if (!in || !std::getline(in, line)) return std::nullopt;
    return line;
}

}  // namespace

std::optional<units::PcieLink> parse_max_link(std::string_view speed, std::string_view width) {
    speed = text::trim(speed);
    width = text::trim(width);
    try {
        if (!width.empty()) return units::parse_pcie_link(fmt::format("{} x{}", speed, width));
    } catch (const DataError&) {
        // an odd width ("0", "255" on some bridges): keep the speed alone
    }
    try {
        auto link = units::parse_pcie_link(speed);
        if (link.gen > 0) return link;
    } catch (const DataError&) {
        // "Unknown", "Unknown speed": the kernel does not know either
    }
    return std::nullopt;
}

std::optional<units::PcieLink> max_link(const std::string& bus_id, const std::string& devices) {
    const std::string dir = devices + "/" + bus_id + "/";
    const auto speed = first_line(dir + "max_link_speed");
    if (!speed) return std::nullopt;
    return parse_max_link(*speed, first_line(dir + "max_link_width").value_or(""));
}

}  // namespace gpuops::topo::sysfs
