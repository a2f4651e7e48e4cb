// The automorphism group of a topology (identical GPUs, switches, sockets, nodes), computed from the model,
// and the coloured-graph search under it that other modules use to canonicalize decorated topologies.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "gpuops/topo/topology.hpp"

namespace gpuops::topo {

/// An undirected vertex-coloured graph for nauty. Colours are strings; only their order and equality count.
struct ColouredGraph {
    std::vector<std::string> colour;          ///< per vertex
    std::vector<std::vector<int>> adjacency;  ///< per vertex; every edge listed at both ends
    [[nodiscard]] std::size_t size() const { return colour.size(); }
    int add_vertex(std::string colour_name);
    void add_edge(int a, int b);
};

/// What nauty found about a coloured graph.
struct GraphSymmetry {
    double order_mantissa = 1;  ///< the group order is mantissa × 10^exponent (nauty's grpsize1/grpsize2)
    int order_exponent = 0;
    std::vector<std::vector<int>> generators;  ///< generators of the group, as vertex permutations
    std::vector<int> orbits;                   ///< per vertex: the smallest vertex of its orbit
    /// With `canonical`: a certificate equal for two graphs exactly when they are isomorphic as coloured graphs
    /// (colour names, the canonical adjacency). Empty otherwise.
    std::vector<int> certificate;
    /// With `canonical`: the vertex at each canonical position (nauty's lab). Two isomorphic graphs
    /// correspond position by position.
    std::vector<int> labelling;
    [[nodiscard]] double order() const;
};

/// Runs nauty (sparse) on the graph: the automorphism group, its generators and orbits, and with `canonical` a
/// canonical certificate.
[[nodiscard]] GraphSymmetry analyse(const ColouredGraph& graph, bool canonical);

/// The same on a graph whose colours are already integers (compared by value): the fast path for callers that
/// canonicalize many decorated copies of one graph.
[[nodiscard]] GraphSymmetry analyse(std::span<const int> colour, const std::vector<std::vector<int>>& adjacency,
                                    bool canonical);

/// The colour names of `graph` replaced by their ranks in sorted order (0 for the smallest name).
[[nodiscard]] std::vector<int> colour_ranks(const ColouredGraph& graph);

/// The graph nauty sees for a topology: vertices 0..devices-1 are the devices, coloured by kind, model and
/// PCI ids; then each link is a vertex joined to both of its devices, coloured by kind, bandwidth, latency
/// and PCIe generation/width. Names, bus ids and host names do not count.
[[nodiscard]] ColouredGraph coloured_graph(const Topology& topology);

struct Symmetry {
    /// The group order as mantissa × 10^exponent (nauty's grpsize1/grpsize2): exact below 2^53, and a
    /// cluster of many nodes has an order far beyond any integer type (128^N · N!).
    double order_mantissa = 1;
    int order_exponent = 0;
    /// Per device: the smallest device id of its orbit (devices no automorphism tells apart share it).
    std::vector<DeviceId> orbit_of;
    /// Generators of the group acting on devices (device id → device id); links follow their ends.
    std::vector<std::vector<DeviceId>> generators;

    /// The order when it fits a double exactly enough to compare (tests, small topologies).
    [[nodiscard]] double order() const;
    /// "128", or "1.2e+120" for large groups.
    [[nodiscard]] std::string order_text() const;
};

/// The automorphisms of the topology's graph (coloured_graph()): two GPUs are interchangeable when they and
/// everything around them look the same. Works for imported topologies as well as presets.
[[nodiscard]] Symmetry automorphisms(const Topology& topology);

/// "128" or "1.2e+120": a group order or orbit size given as mantissa × 10^exponent.
[[nodiscard]] std::string order_text(double mantissa, int exponent);

}  // namespace gpuops::topo
