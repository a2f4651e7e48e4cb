// One placement decision (compass-place): a job against a cluster state under a policy, with SIF before and after.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gpuops/core/json_io.hpp"
#include "gpuops/placement/abs.hpp"
#include "gpuops/placement/policies.hpp"
#include "gpuops/placement/sif.hpp"

namespace gpuops::placement {

inline constexpr std::string_view placement_schema = "gpuops.placement";
inline constexpr int placement_version = 1;

struct DecisionReport {
    PolicyKind policy = PolicyKind::compass;
    PolicyOptions options;
    JobRequest job;
    ClusterState before;  ///< the state as read, GPU ids filled in
    ClusterState after;   ///< with the decision applied (the state unchanged when the job waits; repack aside)
    Decision decision;
    SifReport sif_before;
    SifReport sif_after;
    std::optional<AbsStats> abs_before;  ///< compass: the state as ABS reads it
    std::optional<AbsStats> abs_after;
};

/// Places `job` into a validated `state` under `policy`. repack decides at a period boundary: every running
/// instance is repacked first (its migrations are reported even when the job then waits). `state_budget` bounds
/// the search for phi_star (sif.hpp).
[[nodiscard]] DecisionReport decide(const ClusterState& state, const JobRequest& job, PolicyKind policy,
                                    const PolicyOptions& options, std::int64_t state_budget = default_state_budget);

[[nodiscard]] json_io::Json to_json(const DecisionReport& report, std::string_view tool);
[[nodiscard]] std::string render_text(const DecisionReport& report);

}  // namespace gpuops::placement
