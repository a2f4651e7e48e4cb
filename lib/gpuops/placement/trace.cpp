// Streaming trace import: one mapper per source format turns rows into TraceJobs, skips and counts the rows a
// simulator cannot use, and stops at the first malformed row (unless lenient).
#include "gpuops/placement/trace.hpp"

#include <algorithm>
#include <array>
#include <fstream>
#include <iostream>
#include <memory>
#include <numeric>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"
#include "gpuops/core/text.hpp"
#include "gpuops/placement/trace_fields.hpp"
#include "gpuops/placement/trace_formats.hpp"

namespace gpuops::placement {
namespace {

using trace_fields::Header;
using trace_fields::RowError;
using trace_formats::tally;

constexpr std::array<std::string_view, 8> format_names = {"canonical", "alibaba-openb", "alibaba-gfs", "elasticflow",
                                                          "tiresias",  "philly",        "helios",      "sacct"};

char delimiter(TraceFormat format) { return format == TraceFormat::sacct ? '|' : ','; }

/// Why a header fits no format, with a hint for the workload files that look like traces but are not.
std::string unrecognized(std::string_view header_line) {
    const Header h(header_line, ',');
    std::string hint;
    if (h.has("num_replicas") && !h.has("duration")) {
        hint = " (a Pollux/Sia workload: it has no duration column, so it cannot be replayed)";
    } else if (const auto first = text::trim(header_line);
               first.size() >= 5 && trace_fields::iequals(first.substr(0, 5), "JobID")) {
        hint = " (sacct output must be --parsable2, with '|' between fields)";
    }
    std::string names;
    for (const auto n : format_names)
        names += std::string(names.empty() ? "" : ", ") + std::string(n);
    return fmt::format("unrecognized trace header {}{}; name the format (one of {})", quote(text::trim(header_line)),
                       hint, names);
}

bool blank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string_view::npos; }

/// Drops later rows with an id seen before: an error naming both lines, or (lenient) counted and skipped.
void check_unique_ids(std::vector<TraceJob>& jobs, const TraceOptions& options, ImportReport& report,
                      std::string_view source) {
    std::vector<std::size_t> order(jobs.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return std::tie(jobs[a].id, jobs[a].source_line) < std::tie(jobs[b].id, jobs[b].source_line);
    });
    std::vector<std::pair<int, int>> duplicates;  // (line, first line of that id)
    std::size_t first = 0;
    for (std::size_t k = 1; k < order.size(); ++k) {
        if (jobs[order[k]].id != jobs[order[first]].id) {
            first = k;
        } else {
            duplicates.emplace_back(jobs[order[k]].source_line, jobs[order[first]].source_line);
        }
    }
    if (duplicates.empty()) return;
    std::sort(duplicates.begin(), duplicates.end());
    if (!options.lenient) {
        const int line = duplicates.front().first;
        const auto it =
            std::find_if(jobs.begin(), jobs.end(), [&](const TraceJob& j) { return j.source_line == line; });
        throw DataError(fmt::format("duplicate job id {} (first on line {})", quote(it->id), duplicates.front().second),
                        {std::string(source), "", line});
    }
    for (const auto& duplicate : duplicates)
        tally(report.skipped, "malformed: duplicate job id", duplicate.first);
    std::erase_if(jobs, [&](const TraceJob& j) {
        return std::binary_search(duplicates.begin(), duplicates.end(), std::pair{j.source_line, 0},
                                  [](const auto& a, const auto& b) { return a.first < b.first; });
    });
}

}  // namespace

std::span<const std::string_view> trace_format_names() { return format_names; }

std::string_view to_string(TraceFormat format) { return format_names.at(static_cast<std::size_t>(format)); }

std::optional<TraceFormat> parse_trace_format(std::string_view name) {
    for (std::size_t i = 0; i < format_names.size(); ++i)
        if (format_names[i] == name) return static_cast<TraceFormat>(i);
    return std::nullopt;
}

std::optional<TraceFormat> detect_format(std::string_view header_line) {
    const bool piped = header_line.find('|') != std::string_view::npos;
    const Header h(header_line, piped ? '|' : ',');
    const auto all = [&](std::initializer_list<std::string_view> names) {
        return std::all_of(names.begin(), names.end(), [&](std::string_view n) { return h.has(n); });
    };
    if (piped) return all({"JobID"}) ? std::optional(TraceFormat::sacct) : std::nullopt;
    if (all({"job_id", "submit_time_s", "num_instances", "gpus_per_instance"})) return TraceFormat::canonical;
    if (all({"name", "num_gpu", "gpu_milli"})) return TraceFormat::alibaba_openb;
    if (all({"gpu_request", "worker_num"})) return TraceFormat::alibaba_gfs;
    if (all({"gpu_num", "node_num", "submit_time"})) return TraceFormat::helios;
    if (all({"submission_time", "num_gpu"})) return TraceFormat::elasticflow;
    if (all({"job_id", "num_gpu", "submit_time"})) return TraceFormat::tiresias;
    if (all({"timestamp", "num_gpus"})) return TraceFormat::philly;
    return std::nullopt;
}

std::string_view to_string(SplitRule rule) {
    switch (rule) {
        case SplitRule::exact: return "exact";
        case SplitRule::round_up: return "round-up";
        case SplitRule::skip: return "skip";
    }
    return "?";
}

std::optional<SplitRule> parse_split_rule(std::string_view name) {
    for (const auto r : {SplitRule::exact, SplitRule::round_up, SplitRule::skip})
        if (to_string(r) == name) return r;
    return std::nullopt;
}

std::optional<JobShape> split_gpus(int total_gpus, int node_gpus, SplitRule rule) {
    if (total_gpus <= node_gpus) return JobShape{1, total_gpus};
    switch (rule) {
        case SplitRule::exact:
            for (int g = node_gpus; g > 1; --g)
                if (total_gpus % g == 0) return JobShape{total_gpus / g, g};
            return JobShape{total_gpus, 1};
        case SplitRule::round_up: return JobShape{(total_gpus + node_gpus - 1) / node_gpus, node_gpus};
        case SplitRule::skip:
            if (total_gpus % node_gpus == 0) return JobShape{total_gpus / node_gpus, node_gpus};
            return std::nullopt;
    }
    return std::nullopt;
}

std::int64_t ImportReport::rows_skipped() const {
    std::int64_t n = 0;
    for (const auto& [reason, t] : skipped)
        n += t.rows;
    return n;
}

Trace read_trace(std::istream& in, std::optional<TraceFormat> format, const TraceOptions& options,
                 std::string_view source_name) {
    if (options.node_gpus < 1) {
        throw UsageError(fmt::format("the node size must be at least 1 GPU, got {}", options.node_gpus));
    }
    Trace trace;
    trace.source = std::string(source_name);
    auto& report = trace.report;
    const std::string source(source_name);

    std::string line;
    int number = 0;
    // The header: the first line that is neither blank nor a '#' comment.
    while (std::getline(in, line)) {
        ++number;
        if (!blank(line) && !line.starts_with('#')) break;
    }
    if (blank(line) || line.starts_with('#')) {
        if (in.bad()) throw IoError(fmt::format("cannot read {}", quote(source)));
        throw DataError("empty trace: no header line", {source, "", number});
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!format) format = detect_format(line);
    if (!format) throw DataError(unrecognized(line), {source, "", number});
    trace.format = *format;
    const char delim = delimiter(*format);
    const Header header(line, delim);
    const trace_formats::Columns columns(header, *format, source, number);
    const auto mapper = trace_formats::make_mapper(*format, columns);
    trace_formats::Shaper shaper(options, report);
    const bool comments = *format == TraceFormat::canonical;

    trace_formats::Fields fields;
    fields.reserve(header.size());
    TraceJob job;
    while (std::getline(in, line)) {
        ++number;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (blank(line) || (comments && line.starts_with('#'))) continue;
        const auto index = report.rows_read++;
        trace_fields::split_fields(line, delim, fields);
        job.source_line = number;
        try {
            if (fields.size() != header.size()) {
                throw RowError{"wrong number of columns",
                               fmt::format("expected {} columns, got {}", header.size(), fields.size())};
            }
            const auto skip = mapper->map(fields, index, job, shaper);
            shaper.end_row(skip.empty(), number);
            if (skip.empty()) {
                trace.jobs.push_back(job);
            } else {
                tally(report.skipped, skip, number);
            }
        } catch (const RowError& e) {
            shaper.end_row(false, number);
            if (!options.lenient) throw DataError(e.message, {source, "", number});
            tally(report.skipped, fmt::format("malformed: {}", e.category), number);
        }
    }
    if (in.bad()) throw IoError(fmt::format("cannot read {}", quote(source)));

    check_unique_ids(trace.jobs, options, report, source);
    auto& jobs = trace.jobs;
    const auto by_submit = [](const TraceJob& a, const TraceJob& b) { return a.submit_s < b.submit_s; };
    if (!std::is_sorted(jobs.begin(), jobs.end(), by_submit)) {
        std::stable_sort(jobs.begin(), jobs.end(), by_submit);
        report.reordered = true;
    }
    if (!jobs.empty()) {
        report.submit_offset_s = jobs.front().submit_s;
        for (auto& j : jobs)
            j.submit_s -= report.submit_offset_s;
    }
    report.jobs_kept = static_cast<std::int64_t>(jobs.size());
    return trace;
}

Trace read_trace_file(std::string_view path, std::optional<TraceFormat> format, const TraceOptions& options) {
    const std::string name = json_io::display_name(path);
    if (path.empty() || path == "-") return read_trace(std::cin, format, options, name);
    std::ifstream in = json_io::open_file(path);
    return read_trace(in, format, options, name);
}

std::vector<std::string> describe(const Trace& trace) {
    const auto& r = trace.report;
    std::vector<std::string> out;
    out.push_back(fmt::format("{} ({} trace): {} rows, {} jobs kept, {} rows skipped", quote(trace.source),
                              to_string(trace.format), r.rows_read, r.jobs_kept, r.rows_skipped()));
    const auto lines = [](const RowTally& t) {
        return fmt::format("line{} {}{}", t.first_lines.size() > 1 ? "s" : "", fmt::join(t.first_lines, ", "),
                           t.rows > static_cast<std::int64_t>(t.first_lines.size()) ? ", ..." : "");
    };
    for (const auto& [reason, t] : r.skipped)
        out.push_back(fmt::format("skipped {} row{}: {} ({})", t.rows, t.rows == 1 ? "" : "s", reason, lines(t)));
    for (const auto& [what, t] : r.conversions)
        out.push_back(fmt::format("converted {} job{}: {} ({})", t.rows, t.rows == 1 ? "" : "s", what, lines(t)));
    if (r.reordered) out.emplace_back("rows were not in submit order: sorted by submit time (stable)");
    if (!trace.jobs.empty() && r.submit_offset_s != 0) {
        out.push_back(
            fmt::format("submit times rebased: the first job arrives at 0 s (source time {} s)", r.submit_offset_s));
    }
    return out;
}

json_io::Json to_json(const Trace& trace) {
    const auto& r = trace.report;
    const auto tallies = [](const std::map<std::string, RowTally, std::less<>>& m) {
        json_io::Json out = json_io::Json::object();
        for (const auto& [reason, t] : m)
            out[reason] = {{"rows", t.rows}, {"first_lines", t.first_lines}};
        return out;
    };
    return {{"source", trace.source},
            {"format", to_string(trace.format)},
            {"rows_read", r.rows_read},
            {"jobs_kept", r.jobs_kept},
            {"rows_skipped", r.rows_skipped()},
            {"skipped", tallies(r.skipped)},
            {"conversions", tallies(r.conversions)},
            {"submit_offset_s", r.submit_offset_s},
            {"reordered", r.reordered}};
}

}  // namespace gpuops::placement
