// The automorphism group of a topology (identical GPUs, switches, sockets, nodes), computed from the model.
#pragma once

#include <string>
#include <vector>

#include "gpuops/topo/topology.hpp"

namespace gpuops::topo {

struct Symmetry {
    /// The group order as mantissa × 10^exponent (nauty's grpsize1/grpsize2): exact below 2^53, and a
    /// cluster of many nodes has an order far beyond any integer type (128^N · N!).
    double order_mantissa = 1;
    int order_exponent = 0;
    /// Per device: the smallest device id of its orbit (devices no automorphism tells apart share it).
    std::vector<DeviceId> orbit_of;

    /// The order when it fits a double exactly enough to compare (tests, small topologies).
    [[nodiscard]] double order() const;
    /// "128", or "1.2e+120" for large groups.
    [[nodiscard]] std::string order_text() const;
};

/// The automorphisms of the topology's graph, found by nauty on a coloured graph: devices coloured by kind,
/// model and PCI ids, and each link subdivided by a vertex coloured by its kind, bandwidth, latency and PCIe
/// generation/width. Names, bus ids and node host names do not count: two GPUs are interchangeable when they
/// and everything around them look the same. Works for imported topologies as well as presets.
[[nodiscard]] Symmetry automorphisms(const Topology& topology);

}  // namespace gpuops::topo
