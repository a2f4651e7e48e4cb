// Composes a cluster of identical nodes joined by a network fabric (non-blocking, rail-optimized, rail-only).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpuops/topo/topology.hpp"

namespace gpuops::topo {

/// Far beyond today's largest GPU clusters (tens of thousands of nodes), and still a few GB of model.
inline constexpr int max_cluster_nodes = 65536;

struct FabricSpec {
    std::string kind;           ///< nonblocking | rail | rail-only
    double port_bandwidth = 0;  ///< bytes/s per NIC port; 0 = each NIC's own speed
};

/// Parses `nonblocking:400Gb/s`, `rail:200Gb/s`, `rail-only:400Gb/s` or just the kind (then each NIC's
/// own port speed is used). Throws UsageError.
[[nodiscard]] FabricSpec parse_fabric(std::string_view text);

/// `count` copies of the single-node `node`, named by `hostnames` (or node01..nodeNN when empty), with
/// every RDMA NIC (every NIC when none is RDMA) cabled to the fabric:
/// - nonblocking: one switch, every port at full rate;
/// - rail: NIC k of every node on leaf switch k, leaves joined by a spine that is non-blocking for them;
/// - rail-only: the rail leaves without a spine (traffic between rails must cross inside a node).
/// Throws DataError when the node has no NIC or is itself a cluster, UsageError for a bad count.
[[nodiscard]] Topology compose_cluster(const Topology& node, int count, const FabricSpec& fabric,
                                       const std::vector<std::string>& hostnames = {});

}  // namespace gpuops::topo
