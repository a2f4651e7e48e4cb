// nauty over the topology graph: colour classes from device and link properties, group order and orbits out.
#include "gpuops/topo/symmetry.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nausparse.h>

#include "gpuops/core/error.hpp"

namespace gpuops::topo {
namespace {

std::string device_colour(const Device& d) {
    return fmt::format("d|{}|{}|{}|{}|{}|{}", to_string(d.kind), d.model, d.vendor_id.value_or(-1),
                       d.device_id.value_or(-1), d.rdma, d.port_bandwidth ? std::llround(*d.port_bandwidth / 1e6) : -1);
}

std::string link_colour(const Link& l) {
    // Bandwidth to 1 MB/s and latency to 1 ns: measured numbers that differ in noise only should still match.
    return fmt::format("l|{}|{}|{}|{}|{}", to_string(l.kind), std::llround(l.bandwidth / 1e6),
                       std::llround(l.latency_us * 1e3), l.pcie ? l.pcie->gen : 0, l.pcie ? l.pcie->width : 0);
}

/// Owns nauty's sparse graph arrays (allocated with malloc by nauty's macros).
struct SparseGraph {
    sparsegraph g;
    SparseGraph() { SG_INIT(g); }
    SparseGraph(const SparseGraph&) = delete;
    SparseGraph& operator=(const SparseGraph&) = delete;
    ~SparseGraph() { SG_FREE(g); }
};

}  // namespace

double Symmetry::order() const { return order_mantissa * std::pow(10.0, order_exponent); }

std::string Symmetry::order_text() const {
    if (order_exponent == 0 && order_mantissa < 1e15) return fmt::format("{:.0f}", order_mantissa);
    const double exponent = std::log10(order_mantissa) + order_exponent;
    const double mantissa = std::pow(10.0, exponent - std::floor(exponent));
    return fmt::format("{:.3g}e+{}", mantissa, static_cast<long long>(std::floor(exponent)));
}

Symmetry automorphisms(const Topology& t) {
    const std::size_t devices = t.devices.size();
    const std::size_t n = devices + t.links.size();  // one vertex per device, one per link
    if (n == 0) return Symmetry{};
    if (n > 2'000'000) throw DataError("the topology is too large for a symmetry search");

    // Colour classes: nauty wants vertices listed class by class (lab) with ptn[i] = 0 closing each class.
    std::map<std::string, std::vector<int>> classes;
    for (const auto& d : t.devices)
        classes[device_colour(d)].push_back(static_cast<int>(d.id));
    for (const auto& l : t.links)
        classes[link_colour(l)].push_back(static_cast<int>(devices + l.id));
    std::vector<int> lab;
    std::vector<int> ptn;
    lab.reserve(n);
    ptn.reserve(n);
    for (const auto& [colour, members] : classes) {
        for (std::size_t i = 0; i < members.size(); ++i) {
            lab.push_back(members[i]);
            ptn.push_back(i + 1 < members.size() ? 1 : 0);
        }
    }

    // Each link l joins a, (devices + l) and b: degree of a device = its links, of a link vertex = 2.
    std::vector<std::vector<int>> adjacency(n);
    for (const auto& l : t.links) {
        const int v = static_cast<int>(devices + l.id);
        adjacency[l.a].push_back(v);
        adjacency[l.b].push_back(v);
        adjacency[static_cast<std::size_t>(v)] = {static_cast<int>(l.a), static_cast<int>(l.b)};
    }
    SparseGraph sg;
    const std::size_t edges = 4 * t.links.size();
    SG_ALLOC(sg.g, n, edges, "automorphisms");
    sg.g.nv = static_cast<int>(n);
    sg.g.nde = edges;
    std::size_t at = 0;
    for (std::size_t v = 0; v < n; ++v) {
        sg.g.v[v] = at;
        sg.g.d[v] = static_cast<int>(adjacency[v].size());
        for (int w : adjacency[v])
            sg.g.e[at++] = w;
    }

    DEFAULTOPTIONS_SPARSEGRAPH(options);
    options.defaultptn = FALSE;
    options.getcanon = FALSE;
    statsblk stats;
    std::vector<int> orbits(n);
    const int m = SETWORDSNEEDED(static_cast<int>(n));
    nauty_check(WORDSIZE, m, static_cast<int>(n), NAUTYVERSIONID);
    sparsenauty(&sg.g, lab.data(), ptn.data(), orbits.data(), &options, &stats, nullptr);
    if (stats.errstatus != 0) throw InternalError(fmt::format("nauty failed with status {}", stats.errstatus));

    Symmetry s;
    s.order_mantissa = stats.grpsize1;
    s.order_exponent = stats.grpsize2;
    s.orbit_of.resize(devices);
    for (std::size_t d = 0; d < devices; ++d)
        s.orbit_of[d] = static_cast<DeviceId>(orbits[d]);
    return s;
}

}  // namespace gpuops::topo
