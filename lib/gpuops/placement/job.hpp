// A job to place (gpuops.job): w gang-admitted instances of g GPUs each, every instance whole on one node.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gpuops/core/json_io.hpp"
#include "gpuops/placement/cluster_state.hpp"

namespace gpuops::placement {

inline constexpr std::string_view job_schema = "gpuops.job";
inline constexpr int job_version = 1;
/// More instances than this are taken for a typo.
inline constexpr int max_job_instances = 1'000'000;

struct JobRequest {
    std::string name;
    int instances = 1;
    int gpus_per_instance = 1;
    bool operator==(const JobRequest&) const = default;
};

/// Reads a gpuops.job document {job, instances, gpus_per_instance}; errors name `file` and the JSON pointer.
[[nodiscard]] JobRequest job_from_json(const json_io::Json& doc, std::string_view file);
[[nodiscard]] json_io::Json to_json(const JobRequest& job, std::string_view tool);

/// Why a job can never be placed in a state, whatever runs there: `field` is the gpuops.job key at fault.
struct JobMisfit {
    std::string field;
    std::string reason;
};
/// An empty name or one already running in the state; an instance larger than every node; more instances than
/// the state's nodes hold even when empty. nullopt when the job could be placed in the empty cluster.
[[nodiscard]] std::optional<JobMisfit> misfit(const ClusterState& state, const JobRequest& job);

}  // namespace gpuops::placement
