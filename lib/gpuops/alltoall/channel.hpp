// Channels (DESIGN.md Pillar A): sets of flows that share no directed edge, one send and one receive per GPU.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpuops/topo/routing.hpp"
#include "gpuops/topo/topology.hpp"

namespace gpuops::alltoall {

/// One transfer of a channel: a GPU pair and the path it takes, at that path's bottleneck rate.
struct Flow {
    topo::DeviceId src = topo::no_device;
    topo::DeviceId dst = topo::no_device;
    topo::PathKind kind = topo::PathKind::direct;
    std::vector<topo::DeviceId> via;  ///< what pins the path (topo::Path::via): loopback NIC, memory, NIC pair
    std::vector<topo::EdgeId> edges;  ///< sorted
    double rate = 0;                  ///< bytes/s: the path's narrowest edge

    bool operator==(const Flow&) const = default;
};

/// The canonical order of flows: by source, destination, path kind and what the path goes through.
[[nodiscard]] bool flow_less(const Flow& a, const Flow& b);

/// Flows in canonical order (flow_less); a channel is identified by its flows.
struct Channel {
    std::vector<Flow> flows;
    bool operator==(const Channel&) const = default;
};

/// Every candidate flow of a topology: for each ordered pair of GPUs, each path the router offers whose kind
/// is in `kinds` (all kinds when empty). Indexes into the result identify flows below.
[[nodiscard]] std::vector<Flow> candidate_flows(const topo::Router& router, std::span<const topo::PathKind> kinds = {});

/// Whether two flows can run at once: different sources, different destinations and no directed edge in common.
[[nodiscard]] bool compatible(const Flow& a, const Flow& b);

/// Why `channel` is not contention-free (the first violation, naming devices), or nullopt when it is.
[[nodiscard]] std::optional<std::string> contention(const topo::Topology& topology, const Channel& channel);

/// Whether no candidate flow could be added to `channel` without contention.
[[nodiscard]] bool is_maximal(const Channel& channel, std::span<const Flow> candidates);

/// Every maximal channel over `candidates`, by Bron–Kerbosch with pivoting on the compatibility graph (maximal
/// cliques of compatible flows). Exact and exponential: meant for single nodes and for checking the catalog.
/// Throws DataError when there are more than `limit` channels. Channels come sorted; flows in canonical order.
[[nodiscard]] std::vector<Channel> enumerate_maximal(std::span<const Flow> candidates, std::size_t limit);

}  // namespace gpuops::alltoall
