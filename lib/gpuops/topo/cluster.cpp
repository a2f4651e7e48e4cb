// Cluster composition: replicate a node, then cable its NICs to leaf/spine network switches.
#include "gpuops/topo/cluster.hpp"

#include <fmt/format.h>

#include "gpuops/core/error.hpp"
#include "gpuops/core/units.hpp"
#include "gpuops/topo/link_defaults.hpp"

namespace gpuops::topo {

FabricSpec parse_fabric(std::string_view text) {
    FabricSpec spec;
    const auto colon = text.find(':');
    spec.kind = std::string(text.substr(0, colon));
    if (spec.kind != "nonblocking" && spec.kind != "rail" && spec.kind != "rail-only") {
        throw UsageError(fmt::format("--fabric: unknown fabric {} (expected nonblocking, rail or rail-only, "
                                     "e.g. nonblocking:400Gb/s)",
                                     quote(spec.kind)));
    }
    if (colon != std::string_view::npos) {
        try {
            spec.port_bandwidth = units::parse_bandwidth(text.substr(colon + 1));
        } catch (const DataError& e) {
            throw UsageError("--fabric: " + e.reason());
        }
    }
    return spec;
}

Topology compose_cluster(const Topology& node, int count, const FabricSpec& fabric,
                         const std::vector<std::string>& hostnames) {
    if (count < 1) throw UsageError(fmt::format("--nodes: expected at least 1 node, got {}", count));
    if (count > max_cluster_nodes) {
        throw UsageError(fmt::format("--nodes: at most {} nodes, got {}", max_cluster_nodes, count));
    }
    if (node.nodes.size() != 1) throw DataError("the input is already a cluster; compose from a single-node topology");
    if (node.fabric || !node.devices_of(DeviceKind::network_switch).empty()) {
        throw DataError("the input already has a fabric; compose from a single-node topology without one");
    }
    if (static_cast<std::uint64_t>(node.devices.size()) * static_cast<std::uint64_t>(count) + node.devices.size() >=
        no_device) {
        throw UsageError(
            fmt::format("--nodes: {} copies of a {}-device node are too many devices", count, node.devices.size()));
    }
    if (!hostnames.empty() && hostnames.size() != static_cast<std::size_t>(count)) {
        throw UsageError(fmt::format("--hosts names {} hosts but --nodes is {}", hostnames.size(), count));
    }
    std::vector<DeviceId> node_nics = node.devices_of(DeviceKind::nic, 0);
    std::vector<DeviceId> rdma;
    for (DeviceId n : node_nics)
        if (node.device(n).rdma) rdma.push_back(n);
    if (!rdma.empty()) node_nics = rdma;
    if (node_nics.empty() && count > 1) {
        throw DataError(
            fmt::format("cannot build a cluster: the node topology ({}) has no NIC", quote(node.source.name)));
    }

    Topology t;
    t.source = {node.source.kind, node.source.name};
    const int width = count >= 100 ? 3 : 2;
    for (int i = 0; i < count; ++i) {
        t.nodes.push_back(Node{hostnames.empty() ? fmt::format("node{:0{}d}", i + 1, width)
                                                 : hostnames[static_cast<std::size_t>(i)]});
    }
    const auto per_node = static_cast<DeviceId>(node.devices.size());
    for (int i = 0; i < count; ++i) {
        const DeviceId offset = per_node * static_cast<DeviceId>(i);
        for (Device d : node.devices) {
            d.node = i;
            if (d.parent != no_device) d.parent += offset;
            t.add_device(std::move(d));
        }
        for (Link l : node.links) {
            l.a += offset;
            l.b += offset;
            t.add_link(std::move(l));
        }
    }
    if (count == 1 && node_nics.empty()) return t;

    t.fabric = Fabric{fabric.kind, fabric.port_bandwidth};
    auto port_speed = [&](DeviceId nic) {
        if (fabric.port_bandwidth > 0) return fabric.port_bandwidth;
        return node.device(nic).port_bandwidth.value_or(0.0);
    };
    for (DeviceId nic : node_nics) {
        if (port_speed(nic) <= 0) {
            throw UsageError(fmt::format("--fabric: {} has no known port speed; give one, e.g. {}:400Gb/s",
                                         quote(node.device(nic).name), fabric.kind));
        }
    }
    auto add_switch = [&](std::string name) {
        Device sw;
        sw.kind = DeviceKind::network_switch;
        sw.node = 0;  // fabric switches belong to no server; they are listed with the first node
        sw.name = std::move(name);
        return t.add_device(std::move(sw));
    };
    const std::string origin = fabric.port_bandwidth > 0 ? "fabric " + fabric.kind : "NIC port speed";
    if (fabric.kind == "nonblocking") {
        const DeviceId sw = add_switch("net0");
        for (int i = 0; i < count; ++i)
            for (DeviceId nic : node_nics) {
                const auto v = defaults::network(port_speed(nic), origin);
                t.add_link(Link{0, LinkKind::network, nic + per_node * static_cast<DeviceId>(i), sw, v.bandwidth,
                                v.latency_us, std::nullopt, v.source});
            }
        return t;
    }
    // Rails: leaf k joins NIC k of every node.
    std::vector<DeviceId> leaves;
    for (std::size_t k = 0; k < node_nics.size(); ++k)
        leaves.push_back(add_switch(fmt::format("rail{}", k)));
    for (std::size_t k = 0; k < node_nics.size(); ++k) {
        for (int i = 0; i < count; ++i) {
            const auto v = defaults::network(port_speed(node_nics[k]), origin);
            t.add_link(Link{0, LinkKind::network, node_nics[k] + per_node * static_cast<DeviceId>(i), leaves[k],
                            v.bandwidth, v.latency_us, std::nullopt, v.source});
        }
    }
    if (fabric.kind == "rail") {
        const DeviceId spine = add_switch("spine0");
        for (std::size_t k = 0; k < node_nics.size(); ++k) {
            // Non-blocking for the rail: the uplink carries every port of the leaf at once.
            const auto v = defaults::network(port_speed(node_nics[k]) * count, "fabric rail spine (non-blocking)");
            t.add_link(Link{0, LinkKind::network, leaves[k], spine, v.bandwidth, v.latency_us, std::nullopt, v.source});
        }
    }
    return t;
}

}  // namespace gpuops::topo
