// The channel catalog: domain decomposition, orbit search per domain class, port patterns, composition.
#include "gpuops/alltoall/catalog.hpp"

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

namespace gpuops::alltoall {

using namespace catalog_detail;

namespace {

/// A part of the topology before classes are known: its devices and the links that leave it.
struct Part {
    std::string name;
    std::vector<DeviceId> devices;  // global ids, ascending
    std::vector<LinkId> ports;      // global links with exactly one end inside
};

struct LocalBuild {
    std::unique_ptr<Topology> local;
    std::vector<DeviceId> global;    // per local device (ports: the inside end of their link)
    std::vector<DeviceId> ports;     // local port devices, in the part's port order
    std::vector<LinkId> port_links;  // per port: the global link
};

LocalBuild build_local(const Topology& t, Part part) {
    // Only what traffic can touch: GPUs, NICs, memories, the port ends, and everything above them. A disk or
    // an idle bridge would otherwise tell two alike sockets or nodes apart.
    std::set<DeviceId> keep;
    const auto mark = [&](DeviceId d) {
        for (; d != topo::no_device && keep.insert(d).second; d = t.devices[d].parent) {
        }
    };
    for (DeviceId d : part.devices) {
        const auto kind = t.devices[d].kind;
        if (kind == DeviceKind::gpu || kind == DeviceKind::nic || kind == DeviceKind::cpu_memory ||
            kind == DeviceKind::network_switch)
            mark(d);
    }
    for (LinkId l : part.ports) {
        const auto& link = t.links[l];
        mark(std::binary_search(part.devices.begin(), part.devices.end(), link.a) ? link.a : link.b);
    }
    std::erase_if(part.devices, [&](DeviceId d) { return !keep.contains(d); });
    LocalBuild b;
    b.local = std::make_unique<Topology>();
    Topology& l = *b.local;
    l.source = {"part", part.name};
    // A part inside one node becomes a one-node topology; a part spanning nodes (the exact method on a
    // cluster) keeps its nodes and fabric.
    const int node = t.devices[part.devices.front()].node;
    const bool one_node = std::all_of(part.devices.begin(), part.devices.end(), [&](DeviceId d) {
        return t.devices[d].node == node || t.devices[d].kind == DeviceKind::network_switch;
    });
    if (one_node) {
        l.nodes.push_back(
            topo::Node{t.nodes.empty() ? std::string() : t.nodes[static_cast<std::size_t>(node)].hostname});
    } else {
        l.nodes = t.nodes;
        l.fabric = t.fabric;
    }
    std::unordered_map<DeviceId, DeviceId> local_of;
    for (DeviceId g : part.devices)
        local_of.emplace(g, static_cast<DeviceId>(local_of.size()));
    for (DeviceId g : part.devices) {
        topo::Device d = t.devices[g];
        if (one_node) d.node = 0;
        const auto parent = local_of.find(d.parent);
        d.parent = parent == local_of.end() ? topo::no_device : parent->second;
        l.add_device(std::move(d));
        b.global.push_back(g);
    }
    for (const auto& link : t.links) {
        const auto a = local_of.find(link.a);
        const auto bb = local_of.find(link.b);
        if (a == local_of.end() || bb == local_of.end()) continue;
        topo::Link copy = link;
        copy.a = a->second;
        copy.b = bb->second;
        l.add_link(std::move(copy));
    }
    for (std::size_t k = 0; k < part.ports.size(); ++k) {
        const auto& link = t.links[part.ports[k]];
        const DeviceId inside = local_of.contains(link.a) ? link.a : link.b;
        topo::Device port;
        port.kind = DeviceKind::network_switch;
        port.node = 0;
        port.name = fmt::format("port{}", k);
        port.model = "port";
        port.parent = local_of.at(inside);
        const DeviceId id = l.add_device(std::move(port));
        topo::Link copy = link;
        copy.a = id;
        copy.b = local_of.at(inside);
        l.add_link(std::move(copy));
        b.global.push_back(inside);
        b.ports.push_back(id);
        b.port_links.push_back(part.ports[k]);
    }
    return b;
}

/// Candidate flows of a local topology: between its GPUs (every path kind), and from each GPU to each port
/// and back (the halves of traffic that leaves or enters the part).
std::vector<Flow> local_flows(const topo::Router& router, const std::vector<DeviceId>& ports) {
    auto flows = candidate_flows(router);
    const auto gpus = router.topology().devices_of(DeviceKind::gpu);
    for (DeviceId p : ports) {
        for (DeviceId g : gpus) {
            for (const auto& [s, d] : {std::pair{g, p}, std::pair{p, g}}) {
                auto path = router.path_through(PathKind::direct, s, d, {});
                std::sort(path.edges.begin(), path.edges.end());
                flows.push_back(Flow{s, d, PathKind::direct, {}, std::move(path.edges), path.bottleneck});
            }
        }
    }
    return flows;
}

double derangements_log10(std::size_t n) {
    // D(n) = (n-1)(D(n-1) + D(n-2)); beyond 20 the ratio to n!/e is 1 to double precision.
    if (n == 0) return 0;
    if (n == 1) return -std::numeric_limits<double>::infinity();
    if (n <= 20) {
        double a = 1;  // D(0)
        double b = 0;  // D(1)
        for (std::size_t k = 2; k <= n; ++k) {
            const double c = static_cast<double>(k - 1) * (a + b);
            a = b;
            b = c;
        }
        return std::log10(b);
    }
    return std::lgamma(static_cast<double>(n) + 1) / std::log(10.0) - std::log10(std::exp(1.0));
}

void check_catalogable(const Topology& t) {
    const auto gpus = t.devices_of(DeviceKind::gpu);
    if (gpus.empty()) throw DataError("the topology has no GPUs: there are no channels to catalog");
    if (gpus.size() < 2) throw DataError("the topology has one GPU: channels need at least two");
    for (const auto& l : t.links) {
        if (!(l.bandwidth > 0) || !std::isfinite(l.bandwidth)) {
            throw DataError(
                fmt::format("the link {} <-> {} has no bandwidth ({} bytes/s): every link must carry traffic",
                            quote(t.label(l.a)), quote(t.label(l.b)), l.bandwidth));
        }
    }
    // Every GPU must reach every other over the links (undirected).
    std::vector<std::vector<DeviceId>> adjacent(t.devices.size());
    for (const auto& l : t.links) {
        adjacent[l.a].push_back(l.b);
        adjacent[l.b].push_back(l.a);
    }
    std::vector<bool> seen(t.devices.size(), false);
    std::deque<DeviceId> queue{gpus.front()};
    seen[gpus.front()] = true;
    while (!queue.empty()) {
        const DeviceId d = queue.front();
        queue.pop_front();
        for (DeviceId n : adjacent[d])
            if (!seen[n]) {
                seen[n] = true;
                queue.push_back(n);
            }
    }
    for (DeviceId g : gpus) {
        if (!seen[g]) {
            throw DataError(fmt::format(
                "the topology is disconnected: no link path joins {} and {}{}", quote(t.label(gpus.front())),
                quote(t.label(g)), t.nodes.size() > 1 && !t.fabric ? " (nodes without a fabric: use --fabric)" : ""));
        }
    }
}

/// The parts of a hierarchical catalog: nodes of a cluster, or sockets of a single node.
std::vector<Part> split(const Topology& t) {
    std::vector<Part> parts;
    if (t.nodes.size() > 1) {
        const auto by_node = t.devices_by_node();
        for (std::size_t n = 0; n < t.nodes.size(); ++n) {
            Part p;
            p.name = t.nodes[n].hostname.empty() ? fmt::format("node{}", n) : t.nodes[n].hostname;
            for (DeviceId d : by_node[n])
                if (t.devices[d].kind != DeviceKind::network_switch) p.devices.push_back(d);
            if (p.devices.empty()) continue;
            std::sort(p.devices.begin(), p.devices.end());
            for (const auto& l : t.links) {
                if (l.kind != LinkKind::network) continue;
                const bool a_in = std::binary_search(p.devices.begin(), p.devices.end(), l.a);
                const bool b_in = std::binary_search(p.devices.begin(), p.devices.end(), l.b);
                if (a_in != b_in) p.ports.push_back(l.id);
            }
            parts.push_back(std::move(p));
        }
        return parts;
    }
    const auto sockets = t.devices_of(DeviceKind::socket);
    if (sockets.size() < 2) {
        throw DataError("a single-socket node has no parts to catalog separately: use the exact method");
    }
    std::vector<DeviceId> root(t.devices.size(), topo::no_device);
    for (const auto& d : t.devices) {
        DeviceId r = d.id;
        while (t.devices[r].parent != topo::no_device)
            r = t.devices[r].parent;
        root[d.id] = r;
    }
    for (DeviceId s : sockets) {
        Part p;
        p.name = t.label(s);
        for (const auto& d : t.devices)
            if (root[d.id] == s) p.devices.push_back(d.id);
        for (const auto& l : t.links)
            if (l.kind == LinkKind::socket_interconnect && (l.a == s || l.b == s)) p.ports.push_back(l.id);
        if (p.ports.empty()) throw DataError(fmt::format("{} has no socket interconnect", quote(p.name)));
        parts.push_back(std::move(p));
    }
    return parts;
}

/// Canonical key of a local topology: colour names and the nauty certificate.
std::pair<std::string, topo::GraphSymmetry> isomorphism_key(const Topology& local) {
    const auto graph = topo::coloured_graph(local);
    auto g = topo::analyse(graph, true);
    std::set<std::string> names(graph.colour.begin(), graph.colour.end());
    std::string key;
    for (const auto& n : names)
        key += n + "\n";
    for (int v : g.certificate)
        key += fmt::format("{},", v);
    return {std::move(key), std::move(g)};
}

}  // namespace

std::string_view to_string(CatalogMethod method) {
    switch (method) {
        case CatalogMethod::automatic: return "auto";
        case CatalogMethod::exact: return "exact";
        case CatalogMethod::hierarchical: return "hierarchical";
    }
    return "?";
}

std::string topology_fingerprint(const Topology& t) {
    // FNV-1a over what routing and contention depend on.
    std::uint64_t h = 0xcbf29ce484222325ULL;
    const auto feed = [&](std::string_view s) {
        for (unsigned char c : s) {
            h ^= c;
            h *= 0x100000001b3ULL;
        }
        h ^= 0xff;
        h *= 0x100000001b3ULL;
    };
    for (const auto& d : t.devices)
        feed(fmt::format("{}|{}|{}|{}|{}", to_string(d.kind), d.node, d.name, d.parent, d.rdma));
    for (const auto& l : t.links)
        feed(fmt::format("{}|{}|{}|{:.0f}|{:.6f}", to_string(l.kind), l.a, l.b, l.bandwidth, l.latency_us));
    if (t.fabric) feed(t.fabric->kind);
    return fmt::format("{:016x}", h);
}

void Catalog::finish_class(DomainClass& c) const {
    // Edge classes: orbits of the directed edges flows use, under the channel symmetry.
    const Topology& l = *c.local;
    std::map<std::pair<DeviceId, DeviceId>, EdgeId> edge_between;
    for (const auto& link : l.links) {
        edge_between.emplace(std::pair{link.a, link.b}, Topology::up_edge(link.id));
        edge_between.emplace(std::pair{link.b, link.a}, Topology::down_edge(link.id));
    }
    std::set<EdgeId> used;
    for (const auto& f : c.space->flows())
        used.insert(f.edges.begin(), f.edges.end());
    std::set<EdgeId> done;
    for (EdgeId e : used) {
        if (done.contains(e)) continue;
        EdgeClass ec;
        std::deque<EdgeId> queue{e};
        done.insert(e);
        while (!queue.empty()) {
            const EdgeId x = queue.front();
            queue.pop_front();
            ec.edges.push_back(x);
            const auto edge = l.edge(x);
            for (const auto& g : c.space->symmetry().generators) {
                const auto it = edge_between.find({g[edge.from], g[edge.to]});
                if (it != edge_between.end() && done.insert(it->second).second) queue.push_back(it->second);
            }
        }
        std::sort(ec.edges.begin(), ec.edges.end());
        ec.capacity = l.edge(ec.edges.front()).bandwidth;
        c.edge_classes.push_back(std::move(ec));
    }
}

Catalog Catalog::decompose(const Topology& topology, CatalogMethod method, std::size_t exact_gpu_limit) {
    check_catalogable(topology);
    Catalog cat;
    cat.topology_ = std::make_shared<const Topology>(topology);
    const Topology& t = *cat.topology_;
    cat.router_ = std::make_unique<topo::Router>(t);
    cat.fingerprint_ = topology_fingerprint(t);

    if (method == CatalogMethod::automatic) {
        const bool cluster = t.nodes.size() > 1;
        const bool big =
            t.devices_of(DeviceKind::gpu).size() > exact_gpu_limit && t.devices_of(DeviceKind::socket).size() > 1;
        method = cluster || big ? CatalogMethod::hierarchical : CatalogMethod::exact;
    }
    cat.method_ = method;

    std::vector<Part> parts;
    if (method == CatalogMethod::exact) {
        Part whole;
        whole.name = t.nodes.size() == 1 && !t.nodes[0].hostname.empty() ? t.nodes[0].hostname : "node";
        for (const auto& d : t.devices)
            whole.devices.push_back(d.id);
        parts.push_back(std::move(whole));
    } else {
        if (t.nodes.size() > 1 && !t.fabric) throw DataError("the nodes are joined by no fabric (use --fabric)");
        parts = split(t);
    }

    // Classes of isomorphic parts, matched device by device through nauty's canonical labelling.
    std::map<std::string, std::size_t> class_of_key;
    std::vector<topo::GraphSymmetry> class_labelling;
    for (const auto& part : parts) {
        LocalBuild lb = build_local(t, part);
        auto [key, g] = isomorphism_key(*lb.local);
        Domain dom;
        dom.name = part.name;
        const auto found = class_of_key.find(key);
        if (found == class_of_key.end()) {
            DomainClass c;
            c.router = std::make_unique<topo::Router>(*lb.local);
            c.ports = lb.ports;
            c.local = std::move(lb.local);
            dom.domain_class = cat.classes_.size();
            dom.global = lb.global;
            dom.port_links = lb.port_links;
            class_of_key.emplace(std::move(key), cat.classes_.size());
            class_labelling.push_back(std::move(g));
            cat.classes_.push_back(std::move(c));
        } else {
            dom.domain_class = found->second;
            const auto& rep = class_labelling[found->second];
            const auto& c = cat.classes_[found->second];
            const std::size_t devices = c.local->devices.size();
            dom.global.assign(devices, topo::no_device);
            std::vector<DeviceId> member_of_rep(devices, topo::no_device);
            for (std::size_t i = 0; i < rep.labelling.size(); ++i) {
                const auto rv = static_cast<std::size_t>(rep.labelling[i]);
                const auto mv = static_cast<std::size_t>(g.labelling[i]);
                if (rv < devices) member_of_rep[rv] = static_cast<DeviceId>(mv);
            }
            for (std::size_t d = 0; d < devices; ++d)
                dom.global[d] = lb.global[member_of_rep[d]];
            for (DeviceId p : c.ports) {
                const auto mine = member_of_rep[p];
                const auto k =
                    static_cast<std::size_t>(std::find(lb.ports.begin(), lb.ports.end(), mine) - lb.ports.begin());
                dom.port_links.push_back(lb.port_links.at(k));
            }
        }
        cat.classes_[dom.domain_class].members.push_back(cat.domains_.size());
        cat.domains_.push_back(std::move(dom));
    }

    for (auto& c : cat.classes_) {
        c.space = std::make_unique<ChannelSpace>(*c.router, local_flows(*c.router, c.ports));
        cat.finish_class(c);
    }
    if (method == CatalogMethod::hierarchical) {
        PortPattern p;
        if (t.nodes.size() > 1) {
            p.kind = "rail-aligned";
            p.rails = cat.classes_.front().ports.size();
            for (const auto& c : cat.classes_) {
                if (c.ports.size() != p.rails) {
                    throw DataError("the nodes have different numbers of fabric ports: a rail-aligned pattern "
                                    "needs one NIC per rail in every node");
                }
            }
            if (p.rails == 0) throw DataError("the nodes have no NIC on the fabric");
            p.count_log10 = static_cast<double>(p.rails) * derangements_log10(cat.domains_.size());
        } else {
            p.kind = "socket-links";
            p.rails = 0;
            p.count_log10 = 0;
        }
        p.count = round_if_exact(from_log10(p.count_log10));
        cat.pattern_ = p;
    }
    return cat;
}

Catalog Catalog::build(const Topology& topology, const CatalogOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    Catalog cat = decompose(topology, options.method, options.exact_gpu_limit);
    const auto method = cat.method_;
    for (auto& c : cat.classes_) {
        const auto index = edge_class_index(c);
        OrbitSearch search = options.search;
        if (method == CatalogMethod::hierarchical) search.saturate = c.ports;
        for (auto& orbit : maximal_orbits(*c.space, search)) {
            if (method == CatalogMethod::hierarchical && !saturates_ports(c, orbit.representative)) continue;
            CatalogChannel ch;
            ch.shape = shape_of(c, orbit.representative, index);
            ch.rate = channel_rate(c, orbit.representative);
            ch.orbit_size = orbit.size;
            ch.flows = std::move(orbit.representative);
            c.raw_channels += ch.orbit_size;
            c.channels.push_back(std::move(ch));
        }
        if (c.channels.empty()) {
            throw DataError(fmt::format("no channel of {} uses all of its {} ports in both directions: the part "
                                        "cannot be joined to the others",
                                        quote(cat.domains_[c.members.front()].name), c.ports.size()));
        }
        std::sort(c.channels.begin(), c.channels.end(), [](const CatalogChannel& a, const CatalogChannel& b) {
            return std::tie(b.orbit_size, a.flows) < std::tie(a.orbit_size, b.flows);
        });
    }

    cat.stats_.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    cat.compute_stats();
    return cat;
}

void Catalog::compute_stats() {
    stats_.orbits = 0;
    for (const auto& c : classes_)
        stats_.orbits += c.channels.size();
    if (method_ == CatalogMethod::exact) {
        stats_.raw_channels = classes_.front().raw_channels;
        stats_.raw_channels_log10 = std::log10(stats_.raw_channels);
        stats_.raw_exact = stats_.raw_channels < exact_limit;
    } else {
        double log10 = pattern_ ? pattern_->count_log10 : 0;
        for (const auto& d : domains_)
            log10 += std::log10(classes_[d.domain_class].raw_channels);
        stats_.raw_channels_log10 = log10;
        stats_.raw_channels = round_if_exact(from_log10(log10));
        stats_.raw_exact = false;
    }
    stats_.compression_log10 = stats_.raw_channels_log10 - std::log10(static_cast<double>(stats_.orbits));
    stats_.compression = from_log10(stats_.compression_log10);
}

std::vector<FlowIds> Catalog::instances(std::size_t cls, std::size_t index, std::size_t limit) const {
    const auto& c = classes_.at(cls);
    return expand_orbit(*c.space, c.channels.at(index).flows, limit);
}

Channel Catalog::compose(const std::vector<FlowIds>& per_domain,
                         const std::vector<std::vector<std::size_t>>& rail_peers) const {
    if (per_domain.size() != domains_.size()) throw InternalError("compose: one channel per domain");
    const Topology& t = *topology_;
    Channel out;
    // Egress halves by global port link and domain; ingress halves likewise.
    std::map<std::pair<LinkId, std::size_t>, DeviceId> egress;   // (port link, domain) -> sending GPU
    std::map<std::pair<LinkId, std::size_t>, DeviceId> ingress;  // (port link, domain) -> receiving GPU
    for (std::size_t i = 0; i < domains_.size(); ++i) {
        const Domain& d = domains_[i];
        const DomainClass& c = classes_[d.domain_class];
        for (FlowId id : per_domain[i]) {
            const Flow& f = c.space->flows()[id];
            const auto ps = std::find(c.ports.begin(), c.ports.end(), f.src);
            const auto pd = std::find(c.ports.begin(), c.ports.end(), f.dst);
            if (pd != c.ports.end()) {
                egress[{d.port_links[static_cast<std::size_t>(pd - c.ports.begin())], i}] = d.global[f.src];
            } else if (ps != c.ports.end()) {
                ingress[{d.port_links[static_cast<std::size_t>(ps - c.ports.begin())], i}] = d.global[f.dst];
            } else {
                std::vector<DeviceId> via;
                for (DeviceId v : f.via)
                    via.push_back(d.global[v]);
                auto path = router_->path_through(f.kind, d.global[f.src], d.global[f.dst], via);
                std::sort(path.edges.begin(), path.edges.end());
                out.flows.push_back(
                    Flow{path.src, path.dst, path.kind, std::move(path.via), std::move(path.edges), path.bottleneck});
            }
        }
    }
    const auto inside_end = [&](LinkId l, std::size_t domain) {
        const auto& link = t.links[l];
        const auto& g = domains_[domain].global;
        return std::find(g.begin(), g.end(), link.a) != g.end() ? link.a : link.b;
    };
    for (const auto& [key, src] : egress) {
        const auto [link, i] = key;
        std::optional<std::pair<LinkId, std::size_t>> peer;
        if (pattern_ && pattern_->kind == "rail-aligned") {
            const Domain& d = domains_[i];
            const auto k = static_cast<std::size_t>(std::find(d.port_links.begin(), d.port_links.end(), link) -
                                                    d.port_links.begin());
            const std::size_t j = rail_peers.at(k).at(i);
            peer = std::pair{domains_[j].port_links.at(k), j};
        } else {
            for (std::size_t j = 0; j < domains_.size(); ++j)
                if (j != i && std::find(domains_[j].port_links.begin(), domains_[j].port_links.end(), link) !=
                                  domains_[j].port_links.end())
                    peer = std::pair{link, j};
        }
        const auto dst = peer ? ingress.find(*peer) : ingress.end();
        if (dst == ingress.end()) {
            throw DataError(fmt::format("{} sends out of {} but nothing receives at the other end", quote(t.label(src)),
                                        quote(domains_[i].name)));
        }
        std::vector<DeviceId> via;
        if (pattern_ && pattern_->kind == "rail-aligned")
            via = {inside_end(link, i), inside_end(peer->first, peer->second)};
        // Through the NIC the router would pick it is the direct path; through another, the rail choice.
        const auto kind =
            via.empty() || router_->nearest_nic(src) == via.front() ? PathKind::direct : PathKind::alternate_nic;
        auto path = router_->path_through(kind, src, dst->second, via);
        std::sort(path.edges.begin(), path.edges.end());
        out.flows.push_back(
            Flow{path.src, path.dst, path.kind, std::move(path.via), std::move(path.edges), path.bottleneck});
    }
    std::sort(out.flows.begin(), out.flows.end(), flow_less);
    return out;
}

}  // namespace gpuops::alltoall
