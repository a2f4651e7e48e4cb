// Job traces for the simulator: the canonical CSV and importers for public DLT traces and Slurm sacct output.
// Column mappings, skip rules and errors per format: share/gpuops/doc/traces.md.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuops/core/json_io.hpp"

namespace gpuops::placement {

/// One job to replay: `instances` gang instances of `gpus_per_instance` GPUs each, all GPUs of an instance on one
/// node. Times in seconds; submit times are relative to the first job of the trace.
struct TraceJob {
    std::string id;
    double submit_s = 0;
    int instances = 0;
    int gpus_per_instance = 0;
    double duration_s = 0;
    int source_gpus = 0;  ///< GPUs the source row asked for (differs from instances × gpus when padded)
    int source_line = 0;  ///< line of the source file, for messages
    bool operator==(const TraceJob&) const = default;
};

enum class TraceFormat {
    canonical,      ///< job_id,submit_time_s,num_instances,gpus_per_instance,duration_s (ours)
    alibaba_openb,  ///< Alibaba cluster-trace-gpu-v2023 openb_pod_list_*.csv (one pod = one job)
    alibaba_gfs,    ///< Alibaba cluster-trace-v2026-spot-gpu job_info_df.csv (the COMPASS-ABS "GFS" trace)
    elasticflow,    ///< Microsoft ITP traces from ElasticFlow: job_id,submission_time,duration,num_gpu
    tiresias,       ///< Tiresias simulator traces: job_id,num_gpu,submit_time,...,duration
    philly,         ///< Philly-style: timestamp,duration,num_gpus (Sia's philly.csv)
    helios,         ///< Helios/Acme cluster logs: job_id,gpu_num,node_num,submit_time,duration,...
    sacct,          ///< Slurm `sacct --parsable2` with JobID, Submit, Start, End and AllocTRES
};

/// The names a CLI takes for --trace-format ("canonical", "alibaba-openb", ...), in enum order.
[[nodiscard]] std::span<const std::string_view> trace_format_names();
[[nodiscard]] std::string_view to_string(TraceFormat format);
/// nullopt for an unknown name.
[[nodiscard]] std::optional<TraceFormat> parse_trace_format(std::string_view name);
/// The format whose columns the header line has (case-insensitive column names); nullopt when none fits.
[[nodiscard]] std::optional<TraceFormat> detect_format(std::string_view header_line);

/// How a job of more GPUs than a node holds becomes equal instances of at most G GPUs.
enum class SplitRule {
    exact,     ///< w × g with g the largest divisor of the total that is ≤ G (keeps the GPU count: 12 → 2 × 6)
    round_up,  ///< ⌈total/G⌉ × G (pads: 12 → 2 × 8; the rule of the Helios and Sia notes)
    skip,      ///< keep only totals that are a multiple of G; skip the row otherwise
};
[[nodiscard]] std::string_view to_string(SplitRule rule);  ///< "exact", "round-up", "skip"
[[nodiscard]] std::optional<SplitRule> parse_split_rule(std::string_view name);

struct JobShape {
    int instances = 0;
    int gpus_per_instance = 0;
    bool operator==(const JobShape&) const = default;
};
/// The instances `total_gpus` (≥ 1) become on nodes of `node_gpus`: one instance when it fits, else per `rule`;
/// nullopt when the rule is skip and the total is not a multiple of the node size.
[[nodiscard]] std::optional<JobShape> split_gpus(int total_gpus, int node_gpus, SplitRule rule);

struct TraceOptions {
    int node_gpus = 8;  ///< G: the node size instances must fit in
    SplitRule split = SplitRule::exact;
    bool round_up_fractional = false;  ///< openb pods sharing one GPU (gpu_milli < 1000) count as 1 GPU, not skipped
    bool lenient = false;              ///< malformed rows are skipped and counted instead of a DataError
};

/// Rows with one outcome: how many, and the first few line numbers as examples.
struct RowTally {
    std::int64_t rows = 0;
    std::vector<int> first_lines;  ///< at most RowTally::max_examples, in file order
    static constexpr std::size_t max_examples = 3;
    bool operator==(const RowTally&) const = default;
};

/// What an import did. Reasons are short fixed phrases ("no GPUs", "never scheduled", "malformed: negative duration").
struct ImportReport {
    std::int64_t rows_read = 0;  ///< data rows; header, blank and comment lines are not rows
    std::int64_t jobs_kept = 0;
    std::map<std::string, RowTally, std::less<>> skipped;      ///< reason → rows left out
    std::map<std::string, RowTally, std::less<>> conversions;  ///< change applied → jobs kept with it
    double submit_offset_s = 0;  ///< source submit time of the first job, subtracted from every submit time
    bool reordered = false;      ///< the rows were not in submit order and have been sorted (stable)
    [[nodiscard]] std::int64_t rows_skipped() const;
    bool operator==(const ImportReport&) const = default;
};

struct Trace {
    std::vector<TraceJob> jobs;  ///< sorted by submit time (stable), the first at 0
    TraceFormat format = TraceFormat::canonical;
    std::string source;  ///< the name used in messages
    ImportReport report;
};

/// Reads a trace from `in`, streaming it row by row; `format` nullopt means detect it from the header line.
/// Malformed rows (missing or unparsable value, non-integer GPU count, negative duration, wrong number of columns,
/// duplicate job id) throw a DataError naming `source_name` and the line, unless options.lenient. A header without a
/// required column always throws (line 1).
[[nodiscard]] Trace read_trace(std::istream& in, std::optional<TraceFormat> format, const TraceOptions& options,
                               std::string_view source_name);
/// The same from a file ("-" or "" is stdin). Missing file: InputMissingError; unreadable: IoError.
[[nodiscard]] Trace read_trace_file(std::string_view path, std::optional<TraceFormat> format,
                                    const TraceOptions& options = {});

/// Human notes for stderr: one line for the counts, one per skip reason and conversion, one for rebasing/sorting.
[[nodiscard]] std::vector<std::string> describe(const Trace& trace);
/// {"source", "format", "rows_read", "jobs_kept", "rows_skipped", "skipped": {reason: {"rows", "first_lines"}},
///  "conversions": {...}, "submit_offset_s", "reordered"}
[[nodiscard]] json_io::Json to_json(const Trace& trace);

}  // namespace gpuops::placement
