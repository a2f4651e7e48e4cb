// Path computation: up to the lowest common ancestor and down, across sockets, and over the fabric.
#include "gpuops/topo/routing.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"

namespace gpuops::topo {

std::string_view to_string(Relation relation) {
    switch (relation) {
        case Relation::self: return "X";
        case Relation::pix: return "PIX";
        case Relation::pxb: return "PXB";
        case Relation::phb: return "PHB";
        case Relation::node: return "NODE";
        case Relation::sys: return "SYS";
        case Relation::net: return "NET";
    }
    return "?";
}

std::string_view to_string(PathKind kind) {
    switch (kind) {
        case PathKind::direct: return "direct";
        case PathKind::nic_loopback: return "nic_loopback";
        case PathKind::host_staging: return "host_staging";
        case PathKind::alternate_nic: return "alternate_nic";
    }
    return "?";
}

Router::Router(const Topology& topology)
    : topo_(topology),
      uplink_(topology.devices.size()),
      side_links_(topology.devices.size()),
      network_port_(topology.devices.size()),
      nics_by_node_(topology.nodes.size()),
      depth_(topology.devices.size(), -1),
      rank_in_node_(topology.devices.size(), 0) {
    for (const auto& l : topo_.links) {
        if (topo_.devices[l.a].parent == l.b) {
            uplink_[l.a] = l.id;
        } else {
            side_links_[l.a].push_back(l.id);
            side_links_[l.b].push_back(l.id);
        }
        if (l.kind == LinkKind::network) {
            if (topo_.devices[l.a].kind == DeviceKind::nic) network_port_[l.a] = l.id;
            if (topo_.devices[l.b].kind == DeviceKind::nic) network_port_[l.b] = l.id;
        }
    }
    for (const auto& d : topo_.devices) {
        if (d.kind == DeviceKind::nic && d.node >= 0 && static_cast<std::size_t>(d.node) < nics_by_node_.size()) {
            nics_by_node_[static_cast<std::size_t>(d.node)].push_back(d.id);
        }
    }
    std::map<std::pair<int, DeviceKind>, std::size_t> seen;
    for (const auto& d : topo_.devices)
        rank_in_node_[d.id] = seen[{d.node, d.kind}]++;
    // Depth in the device tree (sockets and fabric switches are roots); parents may have larger ids.
    for (const auto& d : topo_.devices) {
        std::vector<DeviceId> chain;
        DeviceId x = d.id;
        while (x != no_device && depth_[x] < 0) {
            chain.push_back(x);
            x = topo_.devices[x].parent;
        }
        int depth = x == no_device ? -1 : depth_[x];
        for (std::size_t i = chain.size(); i-- > 0;)
            depth_[chain[i]] = ++depth;  // from the known end down
    }
    for (auto& nics : nics_by_node_) {
        std::stable_partition(nics.begin(), nics.end(), [&](DeviceId n) { return topo_.devices[n].rdma; });
    }
}

DeviceId Router::lowest_common_ancestor(DeviceId a, DeviceId b) const {
    while (depth_[a] > depth_[b])
        a = topo_.devices[a].parent;
    while (depth_[b] > depth_[a])
        b = topo_.devices[b].parent;
    while (a != b) {
        a = topo_.devices[a].parent;
        b = topo_.devices[b].parent;
        if (a == no_device || b == no_device) return no_device;  // different trees (sockets, nodes)
    }
    return a;
}

DeviceId Router::root_of(DeviceId device) const {
    while (topo_.devices[device].parent != no_device)
        device = topo_.devices[device].parent;
    return device;
}

DeviceId Router::socket_of(DeviceId device) const {
    for (DeviceId d = device; d != no_device; d = topo_.devices[d].parent)
        if (topo_.devices[d].kind == DeviceKind::socket) return d;
    return no_device;
}

std::optional<std::vector<EdgeId>> Router::side_path(DeviceId from, DeviceId to, LinkKind kind) const {
    // Breadth-first over links of one kind between devices of from's kind: sockets over socket interconnects
    // (direct in a full mesh; rings and partial meshes work too), fabric switches over network cables
    // (leaf, spine, leaf). The map keeps the cost proportional to that small subgraph, not to the cluster.
    const DeviceKind vertex_kind = topo_.devices[from].kind;
    std::unordered_map<DeviceId, std::pair<DeviceId, EdgeId>> came_from{{from, {from, 0}}};
    std::deque<DeviceId> queue{from};
    while (!queue.empty() && !came_from.contains(to)) {
        const DeviceId s = queue.front();
        queue.pop_front();
        for (LinkId l : side_links_[s]) {
            const Link& link = topo_.links[l];
            if (link.kind != kind) continue;
            const DeviceId next = link.a == s ? link.b : link.a;
            if (topo_.devices[next].kind != vertex_kind || came_from.contains(next)) continue;
            came_from[next] = {s, link.a == s ? Topology::up_edge(l) : Topology::down_edge(l)};
            queue.push_back(next);
        }
    }
    if (!came_from.contains(to)) return std::nullopt;
    std::vector<EdgeId> path;
    for (DeviceId s = to; s != from; s = came_from[s].first)
        path.push_back(came_from[s].second);
    std::reverse(path.begin(), path.end());
    return path;
}

void Router::tree_path(DeviceId src, DeviceId dst, std::vector<EdgeId>& edges) const {
    const DeviceId lca = lowest_common_ancestor(src, dst);
    const DeviceId top_src = lca != no_device ? lca : root_of(src);
    const DeviceId top_dst = lca != no_device ? lca : root_of(dst);
    for (DeviceId d = src; d != top_src; d = topo_.devices[d].parent)
        edges.push_back(Topology::up_edge(*uplink_[d]));
    if (lca == no_device) {
        if (topo_.devices[top_src].kind != DeviceKind::socket || topo_.devices[top_dst].kind != DeviceKind::socket) {
            throw DataError(
                fmt::format("{} and {} are not connected", quote(topo_.label(src)), quote(topo_.label(dst))));
        }
        const auto crossing = side_path(top_src, top_dst, LinkKind::socket_interconnect);
        if (!crossing) {
            throw DataError(fmt::format("no socket interconnect joins {} and {}", quote(topo_.label(top_src)),
                                        quote(topo_.label(top_dst))));
        }
        edges.insert(edges.end(), crossing->begin(), crossing->end());
    }
    // Down from the top: collected bottom-up, then put in travel order.
    const auto descent_start = static_cast<std::ptrdiff_t>(edges.size());
    for (DeviceId d = dst; d != top_dst; d = topo_.devices[d].parent)
        edges.push_back(Topology::down_edge(*uplink_[d]));
    std::reverse(edges.begin() + descent_start, edges.end());
}

std::optional<DeviceId> Router::nearest_nic(DeviceId device) const {
    const auto& d = topo_.devices[device];
    const auto& nics = nics_by_node_.at(static_cast<std::size_t>(d.node));
    if (nics.empty()) return std::nullopt;
    const bool any_rdma = topo_.devices[nics.front()].rdma;
    // Closeness by relationship (PIX best), then by hop count; ties spread devices over equally near NICs.
    std::vector<std::pair<std::pair<int, std::size_t>, DeviceId>> ranked;
    for (DeviceId n : nics) {
        if (any_rdma && !topo_.devices[n].rdma) continue;
        if (n == device) return n;
        std::vector<EdgeId> edges;
        tree_path(device, n, edges);
        ranked.push_back({{static_cast<int>(relation(device, n)), edges.size()}, n});
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    std::size_t ties = 1;
    while (ties < ranked.size() && ranked[ties].first == ranked[0].first)
        ++ties;
    if (ties == 1) return ranked[0].second;
    // Spread: the k-th device of this kind among those nearest to the same NIC set takes the k-th NIC.
    return ranked[rank_in_node_[device] % ties].second;
}

void Router::fabric_path(DeviceId src_nic, DeviceId dst_nic, std::vector<EdgeId>& edges) const {
    const auto src_port = network_port_[src_nic];
    const auto dst_port = network_port_[dst_nic];
    if (!src_port || !dst_port) {
        throw DataError(
            fmt::format("{} and {} are in different nodes and no fabric joins them (use --nodes N --fabric)",
                        quote(topo_.label(src_nic)), quote(topo_.label(dst_nic))));
    }
    const Link& sp = topo_.links[*src_port];
    const Link& dp = topo_.links[*dst_port];
    const DeviceId src_sw = sp.a == src_nic ? sp.b : sp.a;
    const DeviceId dst_sw = dp.a == dst_nic ? dp.b : dp.a;
    edges.push_back(sp.a == src_nic ? Topology::up_edge(sp.id) : Topology::down_edge(sp.id));
    if (src_sw != dst_sw) {
        const auto between = side_path(src_sw, dst_sw, LinkKind::network);
        if (!between) {
            throw DataError(fmt::format("the fabric has no path from {} to {} (a rail-only fabric joins only NICs of "
                                        "the same rail)",
                                        quote(topo_.label(src_nic)), quote(topo_.label(dst_nic))));
        }
        edges.insert(edges.end(), between->begin(), between->end());
    }
    edges.push_back(dp.a == dst_nic ? Topology::down_edge(dp.id) : Topology::up_edge(dp.id));
}

std::optional<DeviceId> Router::fabric_nic_towards(DeviceId dst, DeviceId src_nic) const {
    // Rail-aligned first: the destination node's NIC on the same fabric switch as the source NIC, if any.
    const auto src_port = network_port_[src_nic];
    const auto& nics = nics_by_node_.at(static_cast<std::size_t>(topo_.devices[dst].node));
    if (src_port && topo_.fabric && topo_.fabric->kind != "nonblocking") {
        const Link& sp = topo_.links[*src_port];
        const DeviceId src_sw = sp.a == src_nic ? sp.b : sp.a;
        for (DeviceId n : nics) {
            const auto port = network_port_[n];
            if (!port) continue;
            const Link& p = topo_.links[*port];
            if ((p.a == n ? p.b : p.a) == src_sw) return n;
        }
    }
    return nearest_nic(dst);
}

Path Router::finish(PathKind kind, DeviceId src, DeviceId dst, std::vector<EdgeId> edges,
                    std::vector<DeviceId> nics) const {
    Path p;
    p.kind = kind;
    p.src = src;
    p.dst = dst;
    p.bottleneck = edges.empty() ? 0 : std::numeric_limits<double>::infinity();
    for (EdgeId e : edges) {
        const Link& l = topo_.links[e / 2];
        p.bottleneck = std::min(p.bottleneck, l.bandwidth);
        p.latency_us += l.latency_us;
    }
    p.edges = std::move(edges);
    p.nics = std::move(nics);
    return p;
}

Path Router::inter_node(DeviceId src, DeviceId dst, DeviceId src_nic, PathKind kind) const {
    const auto dst_nic = fabric_nic_towards(dst, src_nic);
    if (!dst_nic) {
        throw DataError(fmt::format("node {} has no NIC to reach {}",
                                    quote(topo_.nodes[static_cast<std::size_t>(topo_.devices[dst].node)].hostname),
                                    quote(topo_.label(dst))));
    }
    std::vector<EdgeId> edges;
    if (src != src_nic) tree_path(src, src_nic, edges);
    fabric_path(src_nic, *dst_nic, edges);
    if (*dst_nic != dst) tree_path(*dst_nic, dst, edges);
    Path p = finish(kind, src, dst, std::move(edges), {src_nic, *dst_nic});
    p.via = p.nics;
    return p;
}

Path Router::path_through(PathKind kind, DeviceId src, DeviceId dst, std::span<const DeviceId> via) const {
    if (src == dst) throw InternalError("path_through: source and destination are the same device");
    const auto& s = topo_.devices.at(src);
    const auto& d = topo_.devices.at(dst);
    const auto need = [&](std::size_t count, std::string_view what) {
        if (via.size() != count) {
            throw DataError(fmt::format("a {} path from {} to {} goes through {}", to_string(kind),
                                        quote(topo_.label(src)), quote(topo_.label(dst)), what));
        }
        for (DeviceId v : via)
            if (v >= topo_.devices.size()) throw DataError(fmt::format("no device {} in the topology", v));
    };
    std::vector<EdgeId> edges;
    std::vector<DeviceId> nics;
    if (s.node != d.node) {
        if (kind != PathKind::direct && kind != PathKind::alternate_nic) {
            throw DataError(fmt::format("{} and {} are in different nodes: a {} path cannot join them",
                                        quote(topo_.label(src)), quote(topo_.label(dst)), to_string(kind)));
        }
        need(2, "a NIC of each node");
        const DeviceId src_nic = via[0];
        const DeviceId dst_nic = via[1];
        if (topo_.devices[src_nic].node != s.node || topo_.devices[dst_nic].node != d.node ||
            topo_.devices[src_nic].kind != DeviceKind::nic || topo_.devices[dst_nic].kind != DeviceKind::nic) {
            throw DataError(fmt::format("{} and {} are not NICs of the nodes of {} and {}", quote(topo_.label(src_nic)),
                                        quote(topo_.label(dst_nic)), quote(topo_.label(src)), quote(topo_.label(dst))));
        }
        if (src != src_nic) tree_path(src, src_nic, edges);
        fabric_path(src_nic, dst_nic, edges);
        if (dst_nic != dst) tree_path(dst_nic, dst, edges);
        nics = {src_nic, dst_nic};
    } else if (kind == PathKind::direct) {
        need(0, "nothing");
        tree_path(src, dst, edges);
    } else if (kind == PathKind::nic_loopback || kind == PathKind::host_staging) {
        const bool loopback = kind == PathKind::nic_loopback;
        need(1, loopback ? "one NIC" : "one memory");
        const auto& v = topo_.devices[via[0]];
        if (v.node != s.node || v.kind != (loopback ? DeviceKind::nic : DeviceKind::cpu_memory) || v.id == src ||
            v.id == dst) {
            throw DataError(fmt::format("{} is not a {} of the node of {}", quote(topo_.label(v.id)),
                                        loopback ? "NIC" : "memory", quote(topo_.label(src))));
        }
        tree_path(src, v.id, edges);
        tree_path(v.id, dst, edges);
        if (loopback) nics = {v.id};
    } else {
        throw DataError(fmt::format("{} and {} are in one node: an {} path cannot join them", quote(topo_.label(src)),
                                    quote(topo_.label(dst)), to_string(kind)));
    }
    Path p = finish(kind, src, dst, std::move(edges), std::move(nics));
    p.via.assign(via.begin(), via.end());
    return p;
}

Path Router::route(DeviceId src, DeviceId dst) const {
    if (src == dst) throw InternalError("route: source and destination are the same device");
    const auto& s = topo_.devices.at(src);
    const auto& d = topo_.devices.at(dst);
    if (s.node == d.node) {
        std::vector<EdgeId> edges;
        tree_path(src, dst, edges);
        return finish(PathKind::direct, src, dst, std::move(edges), {});
    }
    const auto src_nic = nearest_nic(src);
    if (!src_nic) {
        throw DataError(fmt::format("node {} has no NIC, so {} cannot reach another node",
                                    quote(topo_.nodes[static_cast<std::size_t>(s.node)].hostname),
                                    quote(topo_.label(src))));
    }
    return inter_node(src, dst, *src_nic, PathKind::direct);
}

std::vector<Path> Router::alternatives(DeviceId src, DeviceId dst) const {
    std::vector<Path> paths{route(src, dst)};
    const auto& s = topo_.devices[src];
    const auto& d = topo_.devices[dst];
    if (s.node == d.node) {
        // NIC loopback: up to the source's NIC and back down (the NIC hairpins the traffic).
        if (const auto nic = nearest_nic(src); nic && *nic != src && *nic != dst) {
            std::vector<EdgeId> edges;
            tree_path(src, *nic, edges);
            tree_path(*nic, dst, edges);
            paths.push_back(finish(PathKind::nic_loopback, src, dst, std::move(edges), {*nic}));
            paths.back().via = {*nic};
        }
        // Host staging: into the source socket's memory, then out to the destination.
        const DeviceId socket = socket_of(src);
        if (socket != no_device) {
            for (DeviceId mem : topo_.children(socket)) {
                if (topo_.devices[mem].kind != DeviceKind::cpu_memory || mem == src || mem == dst) continue;
                std::vector<EdgeId> edges;
                tree_path(src, mem, edges);
                tree_path(mem, dst, edges);
                paths.push_back(finish(PathKind::host_staging, src, dst, std::move(edges), {}));
                paths.back().via = {mem};
                break;
            }
        }
        return paths;
    }
    // Across nodes: every other local NIC attached to the fabric.
    const auto preferred = paths.front().nics.empty() ? no_device : paths.front().nics.front();
    for (DeviceId nic : nics_by_node_.at(static_cast<std::size_t>(s.node))) {
        if (nic == preferred || !network_port_[nic]) continue;
        try {
            paths.push_back(inter_node(src, dst, nic, PathKind::alternate_nic));
        } catch (const DataError&) {
            // A rail-only fabric may leave this NIC without a route to the destination: not an alternative.
        }
    }
    return paths;
}

Relation Router::relation(DeviceId a, DeviceId b) const {
    if (a == b) return Relation::self;
    if (topo_.devices[a].node != topo_.devices[b].node) return Relation::net;
    const DeviceId lca = lowest_common_ancestor(a, b);
    if (lca == no_device) return Relation::sys;
    switch (topo_.devices[lca].kind) {
        case DeviceKind::pcie_switch: {
            // PIX: the two hang off one switch; PXB: more switches below the common one.
            int switches = 0;
            for (DeviceId end : {a, b})
                for (DeviceId d = end; d != lca; d = topo_.devices[d].parent)
                    if (topo_.devices[d].kind == DeviceKind::pcie_switch) ++switches;
            return switches == 0 ? Relation::pix : Relation::pxb;
        }
        case DeviceKind::root_complex: return Relation::phb;
        case DeviceKind::socket: {
            // nvidia-smi's SYS is "between NUMA nodes": with sub-NUMA clustering (SNC, NPS2/4) two host
            // bridges of one package can sit in different NUMA nodes.
            const auto& na = topo_.devices[a].numa_node;
            const auto& nb = topo_.devices[b].numa_node;
            return na && nb && *na != *nb ? Relation::sys : Relation::node;
        }
        default: return Relation::pix;  // one endpoint is the other's ancestor (e.g. a switch and its GPU)
    }
}

}  // namespace gpuops::topo
