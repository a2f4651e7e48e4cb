// One `compass-place simulate` run as a library call: import and slice the trace, size the cluster, replay it
// under each policy. The tool only maps its options onto a SimulationRequest and writes the outputs.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuops/placement/policies.hpp"
#include "gpuops/placement/simulation_report.hpp"
#include "gpuops/placement/simulator.hpp"
#include "gpuops/placement/trace.hpp"

namespace gpuops::placement {

struct SimulationRequest {
    std::string trace_path;             ///< "-": standard input
    std::optional<TraceFormat> format;  ///< nullopt: detected from the header line
    TraceOptions import;                ///< import.node_gpus is also the cluster's G
    TraceSlice slice;
    std::optional<int> nodes;  ///< nullopt: sized by the η rule
    double eta = 0.9;
    SimulationOptions options;  ///< shared by every policy; nodes, gpus_per_node and policy are set per run
    std::vector<PolicyKind> policies;
};

/// The replayed trace and the report that points into it (hence neither copied nor moved).
struct SimulationRun {
    SimulationRun() = default;
    SimulationRun(const SimulationRun&) = delete;
    SimulationRun& operator=(const SimulationRun&) = delete;
    Trace trace;
    SimulationReport report;
};

/// Diagnostics while it runs: warnings (rows skipped, jobs that never fit) and notes (counts, timings).
using SimulationDiagnostic = std::function<void(bool warning, const std::string& message)>;

/// DataError for an empty slice (naming the day when a window was asked for) or η outside (0, 1]; the trace
/// reader's errors pass through.
[[nodiscard]] std::unique_ptr<SimulationRun> run_simulation(const SimulationRequest& request,
                                                            const SimulationDiagnostic& diagnostic);

/// "compass,bestfit,fgd" or "all" → the policies in the order given; the hyphen is optional (bestfit = best-fit).
/// DataError for an unknown or repeated name.
[[nodiscard]] std::vector<PolicyKind> parse_policy_list(std::string_view list);

}  // namespace gpuops::placement
