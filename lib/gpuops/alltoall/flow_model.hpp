// The flow model of DESIGN.md Pillar A: how long transfers take on a topology (max-min fair sharing, η, α).
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuops/core/json_io.hpp"
#include "gpuops/topo/topology.hpp"

namespace gpuops::alltoall {

inline constexpr std::string_view model_schema = "gpuops.model";
inline constexpr int model_schema_version = 1;

/// Parameters of the flow model, each with where its value comes from.
struct ModelParams {
    double alpha_us = 0;       ///< per-step barrier/launch overhead added to every step
    std::vector<double> eta;   ///< eta[k-1]: efficiency of an edge shared by k flows; 1 for k = 1, non-increasing,
                               ///< > 0; beyond the table the last value holds (an empty table means 1 throughout)
    double latency_scale = 1;  ///< multiplies the path latency, added once per transfer start
    std::map<std::string, std::string> sources;  ///< parameter name -> where the number comes from

    /// η(k) for an edge crossed by k ≥ 1 flows.
    [[nodiscard]] double efficiency(std::size_t k) const;

    bool operator==(const ModelParams&) const = default;
};

/// The documented defaults (α = 10 µs, η(k) = k^(-1/3) down to 0.25), with their derivation in `sources`.
[[nodiscard]] ModelParams default_model();
/// Reads a gpuops.model v1 document; DataError with a JSON pointer (and `source_name`) for bad values.
/// Parameters the document gives no source for are attributed to `source_name`.
[[nodiscard]] ModelParams read_model(const json_io::Json& doc, std::string_view source_name);
/// The gpuops.model v1 document (generator "vp-plan").
[[nodiscard]] json_io::Json to_json(const ModelParams& params);

/// A transfer on a fixed path. `latency_us` is the path latency (topo::Path::latency_us); the model scales it.
struct ModelFlow {
    std::vector<topo::EdgeId> edges;
    double bytes = 0;
    double latency_us = 0;
};

struct PhaseResult {
    double time_us = 0;             ///< when the last flow finishes (0 without flows)
    std::vector<double> finish_us;  ///< per flow, from the phase start
};

/// Flows whose data ends within this fraction of an event's time end in that event (see simulate_phase).
inline constexpr double default_event_window = 1e-2;

/// Flows that start together on fixed paths: max-min fair rates by water-filling over edge capacities
/// (an edge crossed by k flows still moving data offers bandwidth × η(k)), advanced event by event. At the
/// earliest end t of some flow's data, every flow whose data would end by t·(1 + event_window) at the current
/// rates ends in this event, each at its own time; the others advance to the rate-weighted mean of those ends
/// and their rates are recomputed once. Flows that end together are always one event, and a group of one is
/// exact, so the result is exact when ends are more than the window apart (0: always). The window bounds the
/// number of events by about ln(last end / first end) / window: a skewed 65k-flow all-to-all (32 nodes of
/// pcie-8gpu-gen4) takes about a second instead of 1.5-2 minutes, and its phase time moved by 0.01-0.7 %
/// against the exact run.
/// A flow finishes at the end of its data plus latency_scale × its latency; zero-byte flows and flows
/// without edges finish at their latency and share nothing. No α here. An edge id outside the topology, or
/// bytes negative or not finite, is an InternalError; a used edge without bandwidth is a DataError.
[[nodiscard]] PhaseResult simulate_phase(const topo::Topology& topology, std::span<const ModelFlow> flows,
                                         const ModelParams& params, double event_window = default_event_window);

/// Max-min fair rates (bytes/s) of flows all active at once (one water-filling), bytes ignored; a flow
/// without edges is unconstrained (+infinity). Exposed for tests and vp-bench.
[[nodiscard]] std::vector<double> max_min_rates(const topo::Topology& topology, std::span<const ModelFlow> flows,
                                                const ModelParams& params);

/// A schedule of steps separated by barriers: the sum over steps of (α + the step's phase time); an empty
/// step still pays α.
[[nodiscard]] double simulate_steps(const topo::Topology& topology, std::span<const std::vector<ModelFlow>> steps,
                                    const ModelParams& params, double event_window = default_event_window);

}  // namespace gpuops::alltoall
