// Bandwidth and latency defaults used when nothing was measured, each with the source of its number.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gpuops/core/units.hpp"

namespace gpuops::topo::defaults {

struct Value {
    double bandwidth = 0;  ///< bytes/s per direction
    double latency_us = 0;
    std::string source;
};

/// Effective bandwidth a DMA stream reaches over a PCIe link: ≈ 0.8 of the encoded line rate
/// (Gen3 x16 12 GB/s as in NCCL's PCI_BW; Gen4 x16 ≈ 25 GB/s, Gen5 x16 ≈ 50 GB/s measured; research/variopath.md §5.2).
inline constexpr double pcie_efficiency = 0.8;

[[nodiscard]] Value pcie(const units::PcieLink& link);
/// From a line rate in bytes/s (hwloc's pci_link_speed is in GB/s of the encoded link).
[[nodiscard]] Value pcie_from_line_rate(double bytes_per_s, std::string_view origin);
/// When the source says nothing about the link: assume Gen4 x16, and say so.
[[nodiscard]] Value pcie_unknown();

/// CPU identity as the sources give it; any part may be missing.
struct Cpu {
    std::string vendor;  ///< GenuineIntel, AuthenticAMD, IBM, ...
    std::optional<int> family;
    std::optional<int> model;
    std::string model_name;  ///< e.g. "Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz"
};
/// Socket-to-socket bandwidth per direction, after NCCL's table (src/graph/topo.h).
[[nodiscard]] Value socket_interconnect(const Cpu& cpu);
[[nodiscard]] Value memory();
/// Root complex to socket: the CPU's internal fabric, modelled as not narrower than the root ports below it.
[[nodiscard]] Value host(double sum_of_root_ports);
[[nodiscard]] Value network(double port_bandwidth, std::string_view origin);

}  // namespace gpuops::topo::defaults
