// Candidate flows, the contention rule, and exact enumeration of maximal channels.
#include "gpuops/alltoall/channel.hpp"

#include <algorithm>
#include <cstdint>
#include <tuple>

#include <fmt/format.h>

#include "gpuops/alltoall/flow_set.hpp"
#include "gpuops/core/error.hpp"

namespace gpuops::alltoall {
namespace {

/// Bron–Kerbosch with Tomita pivoting: R is the clique so far, P the flows that may still join, X those that
/// were already tried (a clique that could take one of them is not maximal).
class Enumerator {
public:
    Enumerator(std::span<const Flow> flows, std::size_t limit) : flows_(flows), limit_(limit) {
        neighbours_.assign(flows.size(), FlowSet(flows.size()));
        for (std::size_t i = 0; i < flows.size(); ++i)
            for (std::size_t j = i + 1; j < flows.size(); ++j)
                if (compatible(flows[i], flows[j])) {
                    neighbours_[i].set(j);
                    neighbours_[j].set(i);
                }
    }

    std::vector<Channel> run() {
        FlowSet all(flows_.size());
        for (std::size_t i = 0; i < flows_.size(); ++i)
            all.set(i);
        std::vector<std::size_t> clique;
        expand(clique, all, FlowSet(flows_.size()));
        std::sort(result_.begin(), result_.end(), [](const Channel& a, const Channel& b) {
            return std::lexicographical_compare(a.flows.begin(), a.flows.end(), b.flows.begin(), b.flows.end(),
                                                flow_less);
        });
        return std::move(result_);
    }

private:
    void expand(std::vector<std::size_t>& clique, FlowSet p, FlowSet x) {
        if (p.empty()) {
            if (x.empty()) emit(clique);
            return;
        }
        // Pivot: the vertex of P ∪ X with most neighbours in P; only its non-neighbours need branching.
        std::size_t pivot = 0;
        std::size_t best = 0;
        bool first = true;
        (p | x).for_each([&](std::size_t u) {
            const std::size_t n = (p & neighbours_[u]).count();
            if (first || n > best) {
                pivot = u;
                best = n;
                first = false;
            }
        });
        std::vector<std::size_t> branch;
        p.without(neighbours_[pivot]).for_each([&](std::size_t v) { branch.push_back(v); });
        for (std::size_t v : branch) {
            clique.push_back(v);
            expand(clique, p & neighbours_[v], x & neighbours_[v]);
            clique.pop_back();
            p.reset(v);
            x.set(v);
        }
    }

    void emit(const std::vector<std::size_t>& clique) {
        if (result_.size() >= limit_) {
            throw DataError(fmt::format("more than {} maximal channels: too many to enumerate exactly", limit_));
        }
        Channel c;
        for (std::size_t i : clique)
            c.flows.push_back(flows_[i]);
        std::sort(c.flows.begin(), c.flows.end(), flow_less);
        result_.push_back(std::move(c));
    }

    std::span<const Flow> flows_;
    std::size_t limit_;
    std::vector<FlowSet> neighbours_;
    std::vector<Channel> result_;
};

}  // namespace

bool flow_less(const Flow& a, const Flow& b) {
    return std::tie(a.src, a.dst, a.kind, a.via) < std::tie(b.src, b.dst, b.kind, b.via);
}

std::vector<Flow> candidate_flows(const topo::Router& router, std::span<const topo::PathKind> kinds) {
    const auto& t = router.topology();
    const auto gpus = t.devices_of(topo::DeviceKind::gpu);
    std::vector<Flow> flows;
    for (topo::DeviceId s : gpus) {
        for (topo::DeviceId d : gpus) {
            if (s == d) continue;
            for (auto& path : router.alternatives(s, d)) {
                if (!kinds.empty() && std::find(kinds.begin(), kinds.end(), path.kind) == kinds.end()) continue;
                std::sort(path.edges.begin(), path.edges.end());
                flows.push_back(Flow{s, d, path.kind, std::move(path.via), std::move(path.edges), path.bottleneck});
            }
        }
    }
    return flows;
}

bool compatible(const Flow& a, const Flow& b) {
    if (a.src == b.src || a.dst == b.dst) return false;
    // Edges are kept sorted, so a merge walk finds a shared directed edge.
    auto i = a.edges.begin();
    auto j = b.edges.begin();
    while (i != a.edges.end() && j != b.edges.end()) {
        if (*i == *j) return false;
        if (*i < *j) {
            ++i;
        } else {
            ++j;
        }
    }
    return true;
}

std::optional<std::string> contention(const topo::Topology& t, const Channel& channel) {
    for (std::size_t i = 0; i < channel.flows.size(); ++i) {
        for (std::size_t j = i + 1; j < channel.flows.size(); ++j) {
            const Flow& a = channel.flows[i];
            const Flow& b = channel.flows[j];
            if (compatible(a, b)) continue;
            const auto pair = [&](const Flow& f) { return fmt::format("{}->{}", t.label(f.src), t.label(f.dst)); };
            if (a.src == b.src) return fmt::format("{} sends twice ({} and {})", t.label(a.src), pair(a), pair(b));
            if (a.dst == b.dst) return fmt::format("{} receives twice ({} and {})", t.label(a.dst), pair(a), pair(b));
            for (topo::EdgeId e : a.edges) {
                if (std::find(b.edges.begin(), b.edges.end(), e) != b.edges.end()) {
                    const topo::Edge edge = t.edge(e);
                    return fmt::format("{} and {} share the edge {}->{}", pair(a), pair(b), t.label(edge.from),
                                       t.label(edge.to));
                }
            }
        }
    }
    return std::nullopt;
}

bool is_maximal(const Channel& channel, std::span<const Flow> candidates) {
    return std::none_of(candidates.begin(), candidates.end(), [&](const Flow& f) {
        if (std::find(channel.flows.begin(), channel.flows.end(), f) != channel.flows.end()) return false;
        return std::all_of(channel.flows.begin(), channel.flows.end(), [&](const Flow& g) { return compatible(f, g); });
    });
}

std::vector<Channel> enumerate_maximal(std::span<const Flow> candidates, std::size_t limit) {
    return Enumerator(candidates, limit).run();
}

}  // namespace gpuops::alltoall
