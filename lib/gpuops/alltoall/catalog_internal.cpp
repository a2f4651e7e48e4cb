// The catalog's shared helpers: counts for documents and text, edge and flow labels, port and shape tests.
#include "gpuops/alltoall/catalog_internal.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gpuops/alltoall/catalog_internal.hpp"
#include "gpuops/core/error.hpp"
#include "gpuops/core/units.hpp"
#include "gpuops/topo/symmetry.hpp"
#include "gpuops/topo/topology_json.hpp"

namespace gpuops::alltoall::catalog_detail {

double from_log10(double x) { return x > 308 ? std::numeric_limits<double>::infinity() : std::pow(10.0, x); }

double round_if_exact(double x) { return x < exact_limit ? std::round(x) : x; }

/// GB/s (1e9 bytes/s) to a millionth, for documents.
double gbytes(double bytes_per_s) { return std::round(bytes_per_s / 1e3) / 1e6; }

/// A count for documents: the number, or null when it does not fit a double.
Json count_json(double x) {
    if (!std::isfinite(x)) return nullptr;
    if (x < exact_limit && x == std::round(x)) return static_cast<std::uint64_t>(x);
    return x;
}

/// "1234", or "1.23e+45" beyond 2^53.
std::string count_text(double x, double log10) {
    if (std::isfinite(x) && x < exact_limit) return fmt::format("{:.0f}", x);
    const double m = std::pow(10.0, log10 - std::floor(log10));
    return fmt::format("{:.2f}e+{}", m, static_cast<long long>(std::floor(log10)));
}

std::string edge_text(const Topology& t, EdgeId e) {
    const auto edge = t.edge(e);
    return t.label(edge.from) + ">" + t.label(edge.to);
}

std::string join_names(const Topology& t, std::span<const DeviceId> ids) {
    std::string out;
    for (DeviceId id : ids) {
        if (!out.empty()) out += ",";
        out += t.label(id);
    }
    return out;
}

/// Whether every port of the class sends one flow and receives one.
bool saturates_ports(const DomainClass& c, std::span<const FlowId> channel) {
    for (DeviceId p : c.ports) {
        bool in = false;
        bool out = false;
        for (FlowId id : channel) {
            const Flow& f = c.space->flows()[id];
            in = in || f.dst == p;
            out = out || f.src == p;
        }
        if (!in || !out) return false;
    }
    return true;
}

std::vector<std::uint32_t> shape_of(const DomainClass& c, std::span<const FlowId> channel,
                                    const std::unordered_map<EdgeId, std::uint32_t>& class_of_edge) {
    std::vector<std::uint32_t> shape(c.edge_classes.size(), 0);
    for (FlowId id : channel)
        for (EdgeId e : c.space->flows()[id].edges)
            ++shape[class_of_edge.at(e)];
    return shape;
}

std::unordered_map<EdgeId, std::uint32_t> edge_class_index(const DomainClass& c) {
    std::unordered_map<EdgeId, std::uint32_t> out;
    for (std::size_t k = 0; k < c.edge_classes.size(); ++k)
        for (EdgeId e : c.edge_classes[k].edges)
            out.emplace(e, static_cast<std::uint32_t>(k));
    return out;
}

double channel_rate(const DomainClass& c, std::span<const FlowId> channel) {
    double rate = std::numeric_limits<double>::infinity();
    for (FlowId id : channel)
        rate = std::min(rate, c.space->flows()[id].rate);
    return std::isfinite(rate) ? rate : 0;
}

std::string flow_text(const Topology& t, const Flow& f) {
    std::string s = fmt::format("{}->{}", t.label(f.src), t.label(f.dst));
    if (f.kind != PathKind::direct || !f.via.empty()) {
        s += fmt::format(" ({}", topo::to_string(f.kind));
        if (!f.via.empty()) s += " via " + join_names(t, f.via);
        s += ")";
    }
    return s;
}

/// The edges of `flow` that `used` marks: its first conflict with a channel's occupancy.
std::optional<std::string> blocked(const std::vector<bool>& sending, const std::vector<bool>& receiving,
                                   const std::vector<bool>& used, const topo::Path& path) {
    if (sending[path.src] || receiving[path.dst]) return "endpoint";
    for (EdgeId e : path.edges)
        if (used[e]) return "edge";
    return std::nullopt;
}

}  // namespace gpuops::alltoall::catalog_detail
