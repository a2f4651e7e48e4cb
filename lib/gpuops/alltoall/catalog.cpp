// The channel catalog: domain decomposition, orbit search per domain class, port patterns, the
// gpuops.catalog document, and the checker.
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

#include "gpuops/core/error.hpp"
#include "gpuops/core/units.hpp"
#include "gpuops/topo/symmetry.hpp"
#include "gpuops/topo/topology_json.hpp"

namespace gpuops::alltoall {
namespace {

using json_io::Json;
using json_io::View;
using topo::DeviceId;
using topo::DeviceKind;
using topo::EdgeId;
using topo::LinkId;
using topo::LinkKind;
using topo::PathKind;
using topo::Topology;

constexpr double exact_limit = 9007199254740992.0;  // 2^53

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

std::string join_names(const Topology& t, std::span<const DeviceId> ids) {
    std::string out;
    for (DeviceId id : ids) {
        if (!out.empty()) out += ",";
        out += t.label(id);
    }
    return out;
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

Channel Catalog::place(std::size_t domain, std::span<const FlowId> channel) const {
    const Domain& d = domains_.at(domain);
    const DomainClass& c = classes_[d.domain_class];
    Channel out;
    for (FlowId id : channel) {
        const Flow& f = c.space->flows()[id];
        Flow g = f;
        g.src = d.global[f.src];
        g.dst = d.global[f.dst];
        for (auto& v : g.via)
            v = d.global[v];
        g.edges.clear();
        // Local links map to global links by their ends (ports map to the global port link).
        for (EdgeId e : f.edges) {
            const auto edge = c.local->edge(e);
            const auto pf = std::find(c.ports.begin(), c.ports.end(), edge.from);
            const auto pt = std::find(c.ports.begin(), c.ports.end(), edge.to);
            if (pf != c.ports.end() || pt != c.ports.end()) {
                const auto k = static_cast<std::size_t>((pf != c.ports.end() ? pf : pt) - c.ports.begin());
                const auto& link = topology_->links[d.port_links[k]];
                const DeviceId inside = d.global[pf != c.ports.end() ? edge.to : edge.from];
                const bool leaving = pt != c.ports.end();
                const bool a_inside = link.a == inside;
                g.edges.push_back(leaving == a_inside ? Topology::up_edge(link.id) : Topology::down_edge(link.id));
                continue;
            }
            const DeviceId from = d.global[edge.from];
            const DeviceId to = d.global[edge.to];
            bool found = false;
            for (LinkId l : topology_->links_of(from)) {
                const auto& link = topology_->links[l];
                if (link.a == from && link.b == to) {
                    g.edges.push_back(Topology::up_edge(l));
                    found = true;
                    break;
                }
                if (link.b == from && link.a == to) {
                    g.edges.push_back(Topology::down_edge(l));
                    found = true;
                    break;
                }
            }
            if (!found) throw InternalError("a local edge has no global link");
        }
        std::sort(g.edges.begin(), g.edges.end());
        if (std::find(c.ports.begin(), c.ports.end(), f.src) != c.ports.end()) g.src = topo::no_device;
        if (std::find(c.ports.begin(), c.ports.end(), f.dst) != c.ports.end()) g.dst = topo::no_device;
        out.flows.push_back(std::move(g));
    }
    return out;
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

// ---- the document -------------------------------------------------------------------------------------

Json Catalog::to_json(bool with_instances, std::size_t instance_limit) const {
    const Topology& t = *topology_;
    Json doc = json_io::make_header("gpuops.catalog", catalog_schema_version, "vp-catalog");
    doc["topology"] = {{"source", {{"kind", t.source.kind}, {"name", t.source.name}}},
                       {"fingerprint", fingerprint_},
                       {"nodes", t.nodes.size()},
                       {"gpus", t.devices_of(DeviceKind::gpu).size()},
                       {"document", topo::to_json(t, "vp-catalog")}};
    doc["method"] = std::string(to_string(method_));
    doc["stats"] = {{"orbits", stats_.orbits},
                    {"raw_channels", count_json(stats_.raw_channels)},
                    {"raw_channels_log10", std::round(stats_.raw_channels_log10 * 1e6) / 1e6},
                    {"raw_exact", stats_.raw_exact},
                    {"compression", count_json(std::round(stats_.compression * 100) / 100)},
                    {"compression_log10", std::round(stats_.compression_log10 * 1e6) / 1e6},
                    {"build_time_s", std::round(stats_.build_seconds * 1e4) / 1e4}};
    if (pattern_) {
        doc["pattern"] = {{"kind", pattern_->kind},
                          {"rails", pattern_->rails},
                          {"count", count_json(pattern_->count)},
                          {"count_log10", std::round(pattern_->count_log10 * 1e6) / 1e6}};
    } else {
        doc["pattern"] = nullptr;
    }
    Json classes = Json::array();
    std::size_t instances_written = 0;
    for (std::size_t ci = 0; ci < classes_.size(); ++ci) {
        const auto& c = classes_[ci];
        const Topology& l = *c.local;
        Json jc;
        jc["id"] = ci;
        Json domains = Json::array();
        for (std::size_t m : c.members) {
            Json ports = Json::array();
            for (LinkId link : domains_[m].port_links)
                ports.push_back(t.label(t.links[link].a) + "<->" + t.label(t.links[link].b));
            domains.push_back({{"name", domains_[m].name}, {"ports", ports}});
        }
        jc["domains"] = domains;
        jc["symmetry_order"] = c.space->symmetry().order_text();
        Json flows = Json::array();
        for (const auto& f : c.space->flows()) {
            Json via = Json::array();
            for (DeviceId v : f.via)
                via.push_back(l.label(v));
            flows.push_back({{"src", l.label(f.src)},
                             {"dst", l.label(f.dst)},
                             {"path", std::string(topo::to_string(f.kind))},
                             {"via", via},
                             {"rate_gbytes_per_s", gbytes(f.rate)}});
        }
        jc["flows"] = flows;
        Json edge_classes = Json::array();
        for (const auto& ec : c.edge_classes) {
            Json edges = Json::array();
            for (EdgeId e : ec.edges)
                edges.push_back(edge_text(l, e));
            edge_classes.push_back({{"capacity_gbytes_per_s", gbytes(ec.capacity)}, {"edges", edges}});
        }
        jc["edge_classes"] = edge_classes;
        jc["raw_channels"] = count_json(c.raw_channels);
        Json channels = Json::array();
        for (std::size_t k = 0; k < c.channels.size(); ++k) {
            const auto& ch = c.channels[k];
            Json jch = {{"flows", ch.flows},
                        {"orbit_size", count_json(ch.orbit_size)},
                        {"rate_gbytes_per_s", gbytes(ch.rate)},
                        {"shape", ch.shape}};
            if (with_instances) {
                const auto all = instances(ci, k, instance_limit - std::min(instance_limit, instances_written));
                instances_written += all.size();
                jch["instances"] = all;
            }
            channels.push_back(std::move(jch));
        }
        jc["channels"] = std::move(channels);
        classes.push_back(std::move(jc));
    }
    doc["classes"] = std::move(classes);
    return doc;
}

Catalog Catalog::read(const Json& doc, const Topology& topology, std::string_view source_name) {
    try {
        json_io::check_header(doc, "gpuops.catalog", catalog_schema_version);
        const View root(doc);
        const View method_view = root.at("method");
        const auto method_name = method_view.as_string();
        CatalogMethod method = CatalogMethod::exact;
        if (method_name == "hierarchical") {
            method = CatalogMethod::hierarchical;
        } else if (method_name != "exact") {
            throw method_view.error(R"(expected "exact" or "hierarchical")");
        }
        Catalog cat = decompose(topology, method, 0);
        const auto stated = root.at("topology").string_or_null("fingerprint");
        cat.read_fingerprint_ = stated.value_or("");
        const auto classes = root.at("classes").items();
        if (classes.size() != cat.classes_.size()) {
            throw root.at("classes").error(
                fmt::format("{} classes of parts, but this topology has {}", classes.size(), cat.classes_.size()));
        }
        for (std::size_t ci = 0; ci < classes.size(); ++ci) {
            auto& c = cat.classes_[ci];
            const View& jc = classes[ci];
            const auto domains = jc.at("domains").items();
            if (domains.size() != c.members.size()) {
                throw jc.at("domains").error(
                    fmt::format("{} parts in this class, but this topology has {}", domains.size(), c.members.size()));
            }
            for (std::size_t k = 0; k < domains.size(); ++k) {
                const auto name = domains[k].at("name").as_string();
                if (name != cat.domains_[c.members[k]].name) {
                    throw domains[k].at("name").error(fmt::format("expected the part {}, got {}",
                                                                  quote(cat.domains_[c.members[k]].name), quote(name)));
                }
            }
            // Flows resolve by names against the rebuilt space.
            const Topology& l = *c.local;
            std::vector<FlowId> flow_ids;
            for (const View& jf : jc.at("flows").items()) {
                const auto device = [&](const View& v) {
                    const auto name = v.as_string();
                    for (const auto& d : l.devices)
                        if (l.label(d.id) == name) return d.id;
                    throw v.error(fmt::format("no device {} in this part of the topology", quote(name)));
                };
                const DeviceId src = device(jf.at("src"));
                const DeviceId dst = device(jf.at("dst"));
                const View path = jf.at("path");
                std::optional<PathKind> kind;
                for (auto k :
                     {PathKind::direct, PathKind::nic_loopback, PathKind::host_staging, PathKind::alternate_nic})
                    if (topo::to_string(k) == path.as_string()) kind = k;
                if (!kind) throw path.error(fmt::format("unknown path kind {}", quote(path.as_string())));
                std::vector<DeviceId> via;
                for (const View& v : jf.at("via").items())
                    via.push_back(device(v));
                const auto id = c.space->find(src, dst, *kind, via);
                if (!id) throw jf.error("this flow is not a path of the topology");
                flow_ids.push_back(*id);
            }
            c.raw_channels = 0;
            for (const View& jch : jc.at("channels").items()) {
                CatalogChannel ch;
                for (const View& f : jch.at("flows").items()) {
                    const auto k = f.as_int(0, static_cast<std::int64_t>(flow_ids.size()) - 1);
                    ch.flows.push_back(flow_ids[static_cast<std::size_t>(k)]);
                }
                std::sort(ch.flows.begin(), ch.flows.end());
                const View size = jch.at("orbit_size");
                ch.orbit_size = size.as_number();
                if (!(ch.orbit_size >= 1)) throw size.error("expected an orbit size of at least 1");
                ch.rate = jch.at("rate_gbytes_per_s").as_number() * 1e9;
                for (const View& x : jch.at("shape").items())
                    ch.shape.push_back(static_cast<std::uint32_t>(x.as_int(0, 1'000'000)));
                c.raw_channels += ch.orbit_size;
                c.channels.push_back(std::move(ch));
            }
            if (const auto raw = jc.number_or_null("raw_channels")) cat.read_raw_.push_back(*raw);
        }
        cat.stats_.build_seconds = root.at("stats").number_or_null("build_time_s").value_or(0);
        cat.compute_stats();
        return cat;
    } catch (const DataError& e) {
        if (e.where().file.empty()) throw e.in_file(std::string(source_name));
        throw;
    }
}

Catalog Catalog::read(const Json& doc, std::string_view source_name) {
    std::optional<Topology> topology;
    try {
        json_io::check_header(doc, "gpuops.catalog", catalog_schema_version);
        const View document = View(doc).at("topology").at("document");
        try {
            topology = topo::topology_from_json(document.json());
        } catch (const DataError& e) {
            throw e.under_pointer(document.pointer());
        }
    } catch (const DataError& e) {
        if (e.where().file.empty()) throw e.in_file(std::string(source_name));
        throw;
    }
    return read(doc, *topology, source_name);
}

std::string Catalog::summary() const {
    const Topology& t = *topology_;
    std::string out;
    out += fmt::format("catalog of {} ({} GPUs, {} node{}): {} method\n",
                       t.source.name.empty() ? t.source.kind : t.source.name, t.devices_of(DeviceKind::gpu).size(),
                       t.nodes.size(), t.nodes.size() == 1 ? "" : "s", to_string(method_));
    out += fmt::format("  orbits stored       {}\n", stats_.orbits);
    out += fmt::format("  channels represented {}{}\n", count_text(stats_.raw_channels, stats_.raw_channels_log10),
                       stats_.raw_exact ? " (every maximal channel)" : " (compositions of the parts' channels)");
    out += fmt::format("  compression         {}x\n", stats_.compression < 1e6
                                                          ? fmt::format("{:.1f}", stats_.compression)
                                                          : count_text(stats_.compression, stats_.compression_log10));
    if (pattern_) {
        out += fmt::format("  port pattern        {}{}: {} pairings\n", pattern_->kind,
                           pattern_->rails ? fmt::format(" ({} rails)", pattern_->rails) : std::string(),
                           count_text(pattern_->count, pattern_->count_log10));
    }
    out += fmt::format("  build time          {:.3f} s\n", stats_.build_seconds);
    for (std::size_t ci = 0; ci < classes_.size(); ++ci) {
        const auto& c = classes_[ci];
        std::string names;
        for (std::size_t k = 0; k < c.members.size() && k < 4; ++k)
            names += (k ? ", " : "") + domains_[c.members[k]].name;
        if (c.members.size() > 4) names += fmt::format(", ... ({} in all)", c.members.size());
        out += fmt::format("class {}: {}; symmetry {}; {} flows, {} ports, {} edge classes\n", ci, names,
                           c.space->symmetry().order_text(), c.space->flows().size(), c.ports.size(),
                           c.edge_classes.size());
        // Channels by shape: how many orbits and channels share each edge-class usage vector.
        std::map<std::vector<std::uint32_t>, std::pair<std::size_t, double>> by_shape;
        std::map<std::size_t, std::pair<std::size_t, double>> by_flows;
        for (const auto& ch : c.channels) {
            auto& s = by_shape[ch.shape];
            ++s.first;
            s.second += ch.orbit_size;
            auto& f = by_flows[ch.flows.size()];
            ++f.first;
            f.second += ch.orbit_size;
        }
        out += fmt::format("  {} orbits, {} channels, {} shapes\n", c.channels.size(),
                           count_text(c.raw_channels, std::log10(c.raw_channels)), by_shape.size());
        for (const auto& [flows, n] : by_flows)
            out += fmt::format("  {:>3} flows: {:>8} orbits {:>14} channels\n", flows, n.first,
                               count_text(n.second, std::log10(n.second)));
        std::vector<std::pair<std::vector<std::uint32_t>, std::pair<std::size_t, double>>> shapes(by_shape.begin(),
                                                                                                  by_shape.end());
        std::stable_sort(shapes.begin(), shapes.end(),
                         [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
        const std::size_t shown = std::min<std::size_t>(shapes.size(), 5);
        for (std::size_t k = 0; k < shown; ++k) {
            out += fmt::format("  shape [{}]: {} orbits, {} channels\n", fmt::join(shapes[k].first, " "),
                               shapes[k].second.first,
                               count_text(shapes[k].second.second, std::log10(shapes[k].second.second)));
        }
        if (shapes.size() > shown) out += fmt::format("  ... {} more shapes\n", shapes.size() - shown);
        if (!c.channels.empty()) {
            std::string rep;
            for (FlowId id : c.channels.front().flows)
                rep += (rep.empty() ? "" : "  ") + flow_text(*c.local, c.space->flows()[id]);
            out +=
                fmt::format("  largest orbit ({}): {}\n",
                            count_text(c.channels.front().orbit_size, std::log10(c.channels.front().orbit_size)), rep);
        }
    }
    return out;
}

// ---- the checker --------------------------------------------------------------------------------------

std::vector<std::string> Catalog::check(std::size_t brute_force_limit, std::size_t max_violations) const {
    std::vector<std::string> v;
    const auto full = [&] { return v.size() >= max_violations; };
    if (!read_fingerprint_.empty() && read_fingerprint_ != fingerprint_) {
        v.push_back(fmt::format("the catalog was built for another topology (fingerprint {}, this one is {})",
                                read_fingerprint_, fingerprint_));
    }
    for (std::size_t ci = 0; ci < classes_.size() && !full(); ++ci) {
        const auto& c = classes_[ci];
        const auto& space = *c.space;
        const auto index = edge_class_index(c);
        std::set<std::vector<int>> certificates;
        double sum = 0;
        for (std::size_t k = 0; k < c.channels.size() && !full(); ++k) {
            const auto& ch = c.channels[k];
            const auto where = fmt::format("class {} channel {}", ci, k);
            const Channel concrete = space.channel(ch.flows);
            if (auto why = contention(*c.local, concrete)) {
                v.push_back(fmt::format("{}: not contention-free: {}", where, *why));
                continue;
            }
            if (!is_maximal(concrete, space.flows())) {
                v.push_back(fmt::format("{}: not maximal: another flow fits", where));
                continue;
            }
            if (method_ == CatalogMethod::hierarchical && !saturates_ports(c, ch.flows)) {
                v.push_back(fmt::format("{}: does not use every port in both directions", where));
                continue;
            }
            auto canon = space.canonical(ch.flows);
            const double size = space.orbit_size(canon);
            if (size != ch.orbit_size) {
                v.push_back(fmt::format("{}: orbit size {} stated, {} found", where, ch.orbit_size, size));
                continue;
            }
            if (!certificates.insert(std::move(canon.certificate)).second) {
                v.push_back(fmt::format("{}: the same orbit as an earlier channel", where));
                continue;
            }
            if (shape_of(c, ch.flows, index) != ch.shape) v.push_back(fmt::format("{}: wrong shape", where));
            sum += ch.orbit_size;
        }
        if (full()) break;
        if (ci < read_raw_.size() && read_raw_[ci] != sum) {
            v.push_back(
                fmt::format("class {}: raw_channels {} stated, the orbits add up to {}", ci, read_raw_[ci], sum));
        }
        // Completeness, where the channels can be listed: the expanded orbits are exactly the maximal channels.
        if (method_ == CatalogMethod::exact && sum <= static_cast<double>(brute_force_limit) && v.empty()) {
            std::set<FlowIds> expanded;
            for (const auto& ch : c.channels)
                for (auto& inst : expand_orbit(space, ch.flows, brute_force_limit))
                    expanded.insert(std::move(inst));
            const auto all = all_maximal(space, brute_force_limit);
            for (const auto& m : all) {
                if (!expanded.contains(m)) {
                    std::string text;
                    for (FlowId id : m)
                        text += (text.empty() ? "" : "  ") + flow_text(*c.local, space.flows()[id]);
                    v.push_back(fmt::format("class {}: the maximal channel {} is in no orbit", ci, text));
                    break;
                }
            }
            if (v.empty() && all.size() != expanded.size()) {
                v.push_back(fmt::format("class {}: {} channels in the orbits, {} maximal channels exist", ci,
                                        expanded.size(), all.size()));
            }
        }
    }
    if (!v.empty() || method_ != CatalogMethod::hierarchical) return v;

    // One composed channel of the whole topology: channel (i mod count) of each part, every rail shifted by one
    // node. It must be contention-free and maximal among all the topology's paths.
    std::vector<FlowIds> per_domain;
    std::vector<std::size_t> used_in_class(classes_.size(), 0);
    for (const auto& d : domains_) {
        const auto& c = classes_[d.domain_class];
        per_domain.push_back(c.channels[used_in_class[d.domain_class]++ % c.channels.size()].flows);
    }
    std::vector<std::vector<std::size_t>> peers;
    if (pattern_ && pattern_->kind == "rail-aligned") {
        for (std::size_t r = 0; r < pattern_->rails; ++r) {
            std::vector<std::size_t> shift(domains_.size());
            for (std::size_t i = 0; i < domains_.size(); ++i)
                shift[i] =
                    (i + 1 + r) % domains_.size() == i ? (i + 1) % domains_.size() : (i + 1 + r) % domains_.size();
            peers.push_back(std::move(shift));
        }
    }
    Channel composed;
    try {
        composed = compose(per_domain, peers);
    } catch (const DataError& e) {
        v.push_back(fmt::format("composing the parts' channels fails: {}", e.reason()));
        return v;
    }
    const Topology& t = *topology_;
    if (auto why = contention(t, composed)) {
        v.push_back(fmt::format("a composed channel is not contention-free: {}", *why));
        return v;
    }
    std::vector<bool> sending(t.devices.size(), false);
    std::vector<bool> receiving(t.devices.size(), false);
    std::vector<bool> used(t.edge_count(), false);
    for (const auto& f : composed.flows) {
        sending[f.src] = receiving[f.dst] = true;
        for (EdgeId e : f.edges)
            used[e] = true;
    }
    const auto gpus = t.devices_of(DeviceKind::gpu);
    for (DeviceId s : gpus) {
        if (sending[s]) continue;
        for (DeviceId d : gpus) {
            if (d == s || receiving[d]) continue;
            std::vector<topo::Path> paths = router_->alternatives(s, d);
            if (t.devices[s].node != t.devices[d].node) {
                for (DeviceId a : t.devices_of(DeviceKind::nic, t.devices[s].node))
                    for (DeviceId b : t.devices_of(DeviceKind::nic, t.devices[d].node)) {
                        try {
                            const DeviceId via[] = {a, b};
                            paths.push_back(router_->path_through(PathKind::alternate_nic, s, d, via));
                        } catch (const DataError&) {
                        }
                    }
            }
            for (const auto& p : paths) {
                if (!blocked(sending, receiving, used, p)) {
                    v.push_back(fmt::format("a composed channel is not maximal: {}->{} ({}) still fits", t.label(s),
                                            t.label(d), topo::to_string(p.kind)));
                    return v;
                }
            }
        }
    }
    return v;
}

}  // namespace gpuops::alltoall
