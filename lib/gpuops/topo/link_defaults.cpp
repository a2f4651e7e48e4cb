// The default table: PCIe by generation and width, socket interconnects by CPU, memory, host, network.
#include "gpuops/topo/link_defaults.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace gpuops::topo::defaults {
namespace {

constexpr double bytes_per_gb = 1e9;
// Per-hop latencies [ours]: a GPU-switch-GPU P2P path (2 PCIe hops + switch) measures 0.36-0.45 us
// (rtx6kpro pcie-bandwidth.md), so ~0.2 us per PCIe hop; a socket hop adds ~0.1 us (NUMA distance 10→21).
constexpr double pcie_latency_us = 0.2;
constexpr double host_latency_us = 0.05;
constexpr double socket_latency_us = 0.1;
constexpr double memory_latency_us = 0.1;
constexpr double network_latency_us = 1.0;  // NIC + one switch hop, RDMA write, order of 1 us

}  // namespace

Value pcie(const units::PcieLink& link) {
    if (link.gen <= 0) return pcie_unknown();
    const int width = link.width > 0 ? link.width : 16;
    const double line = units::pcie_raw_bandwidth(link.gen, width);
    std::string source = fmt::format("default: PCIe Gen{} x{} line rate {} x {} effective", link.gen, width,
                                     units::format_bandwidth(line), pcie_efficiency);
    if (link.width <= 0) source += " (width unknown, x16 assumed)";
    return {line * pcie_efficiency, pcie_latency_us, source};
}

Value pcie_from_line_rate(double bytes_per_s, std::string_view origin) {
    return {
        bytes_per_s * pcie_efficiency, pcie_latency_us,
        fmt::format("{}: line rate {} x {} effective", origin, units::format_bandwidth(bytes_per_s), pcie_efficiency)};
}

Value pcie_unknown() {
    Value v = pcie(units::PcieLink{4, 16, 16.0});
    v.source = "default: link speed unknown, PCIe Gen4 x16 assumed (25 GB/s effective)";
    return v;
}

Value socket_interconnect(const Cpu& cpu) {
    // NCCL src/graph/topo.h: SKL_QPI_BW 10, SRP_QPI_BW 22, ERP_QPI_BW 40, AMD_BW 16, AMD_ZEN34_BW 24,
    // AMD_ZEN5_BW 32, P9_BW 32, ARM_BW 6 (GB/s); QPI_BW 6 for older Intel.
    auto value = [](double gbs, std::string_view what) {
        return Value{gbs * bytes_per_gb, socket_latency_us,
                     fmt::format("default: {} {} GB/s (NCCL topo.h)", what, gbs)};
    };
    const bool intel = cpu.vendor == "GenuineIntel" || cpu.model_name.find("Intel") != std::string::npos;
    const bool amd = cpu.vendor == "AuthenticAMD" || cpu.model_name.find("AMD") != std::string::npos;
    const bool power = cpu.vendor == "IBM" || cpu.model_name.find("POWER") != std::string::npos;
    if (intel) {
        if (cpu.family == 6 && cpu.model) {
            if (*cpu.model == 207) return value(40, "Intel Emerald Rapids UPI");
            if (*cpu.model == 143) return value(22, "Intel Sapphire Rapids UPI");
            if (*cpu.model >= 85) return value(10, "Intel Skylake-class UPI");
            return value(6, "Intel QPI");
        }
        return value(22, "Intel UPI (generation unknown, Sapphire Rapids assumed)");
    }
    if (amd) {
        if (cpu.family == 26) return value(32, "AMD Zen5 xGMI");
        if (cpu.family == 25) return value(24, "AMD Zen3/4 xGMI");
        if (cpu.family) return value(16, "AMD Infinity Fabric");
        return value(24, "AMD xGMI (generation unknown, Zen3/4 assumed)");
    }
    if (power) return value(32, "IBM POWER9 X-bus");
    return value(22, "socket interconnect (CPU unknown, Sapphire Rapids UPI assumed)");
}

Value memory() {
    return {
        100 * bytes_per_gb, memory_latency_us,
        "default: 100 GB/s host memory per socket [ours: conservative STREAM figure for 8-channel DDR4; calibrate]"};
}

Value host(double sum_of_root_ports) {
    const double bw = std::max(sum_of_root_ports, 25 * bytes_per_gb);
    return {bw, host_latency_us, "default: CPU fabric not narrower than the root ports below it [ours]"};
}

Value network(double port_bandwidth, std::string_view origin) {
    return {port_bandwidth, network_latency_us,
            fmt::format("{}: {} per port", origin, units::format_bandwidth(port_bandwidth))};
}

}  // namespace gpuops::topo::defaults
