// Routing over the topology: the unique PCIe tree path, socket crossings, inter-node paths through NICs and
// the fabric, the alternative paths a transfer may take, and nvidia-smi style relationships.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "gpuops/topo/topology.hpp"

namespace gpuops::topo {

/// nvidia-smi topo -m words: X (self), PIX (one switch), PXB (several switches), PHB (a host bridge),
/// NODE (host bridges of one NUMA node), SYS (between NUMA nodes: across sockets, or across sub-NUMA
/// clusters of one package), NET (another node).
enum class Relation { self, pix, pxb, phb, node, sys, net };
[[nodiscard]] std::string_view to_string(Relation relation);

enum class PathKind {
    direct,         ///< PCIe peer-to-peer inside a node; GPU → NIC → fabric → NIC → GPU across nodes
    nic_loopback,   ///< inside a node, out through the source's NIC and back in (DeepEP's PCIe mode)
    host_staging,   ///< inside a node, staged through the source socket's memory
    alternate_nic,  ///< across nodes, through another local NIC than the nearest one (rail choice)
};
[[nodiscard]] std::string_view to_string(PathKind kind);

struct Path {
    PathKind kind = PathKind::direct;
    DeviceId src = no_device;
    DeviceId dst = no_device;
    std::vector<EdgeId> edges;
    std::vector<DeviceId> nics;  ///< the NICs the path goes through, in order
    /// What pins the path among the alternatives of its kind: the NIC of a loopback, the memory of host
    /// staging, the source and destination NICs across nodes; empty for a direct path inside a node.
    std::vector<DeviceId> via;
    double bottleneck = 0;  ///< bytes/s: the narrowest edge
    double latency_us = 0;  ///< sum of edge latencies
};

/// Indexes a Topology once (parents, uplinks, sockets, fabric) and answers routing queries.
/// The Topology must outlive the Router and must not change while it is used.
class Router {
public:
    explicit Router(const Topology& topology);

    /// The default path from `src` to `dst` (distinct devices). Throws DataError when none exists
    /// (e.g. two nodes without a fabric, or a node without NIC).
    [[nodiscard]] Path route(DeviceId src, DeviceId dst) const;
    /// The default path first, then every alternative that exists for the pair.
    [[nodiscard]] std::vector<Path> alternatives(DeviceId src, DeviceId dst) const;
    /// The path of `kind` from `src` to `dst` pinned through `via` (see Path::via): any NIC for a loopback,
    /// any memory for staging, any pair of NICs across nodes. Throws DataError when that path does not exist.
    [[nodiscard]] Path path_through(PathKind kind, DeviceId src, DeviceId dst, std::span<const DeviceId> via) const;

    [[nodiscard]] Relation relation(DeviceId a, DeviceId b) const;
    /// The RDMA NIC nearest to `device` in its node (ties broken by NIC order, spread by device order);
    /// any NIC when the node has no RDMA NIC; nullopt when it has none at all.
    [[nodiscard]] std::optional<DeviceId> nearest_nic(DeviceId device) const;
    [[nodiscard]] DeviceId socket_of(DeviceId device) const;

    [[nodiscard]] const Topology& topology() const noexcept { return topo_; }

private:
    /// no_device when the two are in different trees (below different sockets, or in different nodes).
    [[nodiscard]] DeviceId lowest_common_ancestor(DeviceId a, DeviceId b) const;
    [[nodiscard]] DeviceId root_of(DeviceId device) const;
    /// Intra-node path; appends to `edges`.
    void tree_path(DeviceId src, DeviceId dst, std::vector<EdgeId>& edges) const;
    /// Shortest path over `kind` links between two devices of the same kind (sockets, fabric switches).
    [[nodiscard]] std::optional<std::vector<EdgeId>> side_path(DeviceId from, DeviceId to, LinkKind kind) const;
    void fabric_path(DeviceId src_nic, DeviceId dst_nic, std::vector<EdgeId>& edges) const;
    [[nodiscard]] std::optional<DeviceId> fabric_nic_towards(DeviceId dst, DeviceId src_nic) const;
    [[nodiscard]] Path finish(PathKind kind, DeviceId src, DeviceId dst, std::vector<EdgeId> edges,
                              std::vector<DeviceId> nics) const;
    [[nodiscard]] Path inter_node(DeviceId src, DeviceId dst, DeviceId src_nic, PathKind kind) const;

    const Topology& topo_;
    std::vector<std::optional<LinkId>> uplink_;        ///< per device
    std::vector<std::vector<LinkId>> side_links_;      ///< per device: socket and network links
    std::vector<std::optional<LinkId>> network_port_;  ///< per NIC: its link to the fabric
    std::vector<std::vector<DeviceId>> nics_by_node_;  ///< fabric-attached NICs per node (RDMA first)
    std::vector<int> depth_;                           ///< per device: 0 for tree roots (sockets, fabric switches)
    std::vector<std::size_t> rank_in_node_;            ///< per device: its index among devices of its kind in its node
};

}  // namespace gpuops::topo
