// Channel orbits: the flow space closed under the automorphisms, nauty certificates of decorated topologies,
// and the isomorph-free search for maximal channels.
#include "gpuops/alltoall/orbits.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <set>
#include <unordered_set>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"

namespace gpuops::alltoall {
namespace {

using topo::DeviceId;
using topo::PathKind;

constexpr std::size_t max_space_devices = (std::size_t{1} << 14) - 2;

/// A 128-bit digest of a certificate: two independent 64-bit mixes. The search keeps digests, not the
/// certificates (a few hundred ints each); a collision among even 10^9 classes has odds below 10^-20.
struct Digest {
    std::uint64_t a = 0;
    std::uint64_t b = 0;
    bool operator==(const Digest&) const = default;
};

struct DigestHash {
    std::size_t operator()(const Digest& d) const noexcept { return static_cast<std::size_t>(d.a ^ (d.b >> 1)); }
};

std::uint64_t mix(std::uint64_t x) {
    // splitmix64's finalizer.
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

Digest digest(const std::vector<int>& certificate) {
    Digest d{0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL};
    for (int v : certificate) {
        const auto x = static_cast<std::uint64_t>(static_cast<std::uint32_t>(v));
        d.a = mix(d.a ^ x);
        d.b = mix(d.b + (x * 0xff51afd7ed558ccdULL) + 0x632be59bd9b4e019ULL);
    }
    return d;
}

double ratio(double m1, int e1, double m2, int e2) {
    const double r = (m1 / m2) * std::pow(10.0, e1 - e2);
    return r < 9e15 ? std::round(r) : r;
}

}  // namespace

ChannelSpace::ChannelSpace(const topo::Router& router, std::vector<Flow> flows)
    : router_(router), flows_(std::move(flows)) {
    const auto& t = router_.topology();
    if (t.devices_of(topo::DeviceKind::gpu).empty()) throw DataError("the topology has no GPUs: no channels to find");
    if (t.devices.size() > max_space_devices) {
        throw DataError(fmt::format("{} devices are too many for one channel space (at most {}); catalog clusters "
                                    "node by node",
                                    t.devices.size(), max_space_devices));
    }
    find_symmetry();
    close_under_symmetry();

    compatible_.assign(flows_.size(), FlowSet(flows_.size()));
    for (std::size_t i = 0; i < flows_.size(); ++i)
        for (std::size_t j = i + 1; j < flows_.size(); ++j)
            if (alltoall::compatible(flows_[i], flows_[j])) {
                compatible_[i].set(j);
                compatible_[j].set(i);
            }
}

void ChannelSpace::find_symmetry() {
    // The relevant part: every link some flow crosses, its two devices, and the devices flows are pinned to.
    const auto& t = topology();
    std::vector<bool> device_used(t.devices.size(), false);
    std::vector<bool> link_used(t.links.size(), false);
    for (const auto& f : flows_) {
        device_used[f.src] = device_used[f.dst] = true;
        for (auto v : f.via)
            device_used[v] = true;
        for (auto e : f.edges) {
            const auto& l = t.links[e / 2];
            link_used[l.id] = device_used[l.a] = device_used[l.b] = true;
        }
    }
    for (auto g : t.devices_of(topo::DeviceKind::gpu))
        device_used[g] = true;
    const auto full = topo::coloured_graph(t);
    topo::ColouredGraph graph;
    vertex_of_.assign(t.devices.size(), -1);
    for (const auto& d : t.devices) {
        if (!device_used[d.id]) continue;
        vertex_of_[d.id] = graph.add_vertex(full.colour[d.id]);
        devices_.push_back(d.id);
    }
    std::vector<topo::LinkId> links;
    for (const auto& l : t.links) {
        if (!link_used[l.id]) continue;
        const int v = graph.add_vertex(full.colour[t.devices.size() + l.id]);
        graph.add_edge(vertex_of_[l.a], v);
        graph.add_edge(vertex_of_[l.b], v);
        links.push_back(l.id);
    }
    const auto g = topo::analyse(graph, false);
    symmetry_.order_mantissa = g.order_mantissa;
    symmetry_.order_exponent = g.order_exponent;
    symmetry_.orbit_of.resize(t.devices.size());
    for (const auto& d : t.devices)
        symmetry_.orbit_of[d.id] =
            vertex_of_[d.id] < 0
                ? d.id
                : devices_[static_cast<std::size_t>(g.orbits[static_cast<std::size_t>(vertex_of_[d.id])])];
    for (const auto& perm : g.generators) {
        std::vector<DeviceId> on_devices(t.devices.size());
        for (std::size_t d = 0; d < on_devices.size(); ++d)
            on_devices[d] = static_cast<DeviceId>(d);
        for (std::size_t i = 0; i < devices_.size(); ++i)
            on_devices[devices_[i]] = devices_[static_cast<std::size_t>(perm[i])];
        std::vector<topo::LinkId> on_links(t.links.size());
        for (std::size_t l = 0; l < on_links.size(); ++l)
            on_links[l] = static_cast<topo::LinkId>(l);
        for (std::size_t i = 0; i < links.size(); ++i)
            on_links[links[i]] = links[static_cast<std::size_t>(perm[devices_.size() + i]) - devices_.size()];
        symmetry_.generators.push_back(std::move(on_devices));
        link_generators_.push_back(std::move(on_links));
    }
    base_colour_ = topo::colour_ranks(graph);
    base_adjacency_ = graph.adjacency;
    flow_colour_base_ = base_colour_.empty() ? 0 : *std::max_element(base_colour_.begin(), base_colour_.end()) + 1;
}

std::uint64_t ChannelSpace::key(DeviceId src, DeviceId dst, PathKind kind, std::span<const DeviceId> via) const {
    const auto at = [&](std::size_t i) -> std::uint64_t { return i < via.size() ? via[i] + 1 : 0; };
    return static_cast<std::uint64_t>(src) | (static_cast<std::uint64_t>(dst) << 14) |
           (static_cast<std::uint64_t>(kind) << 28) | (at(0) << 32) | (at(1) << 46) |
           (static_cast<std::uint64_t>(via.size()) << 60);
}

void ChannelSpace::close_under_symmetry() {
    std::sort(flows_.begin(), flows_.end(), flow_less);
    for (std::size_t i = 0; i < flows_.size(); ++i)
        index_.emplace(key(flows_[i].src, flows_[i].dst, flows_[i].kind, flows_[i].via), static_cast<FlowId>(i));
    // Breadth-first over images: every new flow is mapped by every generator in turn. The image path is the
    // path's edges mapped link by link (an automorphism keeps each edge's direction by its ends).
    const auto& t = topology();
    for (std::size_t i = 0; i < flows_.size(); ++i) {
        for (std::size_t k = 0; k < symmetry_.generators.size(); ++k) {
            const auto& g = symmetry_.generators[k];
            const Flow& f = flows_[i];
            std::vector<DeviceId> via;
            for (DeviceId v : f.via)
                via.push_back(g[v]);
            const auto image_key = key(g[f.src], g[f.dst], f.kind, via);
            if (index_.contains(image_key)) continue;
            Flow image{g[f.src], g[f.dst], f.kind, via, {}, f.rate};
            for (auto e : f.edges) {
                const auto edge = t.edge(e);
                const auto& l = t.links[link_generators_[k][e / 2]];
                image.edges.push_back(l.a == g[edge.from] ? topo::Topology::up_edge(l.id)
                                                          : topo::Topology::down_edge(l.id));
            }
            std::sort(image.edges.begin(), image.edges.end());
            flows_.push_back(std::move(image));
            index_.emplace(image_key, static_cast<FlowId>(flows_.size() - 1));
        }
    }
    std::sort(flows_.begin(), flows_.end(), flow_less);
    index_.clear();
    for (std::size_t i = 0; i < flows_.size(); ++i)
        index_.emplace(key(flows_[i].src, flows_[i].dst, flows_[i].kind, flows_[i].via), static_cast<FlowId>(i));
}

FlowSet ChannelSpace::all_flows() const {
    FlowSet all(flows_.size());
    for (std::size_t i = 0; i < flows_.size(); ++i)
        all.set(i);
    return all;
}

std::optional<FlowId> ChannelSpace::find(DeviceId src, DeviceId dst, PathKind kind,
                                         std::span<const DeviceId> via) const {
    if (src > max_space_devices || dst > max_space_devices) return std::nullopt;
    if (std::any_of(via.begin(), via.end(), [](DeviceId v) { return v > max_space_devices; })) return std::nullopt;
    const auto it = index_.find(key(src, dst, kind, via));
    if (it == index_.end()) return std::nullopt;
    return it->second;
}

FlowId ChannelSpace::image(const std::vector<DeviceId>& g, FlowId id) const {
    const Flow& f = flows_[id];
    DeviceId via[2] = {0, 0};
    for (std::size_t i = 0; i < f.via.size() && i < 2; ++i)
        via[i] = g[f.via[i]];
    const auto it = index_.find(key(g[f.src], g[f.dst], f.kind, std::span<const DeviceId>(via, f.via.size())));
    if (it == index_.end()) throw InternalError("a flow's image under an automorphism is not a candidate");
    return it->second;
}

ChannelSpace::Canonical ChannelSpace::canonical(std::span<const FlowId> channel) const {
    // The topology graph decorated with one vertex per flow (coloured by path kind), joined to its destination,
    // to its source through a "source" marker, and to each pinning device through a marker for that position.
    std::vector<int> colour = base_colour_;
    auto adjacency = base_adjacency_;
    const auto add = [&](int c) {
        colour.push_back(c);
        adjacency.emplace_back();
        return static_cast<int>(colour.size() - 1);
    };
    const auto join = [&](int a, int b) {
        adjacency[static_cast<std::size_t>(a)].push_back(b);
        adjacency[static_cast<std::size_t>(b)].push_back(a);
    };
    for (FlowId id : channel) {
        const Flow& f = flows_[id];
        const int fv = add(flow_colour_base_ + static_cast<int>(f.kind) * 3 + static_cast<int>(f.via.size()));
        const int source = add(flow_colour_base_ + 12);
        join(fv, source);
        join(source, vertex_of_[f.src]);
        join(fv, vertex_of_[f.dst]);
        for (std::size_t i = 0; i < f.via.size(); ++i) {
            const int marker = add(flow_colour_base_ + 13 + static_cast<int>(i));
            join(fv, marker);
            join(marker, vertex_of_[f.via[i]]);
        }
    }
    auto g = topo::analyse(colour, adjacency, true);
    Canonical c;
    c.certificate = std::move(g.certificate);
    c.stabilizer_mantissa = g.order_mantissa;
    c.stabilizer_exponent = g.order_exponent;
    for (const auto& perm : g.generators) {
        std::vector<DeviceId> on_devices(topology().devices.size());
        for (std::size_t d = 0; d < on_devices.size(); ++d)
            on_devices[d] = static_cast<DeviceId>(d);
        for (std::size_t i = 0; i < devices_.size(); ++i)
            on_devices[devices_[i]] = devices_[static_cast<std::size_t>(perm[i])];
        c.stabilizer.push_back(std::move(on_devices));
    }
    return c;
}

double ChannelSpace::orbit_size(const Canonical& c) const {
    return ratio(symmetry_.order_mantissa, symmetry_.order_exponent, c.stabilizer_mantissa, c.stabilizer_exponent);
}

Channel ChannelSpace::channel(std::span<const FlowId> ids) const {
    Channel c;
    for (FlowId id : ids)
        c.flows.push_back(flows_[id]);
    std::sort(c.flows.begin(), c.flows.end(), flow_less);
    return c;
}

namespace {

class OrbitSearcher {
public:
    OrbitSearcher(const ChannelSpace& space, const OrbitSearch& search) : space_(space), search_(search) {}

    std::vector<ChannelOrbit> run() {
        FlowIds none;
        visit(none, space_.all_flows(), space_.symmetry().generators, 1);
        report();
        return std::move(orbits_);
    }

private:
    void visit(FlowIds& chosen, const FlowSet& addable, const std::vector<std::vector<DeviceId>>& stabilizer,
               double orbit_size) {
        if (addable.empty()) {
            if (std::any_of(search_.saturate.begin(), search_.saturate.end(), [&](DeviceId d) {
                    return std::none_of(chosen.begin(), chosen.end(),
                                        [&](FlowId id) { return space_.flows()[id].src == d; }) ||
                           std::none_of(chosen.begin(), chosen.end(),
                                        [&](FlowId id) { return space_.flows()[id].dst == d; });
                })) {
                return;  // maximal, but a port stays idle
            }
            FlowIds sorted = chosen;
            std::sort(sorted.begin(), sorted.end());
            orbits_.push_back(ChannelOrbit{std::move(sorted), orbit_size});
            if (orbits_.size() > search_.max_orbits) {
                throw DataError(fmt::format("more than {} orbits of maximal channels", search_.max_orbits));
            }
            return;
        }
        // A slot that must be filled (a port's send or receive) narrows the branching to the flows that fill
        // it; when none can, no channel below this one keeps every port busy.
        std::optional<std::pair<DeviceId, bool>> slot;  // (device, sends)
        for (DeviceId d : search_.saturate) {
            for (bool sends : {true, false}) {
                const bool filled = std::any_of(chosen.begin(), chosen.end(), [&](FlowId id) {
                    const Flow& f = space_.flows()[id];
                    return sends ? f.src == d : f.dst == d;
                });
                if (!filled && !slot) slot = std::pair{d, sends};
            }
        }
        const auto fills = [&](std::size_t id) {
            const Flow& f = space_.flows()[id];
            return slot->second ? f.src == slot->first : f.dst == slot->first;
        };
        // One flow per orbit of the stabilizer on the addable flows: the others give isomorphic extensions.
        std::vector<FlowId> representatives;
        FlowSet done(space_.flows().size());
        addable.for_each([&](std::size_t f) {
            if (done.test(f) || (slot && !fills(f))) return;
            representatives.push_back(static_cast<FlowId>(f));
            std::vector<FlowId> queue{static_cast<FlowId>(f)};
            done.set(f);
            while (!queue.empty()) {
                const FlowId x = queue.back();
                queue.pop_back();
                for (const auto& g : stabilizer) {
                    const FlowId y = space_.image(g, x);
                    if (!done.test(y)) {
                        done.set(y);
                        queue.push_back(y);
                    }
                }
            }
        });
        for (FlowId f : representatives) {
            chosen.push_back(f);
            auto c = space_.canonical(chosen);
            if (seen_.insert(digest(c.certificate)).second) {
                if (seen_.size() > search_.max_classes) {
                    throw DataError(fmt::format("more than {} classes of partial channels", search_.max_classes));
                }
                if (seen_.size() % 4096 == 0) report();
                visit(chosen, addable & space_.compatible_with(f), c.stabilizer, space_.orbit_size(c));
            }
            chosen.pop_back();
        }
    }

    void report() const {
        if (search_.progress) search_.progress(seen_.size(), orbits_.size());
    }

    const ChannelSpace& space_;
    const OrbitSearch& search_;
    std::unordered_set<Digest, DigestHash> seen_;
    std::vector<ChannelOrbit> orbits_;
};

}  // namespace

std::vector<ChannelOrbit> maximal_orbits(const ChannelSpace& space, const OrbitSearch& search) {
    return OrbitSearcher(space, search).run();
}

std::vector<FlowIds> expand_orbit(const ChannelSpace& space, std::span<const FlowId> representative,
                                  std::size_t limit) {
    FlowIds start(representative.begin(), representative.end());
    std::sort(start.begin(), start.end());
    std::set<FlowIds> seen{start};
    std::deque<FlowIds> queue{start};
    while (!queue.empty()) {
        const FlowIds c = std::move(queue.front());
        queue.pop_front();
        for (const auto& g : space.symmetry().generators) {
            FlowIds image;
            image.reserve(c.size());
            for (FlowId f : c)
                image.push_back(space.image(g, f));
            std::sort(image.begin(), image.end());
            if (seen.insert(image).second) {
                if (seen.size() > limit) {
                    throw DataError(fmt::format("the orbit has more than {} channels: too many to expand", limit));
                }
                queue.push_back(std::move(image));
            }
        }
    }
    return {seen.begin(), seen.end()};
}

std::vector<FlowIds> all_maximal(const ChannelSpace& space, std::size_t limit) {
    std::vector<FlowIds> out;
    for (const auto& c : enumerate_maximal(space.flows(), limit)) {
        FlowIds ids;
        for (const auto& f : c.flows)
            ids.push_back(*space.find(f.src, f.dst, f.kind, f.via));
        std::sort(ids.begin(), ids.end());
        out.push_back(std::move(ids));
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace gpuops::alltoall
