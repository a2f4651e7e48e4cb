// The cluster state sif-score reads: nodes with their GPU capacity and the instances placed on them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpuops/core/error.hpp"
#include "gpuops/core/json_io.hpp"

namespace gpuops::placement {

inline constexpr std::string_view cluster_state_schema = "gpuops.cluster-state";
inline constexpr int cluster_state_version = 1;
/// Larger capacities are taken for a typo: no node has this many GPUs.
inline constexpr int max_node_gpus = 1024;

struct Node {
    std::string name;
    int gpus = 0;  ///< capacity; nodes of different sizes may share a cluster
    bool operator==(const Node&) const = default;
};

/// One instance of a job: all its GPUs on one node. gpu_ids (node-local indexes) are optional.
struct Instance {
    std::string job;
    std::string node;
    int gpus = 0;
    std::vector<int> gpu_ids;
    bool operator==(const Instance&) const = default;
};

/// Where the instances came from: listed one by one, or only each node's GPUs in use (scontrol without squeue),
/// which makes each node's usage one instance.
enum class InstanceSource { listed, node_usage };
[[nodiscard]] std::string_view to_string(InstanceSource source);

struct ClusterState {
    std::vector<Node> nodes;
    std::vector<Instance> instances;
    InstanceSource instances_from = InstanceSource::listed;
    bool operator==(const ClusterState&) const = default;
};

/// Where each node and instance was read, so that validate() names the row or the JSON pointer of the input.
struct StateOrigins {
    std::vector<DataLocation> nodes;
    std::vector<DataLocation> instances;
};

/// Rejects a state no cluster can be in: no nodes, a node without GPUs or named twice, an instance on an unknown
/// node, larger than every node, with GPU ids out of range or held by another instance, or more GPUs placed on a
/// node than it has. DataError at the offending value (under `origins` when given, else /nodes/i, /instances/i).
void validate(const ClusterState& state, const StateOrigins* origins = nullptr);

/// Reads and validates a gpuops.cluster-state document; errors name `file` and the JSON pointer.
[[nodiscard]] ClusterState cluster_state_from_json(const json_io::Json& doc, std::string_view file);
[[nodiscard]] json_io::Json to_json(const ClusterState& state, std::string_view tool);

}  // namespace gpuops::placement
