// nauty over coloured graphs: colour classes from device and link properties, group order, generators, orbits
// and canonical certificates.
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

/// nauty reports generators through a plain function pointer; the running search collects them here.
thread_local std::vector<std::vector<int>>* collected = nullptr;

void collect_generator(int /*count*/, int* perm, int* /*orbits*/, int /*numorbits*/, int /*stabvertex*/, int n) {
    if (collected != nullptr) collected->emplace_back(perm, perm + n);
}

}  // namespace

int ColouredGraph::add_vertex(std::string colour_name) {
    colour.push_back(std::move(colour_name));
    adjacency.emplace_back();
    return static_cast<int>(colour.size() - 1);
}

void ColouredGraph::add_edge(int a, int b) {
    adjacency[static_cast<std::size_t>(a)].push_back(b);
    adjacency[static_cast<std::size_t>(b)].push_back(a);
}

double GraphSymmetry::order() const { return order_mantissa * std::pow(10.0, order_exponent); }

std::vector<int> colour_ranks(const ColouredGraph& graph) {
    std::map<std::string_view, int> rank;
    for (const auto& c : graph.colour)
        rank.emplace(c, 0);
    int next = 0;
    for (auto& [name, r] : rank)
        r = next++;
    std::vector<int> out;
    out.reserve(graph.size());
    for (const auto& c : graph.colour)
        out.push_back(rank.at(c));
    return out;
}

GraphSymmetry analyse(const ColouredGraph& graph, bool canonical) {
    const auto ranks = colour_ranks(graph);
    return analyse(ranks, graph.adjacency, canonical);
}

GraphSymmetry analyse(std::span<const int> colour, const std::vector<std::vector<int>>& adjacency, bool canonical) {
    const std::size_t n = colour.size();
    GraphSymmetry out;
    if (n == 0) return out;
    if (n > 2'000'000) throw DataError("the topology is too large for a symmetry search");

    // Colour classes: nauty wants vertices listed class by class (lab) with ptn[i] = 0 closing each class.
    std::vector<int> lab(n);
    for (std::size_t v = 0; v < n; ++v)
        lab[v] = static_cast<int>(v);
    std::stable_sort(lab.begin(), lab.end(), [&](int a, int b) {
        return colour[static_cast<std::size_t>(a)] < colour[static_cast<std::size_t>(b)];
    });
    std::vector<int> ptn(n, 1);
    for (std::size_t i = 0; i < n; ++i)
        if (i + 1 == n || colour[static_cast<std::size_t>(lab[i])] != colour[static_cast<std::size_t>(lab[i + 1])])
            ptn[i] = 0;

    std::size_t edges = 0;
    for (const auto& a : adjacency)
        edges += a.size();
    SparseGraph sg;
    SG_ALLOC(sg.g, n, edges, "analyse");
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
    options.getcanon = canonical ? TRUE : FALSE;
    options.userautomproc = collect_generator;
    statsblk stats;
    out.orbits.resize(n);
    const int m = SETWORDSNEEDED(static_cast<int>(n));
    nauty_check(WORDSIZE, m, static_cast<int>(n), NAUTYVERSIONID);
    SparseGraph canon;
    collected = &out.generators;
    sparsenauty(&sg.g, lab.data(), ptn.data(), out.orbits.data(), &options, &stats, canonical ? &canon.g : nullptr);
    collected = nullptr;
    if (stats.errstatus != 0) throw InternalError(fmt::format("nauty failed with status {}", stats.errstatus));
    out.order_mantissa = stats.grpsize1;
    out.order_exponent = stats.grpsize2;

    if (canonical) {
        // The certificate: the colour at each canonical position, then the sorted neighbour lists of the
        // canonical graph. Equal certificates mean isomorphic coloured graphs.
        sortlists_sg(&canon.g);
        out.labelling = lab;
        out.certificate.reserve(2 * n + edges + 1);
        out.certificate.push_back(static_cast<int>(n));
        for (std::size_t i = 0; i < n; ++i)
            out.certificate.push_back(colour[static_cast<std::size_t>(lab[i])]);
        for (std::size_t v = 0; v < n; ++v) {
            out.certificate.push_back(canon.g.d[v]);
            for (int k = 0; k < canon.g.d[v]; ++k)
                out.certificate.push_back(canon.g.e[canon.g.v[v] + static_cast<std::size_t>(k)]);
        }
    }
    return out;
}

ColouredGraph coloured_graph(const Topology& t) {
    ColouredGraph g;
    for (const auto& d : t.devices)
        g.add_vertex(device_colour(d));
    for (const auto& l : t.links) {
        const int v = g.add_vertex(link_colour(l));
        g.add_edge(static_cast<int>(l.a), v);
        g.add_edge(static_cast<int>(l.b), v);
    }
    return g;
}

std::string order_text(double mantissa, int exponent) {
    if (exponent == 0 && mantissa < 1e15) return fmt::format("{:.0f}", mantissa);
    const double e = std::log10(mantissa) + exponent;
    const double m = std::pow(10.0, e - std::floor(e));
    return fmt::format("{:.3g}e+{}", m, static_cast<long long>(std::floor(e)));
}

double Symmetry::order() const { return order_mantissa * std::pow(10.0, order_exponent); }

std::string Symmetry::order_text() const { return topo::order_text(order_mantissa, order_exponent); }

Symmetry automorphisms(const Topology& t) {
    const GraphSymmetry g = analyse(coloured_graph(t), false);
    Symmetry s;
    s.order_mantissa = g.order_mantissa;
    s.order_exponent = g.order_exponent;
    const std::size_t devices = t.devices.size();
    s.orbit_of.resize(devices);
    for (std::size_t d = 0; d < devices; ++d)
        s.orbit_of[d] = static_cast<DeviceId>(g.orbits[d]);
    for (const auto& perm : g.generators) {
        std::vector<DeviceId> on_devices(devices);
        for (std::size_t d = 0; d < devices; ++d)
            on_devices[d] = static_cast<DeviceId>(perm[d]);
        s.generators.push_back(std::move(on_devices));
    }
    return s;
}

}  // namespace gpuops::topo
