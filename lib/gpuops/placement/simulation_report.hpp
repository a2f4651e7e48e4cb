// What `compass-place simulate` writes: the gpuops.simulation summary (JSON or a text table), the time series
// (CSV or JSON Lines) and an SVG plot of N·SIF and GPU utilisation over time, one line per policy.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "gpuops/core/json_io.hpp"
#include "gpuops/placement/simulator.hpp"
#include "gpuops/placement/trace.hpp"

namespace gpuops::placement {

inline constexpr std::string_view simulation_schema = "gpuops.simulation";
inline constexpr int simulation_version = 1;

/// Which jobs of an imported trace are replayed.
struct TraceSlice {
    std::optional<int> window_day;         ///< only jobs submitted in [D·86400 s, (D+1)·86400 s) of the trace
    std::optional<std::int64_t> max_jobs;  ///< only the first N jobs (after the window)
};

/// The jobs of `trace` the slice keeps, submit times rebased to the window's start (day D starts at 0 s). The
/// import report is kept as it was. DataError for a negative day or a max_jobs < 1.
[[nodiscard]] Trace slice(const Trace& trace, const TraceSlice& slice);

/// How the cluster was sized: given (--nodes) or by the η rule of COMPASS-ABS (eqs. 12–13).
struct ClusterSizing {
    int nodes = 1;
    int gpus_per_node = 8;
    std::optional<double> eta;         ///< set when sized by the η rule
    std::int64_t demand_quantile = 0;  ///< p_η in GPUs (η rule only)
};

/// One run of the simulator over several policies.
struct SimulationReport {
    const Trace* trace = nullptr;  ///< the replayed jobs (sliced) with the import report
    TraceSlice slice;
    ClusterSizing sizing;
    SimulationOptions options;  ///< shared by every policy (options.policy is per result)
    std::vector<SimulationResult> results;
};

/// {"schema": "gpuops.simulation", ..., "trace": {...}, "cluster": {...}, "options": {...},
///  "results": [{"policy", "afr", "ajct_s", "agu", "mean_queue_s", "p95_queue_s", "makespan_s", "migrations", ...}]}
[[nodiscard]] json_io::Json to_json(const SimulationReport& report, std::string_view tool);
/// A table, one row per policy, under two lines naming the trace and the cluster.
[[nodiscard]] std::string render_text(const SimulationReport& report);

enum class SeriesFormat { csv, jsonl };
/// The format a series file's name asks for: *.csv or *.jsonl (also *.ndjson); nullopt otherwise.
[[nodiscard]] std::optional<SeriesFormat> series_format_for(std::string_view path);
/// The time series of every result, policy after policy. CSV: a header `policy,t_s,n_sif,gpu_utilisation,queued`
/// then one row per sample; JSON Lines: one object per sample with the same keys.
void write_series(std::ostream& out, const std::vector<SimulationResult>& results, SeriesFormat format);

/// An SVG document: N·SIF (top) and GPU utilisation (bottom) against time in hours, one coloured line per policy,
/// each reduced to at most `columns` points per line (N·SIF: the maximum within a column, so spikes stay visible;
/// utilisation: its time-weighted mean).
[[nodiscard]] std::string render_svg(const SimulationReport& report, int columns = 900);

}  // namespace gpuops::placement
