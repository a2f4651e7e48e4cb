// Reading max_link_speed/max_link_width under /sys/bus/pci/devices.
#include "gpuops/topo/sysfs_pci.hpp"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <system_error>

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

std::optional<double> nic_port_speed(const std::vector<std::string>& interfaces, const std::string& sys_class) {
    std::optional<double> best;
    const auto consider = [&best](double bytes_per_s) {
        if (bytes_per_s > 0 && (!best || bytes_per_s > *best)) best = bytes_per_s;
    };
    for (const auto& name : interfaces) {
        std::error_code ec;
        const std::filesystem::path ports = std::filesystem::path(sys_class) / "infiniband" / name / "ports";
        for (const auto& port : std::filesystem::directory_iterator(ports, ec)) {
            // "200 Gb/sec (4X HDR)": a number of Gb/s, then the lanes and generation.
            const auto rate = first_line((port.path() / "rate").string());
            if (!rate) continue;
            const std::string_view r = text::trim(*rate);
            double gbits = 0;
            const auto [end, err] = std::from_chars(r.data(), r.data() + r.size(), gbits);
            if (err == std::errc() &&
                std::string_view(end, static_cast<std::size_t>(r.data() + r.size() - end)).starts_with(" Gb/sec")) {
                consider(gbits * 1e9 / 8);
            }
        }
        if (const auto speed = first_line((std::filesystem::path(sys_class) / "net" / name / "speed").string())) {
            if (const auto mbits = text::leading_int(text::trim(*speed))) consider(*mbits * 1e6 / 8);
        }
    }
    return best;
}

void annotate_nic_speeds(Topology& topology, const std::string& sys_class) {
    for (auto& d : topology.devices) {
        if (d.kind != DeviceKind::nic || d.port_bandwidth) continue;
        d.port_bandwidth = nic_port_speed(d.interfaces, sys_class);
    }
}

}  // namespace gpuops::topo::sysfs
