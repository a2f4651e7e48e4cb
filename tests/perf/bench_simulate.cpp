// make bench: replays whole real traces (the 10 Microsoft ITP clusters, Alibaba openb, Tiresias) under every
// placement policy on clusters sized by the η rule (η = 0.9), reports AFR, AJCT, AGU and migrations per job with the
// winner of each metric per trace, and times the replays (median of repeated runs) against the replay-speed target:
// all 69,351 ITP jobs under COMPASS in ≤ 5 s. Markdown plus a JSON document; skipped when the traces are absent.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gpuops/core/cli.hpp"
#include "gpuops/core/error.hpp"
#include "gpuops/core/json_io.hpp"
#include "gpuops/core/output.hpp"
#include "gpuops/placement/policies.hpp"
#include "gpuops/placement/simulator.hpp"
#include "gpuops/placement/trace.hpp"

namespace {

namespace fs = std::filesystem;
namespace placement = gpuops::placement;
using gpuops::json_io::Json;
using Clock = std::chrono::steady_clock;

constexpr double eta = 0.9;
constexpr int node_gpus = 8;
constexpr double target_itp_s = 5;
constexpr std::int64_t itp_jobs = 69'351;  ///< the 10 ITP cluster files together
constexpr std::size_t default_repetitions = 5;
constexpr std::string_view compass = "compass";
/// Relative difference under which two metric values tie.
constexpr double tie = 1e-9;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/// Repeated measurements of one time.
struct Samples {
    std::vector<double> values;

    [[nodiscard]] double median() const {
        if (values.empty()) return 0;
        std::vector<double> v = values;
        std::sort(v.begin(), v.end());
        const std::size_t n = v.size();
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }
    [[nodiscard]] double min() const { return values.empty() ? 0 : *std::min_element(values.begin(), values.end()); }
    [[nodiscard]] Json to_json() const { return {{"median", median()}, {"min", min()}, {"samples", values}}; }
};

/// One trace file of the bench.
struct Source {
    std::string name;  ///< as the table shows it
    fs::path file;
    bool round_up_fractional = false;
    bool itp = false;  ///< one of the 10 ITP clusters (the replay-speed target)
};

std::vector<Source> sources(const fs::path& traces) {
    std::vector<Source> all;
    for (int c = 1; c <= 10; ++c) {
        const std::string file = fmt::format("cluster{:02}.csv", c);
        all.push_back({fmt::format("itp/cluster{:02}", c), traces / "elasticflow-itp" / file, false, true});
    }
    all.push_back({"openb/default", traces / "alibaba-gpu-v2023" / "openb_pod_list_default.csv", true, false});
    all.push_back({"tiresias/60_job", traces / "tiresias-sim" / "60_job.csv", false, false});
    return all;
}

/// One policy over one whole trace: the first run's metrics and the time of every run.
struct Cell {
    placement::SimulationResult result;
    Samples replay_s;
    bool deterministic = true;  ///< every repetition gave the first one's result
};

/// The policies that reach a metric's best value (ties included), in policy_names order.
struct Winners {
    std::vector<std::string> afr;
    std::vector<std::string> ajct;
    std::vector<std::string> agu;
};

struct TraceRun {
    Source source;
    std::string format;
    std::int64_t jobs = 0;
    std::int64_t rows_skipped = 0;
    int nodes = 0;
    std::int64_t demand_quantile = 0;
    Samples import_s;
    Samples sizing_s;
    std::vector<Cell> cells;  ///< in policy_names order
    Winners winners;
};

bool ties(double a, double best) { return std::abs(a - best) <= tie * std::max(std::abs(best), 1.0); }

Winners winners(const std::vector<Cell>& cells) {
    Winners w;
    double afr = cells.front().result.afr;
    double ajct = cells.front().result.ajct_s;
    double agu = cells.front().result.agu;
    for (const auto& c : cells) {
        afr = std::min(afr, c.result.afr);
        ajct = std::min(ajct, c.result.ajct_s);
        agu = std::max(agu, c.result.agu);
    }
    for (const auto& c : cells) {
        if (ties(c.result.afr, afr)) w.afr.push_back(c.result.policy);
        if (ties(c.result.ajct_s, ajct)) w.ajct.push_back(c.result.policy);
        if (ties(c.result.agu, agu)) w.agu.push_back(c.result.policy);
    }
    return w;
}

TraceRun run_trace(const gpuops::cli::Tool& tool, const Source& source, std::size_t repetitions) {
    TraceRun t;
    t.source = source;
    placement::TraceOptions options;
    options.node_gpus = node_gpus;
    options.round_up_fractional = source.round_up_fractional;
    placement::Trace trace;
    for (std::size_t r = 0; r < repetitions; ++r) {
        auto start = Clock::now();
        trace = placement::read_trace_file(source.file.string(), std::nullopt, options);
        t.import_s.values.push_back(seconds_since(start));
        start = Clock::now();
        t.nodes = placement::nodes_for_eta(trace, eta, node_gpus);
        t.sizing_s.values.push_back(seconds_since(start));
    }
    t.format = std::string(placement::to_string(trace.format));
    t.jobs = static_cast<std::int64_t>(trace.jobs.size());
    t.rows_skipped = trace.report.rows_skipped();
    t.demand_quantile = placement::demand_quantile(trace, eta, node_gpus);
    for (const auto name : placement::policy_names) {
        placement::SimulationOptions o;  // the CLI's defaults: 8 s per migration event, FIFO, a sample per event
        o.policy = *placement::policy_from_string(name);
        o.nodes = t.nodes;
        o.gpus_per_node = node_gpus;
        Cell cell;
        for (std::size_t r = 0; r < repetitions; ++r) {
            const auto start = Clock::now();
            placement::SimulationResult result = placement::simulate(trace, o);
            cell.replay_s.values.push_back(seconds_since(start));
            if (r == 0) {
                cell.result = std::move(result);
            } else if (!(result == cell.result)) {
                cell.deterministic = false;
            }
        }
        tool.note(fmt::format("{}: {} jobs on {} nodes, {}: AFR {:.4f}, replay {:.3f} s", source.name, t.jobs, t.nodes,
                              name, cell.result.afr, cell.replay_s.median()));
        t.cells.push_back(std::move(cell));
    }
    t.winners = winners(t.cells);
    return t;
}

const Cell* find_cell(const TraceRun& t, std::string_view policy) {
    for (const auto& c : t.cells)
        if (c.result.policy == policy) return &c;
    return nullptr;
}

double per_job(std::int64_t count, std::int64_t jobs) {
    return jobs > 0 ? static_cast<double>(count) / static_cast<double>(jobs) : 0;
}

/// The replay-speed target over the ITP files: per repetition, the sum of each file's COMPASS replay.
struct Speed {
    std::size_t files = 0;
    std::int64_t jobs = 0;
    Samples replay_s;
    Samples import_s;
    [[nodiscard]] bool complete() const { return files == 10 && jobs == itp_jobs; }
    [[nodiscard]] bool pass() const { return complete() && replay_s.median() <= target_itp_s; }
};

Speed itp_speed(const std::vector<TraceRun>& runs, std::size_t repetitions) {
    Speed s;
    s.replay_s.values.assign(repetitions, 0);
    s.import_s.values.assign(repetitions, 0);
    for (const auto& t : runs) {
        if (!t.source.itp) continue;
        ++s.files;
        s.jobs += t.jobs;
        const Cell* c = find_cell(t, compass);
        for (std::size_t r = 0; r < repetitions; ++r) {
            s.replay_s.values[r] += c->replay_s.values[r];
            s.import_s.values[r] += t.import_s.values[r];
        }
    }
    return s;
}

std::string format_s(double s) {
    if (s < 1) return fmt::format("{:.1f} ms", s * 1e3);
    return fmt::format("{:.2f} s", s);
}

std::string format_jct(double s) { return fmt::format("{:.0f} s", s); }

std::string list(const std::vector<std::string>& names) {
    return names.size() == 1 ? names.front() : fmt::format("{} (tie)", fmt::join(names, ", "));
}

bool has_compass(const std::vector<std::string>& names) {
    return std::find(names.begin(), names.end(), compass) != names.end();
}

/// "compass" or "repack (0.0177), compass 0.0206": the winner and, when COMPASS is not among them, its value.
std::string verdict(const std::vector<std::string>& names, const TraceRun& t, double (*value)(const Cell&),
                    std::string (*show)(double)) {
    const Cell* best = find_cell(t, names.front());
    if (has_compass(names)) return fmt::format("**{}** ({})", list(names), show(value(*best)));
    const Cell* c = find_cell(t, compass);
    return fmt::format("{} ({}); compass {}", list(names), show(value(*best)), show(value(*c)));
}

std::string show_fraction(double v) { return fmt::format("{:.4f}", v); }
double afr_of(const Cell& c) { return c.result.afr; }
double ajct_of(const Cell& c) { return c.result.ajct_s; }
double agu_of(const Cell& c) { return c.result.agu; }

/// The policies that never move a running instance.
bool migrates(std::string_view policy) { return policy == compass || policy == "repack"; }

/// COMPASS against the best baseline that never migrates on one metric: "wins: 0.0206 vs 0.1330 (best-fit)".
std::string against_static(const TraceRun& t, double (*value)(const Cell&), std::string (*show)(double),
                           bool lower_is_better) {
    const Cell* best = nullptr;
    for (const auto& c : t.cells) {
        if (migrates(c.result.policy)) continue;
        if (best == nullptr || (lower_is_better ? value(c) < value(*best) : value(c) > value(*best))) best = &c;
    }
    const Cell* c = find_cell(t, compass);
    if (best == nullptr || c == nullptr) return "—";
    const double ours = value(*c);
    const double theirs = value(*best);
    const char* outcome = ties(ours, theirs) ? "tie" : ((ours < theirs) == lower_is_better ? "**wins**" : "loses");
    return fmt::format("{}: {} vs {} ({})", outcome, show(ours), show(theirs), best->result.policy);
}

Json cell_json(const Cell& c, std::int64_t jobs) {
    const auto& r = c.result;
    return {{"policy", r.policy},
            {"afr", r.afr},
            {"ajct_s", r.ajct_s},
            {"agu", r.agu},
            {"mean_queue_s", r.mean_queue_s},
            {"p95_queue_s", r.p95_queue_s},
            {"makespan_s", r.makespan_s},
            {"busy_s", r.busy_s},
            {"migrations", r.migrations},
            {"migrations_per_job", per_job(r.migrations, jobs)},
            {"migration_stalls", r.migration_stalls},
            {"jobs", r.jobs},
            {"jobs_never_fit", r.jobs_never_fit},
            {"phi_star_inexact", r.phi_star_inexact},
            {"replay_s", c.replay_s.to_json()},
            {"deterministic", c.deterministic}};
}

Json report_json(const std::vector<TraceRun>& runs, const Speed& speed, std::size_t repetitions,
                 const std::vector<std::string>& missing, const fs::path& traces) {
    Json doc = gpuops::json_io::make_header("gpuops.bench_simulate", 1, "bench_simulate");
    doc["build_type"] = GPUOPS_BUILD_TYPE;
    doc["traces_dir"] = traces.string();
    doc["eta"] = eta;
    doc["gpus_per_node"] = node_gpus;
    doc["repetitions"] = repetitions;
    doc["method"] = {
        {"cluster", "nodes_for_eta(trace, 0.9, 8) on the whole trace"},
        {"options", "SimulationOptions defaults (the CLI's): strict FIFO, 8 s per migration event, a sample after "
                    "every event time"},
        {"replay_s", "placement::simulate alone, median of the repetitions; import and sizing are timed apart"},
        {"winners", "the policies reaching the best value (lowest AFR and AJCT, highest AGU), ties within 1e-9"}};
    Json items = Json::array();
    for (const auto& t : runs) {
        Json cells = Json::array();
        for (const auto& c : t.cells)
            cells.push_back(cell_json(c, t.jobs));
        items.push_back({{"trace", t.source.name},
                         {"file", t.source.file.string()},
                         {"format", t.format},
                         {"round_up_fractional", t.source.round_up_fractional},
                         {"jobs", t.jobs},
                         {"rows_skipped", t.rows_skipped},
                         {"nodes", t.nodes},
                         {"demand_quantile_gpus", t.demand_quantile},
                         {"import_s", t.import_s.to_json()},
                         {"sizing_s", t.sizing_s.to_json()},
                         {"results", std::move(cells)},
                         {"winners", {{"afr", t.winners.afr}, {"ajct", t.winners.ajct}, {"agu", t.winners.agu}}}});
    }
    doc["traces"] = std::move(items);
    doc["missing"] = missing;
    doc["itp_compass"] = {{"files", speed.files},
                          {"jobs", speed.jobs},
                          {"replay_s", speed.replay_s.to_json()},
                          {"import_s", speed.import_s.to_json()},
                          {"target_s", target_itp_s},
                          {"ratio", speed.replay_s.median() / target_itp_s},
                          {"pass", speed.complete() ? Json(speed.pass()) : Json(nullptr)}};
    doc["pass"] = speed.pass();
    return doc;
}

std::string report_markdown(const std::vector<TraceRun>& runs, const Speed& speed, std::size_t repetitions,
                            const std::vector<std::string>& missing, std::string_view json_path) {
    std::string md = fmt::format("## compass-place simulate on whole real traces (η = {} sizing, {}-GPU nodes; "
                                 "replay: median of {} runs; build {})\n\n",
                                 eta, node_gpus, repetitions, GPUOPS_BUILD_TYPE);
    md += "| trace | jobs | nodes | policy | AFR | AJCT | AGU | migrations/job | replay |\n"
          "|---|---:|---:|---|---:|---:|---:|---:|---:|\n";
    for (const auto& t : runs) {
        for (const auto& c : t.cells) {
            const auto& r = c.result;
            md += fmt::format("| {} | {} | {} | {} | {:.4f} | {} | {:.4f} | {:.3f} | {}{} |\n", t.source.name, t.jobs,
                              t.nodes, r.policy, r.afr, format_jct(r.ajct_s), r.agu, per_job(r.migrations, t.jobs),
                              format_s(c.replay_s.median()), c.deterministic ? "" : " (NOT DETERMINISTIC)");
            if (r.jobs_never_fit > 0)
                md += fmt::format("|  |  |  | ↳ {} jobs never fit |  |  |  |  |  |\n", r.jobs_never_fit);
        }
    }
    md += "\n### Best policy per trace (bold: COMPASS among the best)\n\n"
          "| trace | AFR (lowest) | COMPASS AFR ≤ 2/N | AJCT (lowest) | AGU (highest) |\n|---|---|---|---|---|\n";
    int afr_wins = 0;
    int ajct_wins = 0;
    int agu_wins = 0;
    for (const auto& t : runs) {
        afr_wins += has_compass(t.winners.afr) ? 1 : 0;
        ajct_wins += has_compass(t.winners.ajct) ? 1 : 0;
        agu_wins += has_compass(t.winners.agu) ? 1 : 0;
        const double bound = 2.0 / t.nodes;
        md += fmt::format(
            "| {} | {} | {} ≤ {:.4f}: {} | {} | {} |\n", t.source.name,
            verdict(t.winners.afr, t, &afr_of, &show_fraction), show_fraction(find_cell(t, compass)->result.afr), bound,
            find_cell(t, compass)->result.afr <= bound ? "yes" : "**no**",
            verdict(t.winners.ajct, t, &ajct_of, &format_jct), verdict(t.winners.agu, t, &agu_of, &show_fraction));
    }
    md += fmt::format("\nCOMPASS is among the best on {} of {} traces for AFR, {} for AJCT, {} for AGU.\n", afr_wins,
                      runs.size(), ajct_wins, agu_wins);

    md += "\n### COMPASS against the best baseline that never migrates (first-fit, best-fit, spread, random, fgd)\n\n"
          "| trace | AFR | AJCT | AGU |\n|---|---|---|---|\n";
    for (const auto& t : runs) {
        md += fmt::format("| {} | {} | {} | {} |\n", t.source.name, against_static(t, &afr_of, &show_fraction, true),
                          against_static(t, &ajct_of, &format_jct, true),
                          against_static(t, &agu_of, &show_fraction, false));
    }

    md += "\n### Replay speed\n\n| what | measured (median) | min | target | ratio | result |\n"
          "|---|---:|---:|---:|---:|---|\n";
    const std::string scope =
        fmt::format("ITP, {} files, {} jobs, compass, each file on its own η-sized cluster", speed.files, speed.jobs);
    md +=
        fmt::format("| replay: {} | {} | {} | ≤ {:.0f} s | {:.3f}× | {} |\n", scope, format_s(speed.replay_s.median()),
                    format_s(speed.replay_s.min()), target_itp_s, speed.replay_s.median() / target_itp_s,
                    speed.complete() ? (speed.pass() ? "PASS" : "FAIL") : "NOT MEASURED (ITP files missing)");
    md += fmt::format("| import: the same {} files (read_trace_file, apart from the replay) | {} | {} | — | — | "
                      "— |\n",
                      speed.files, format_s(speed.import_s.median()), format_s(speed.import_s.min()));
    if (!missing.empty()) md += fmt::format("\nMissing traces (not replayed): {}\n", fmt::join(missing, ", "));
    if (!json_path.empty()) md += fmt::format("\nJSON report: {}\n", json_path);
    return md;
}

fs::path traces_dir() {
    const char* env = std::getenv("GPUOPS_EXTERNAL_DATA");
    return fs::path(env != nullptr && *env != '\0' ? env : GPUOPS_DEFAULT_EXTERNAL_DATA) / "traces";
}

}  // namespace

int main(int argc, char** argv) {
    gpuops::cli::Tool tool("bench_simulate",
                           "Replay whole real traces (ITP, Alibaba openb, Tiresias) under every placement policy\n"
                           "(make bench): AFR, AJCT, AGU, migrations and replay time; skipped without the traces.",
                           {"markdown", "json"});
    std::string json_path = "bench-simulate.json";
    std::size_t repetitions = default_repetitions;
    tool.app()
        .add_option("--json", json_path,
                    "Where to write the gpuops.bench_simulate document (default "
                    "bench-simulate.json)")
        ->type_name("FILE");
    tool.app().add_option("--repetitions", repetitions,
                          "Runs per trace and policy (default 5); the median is "
                          "reported");
    return tool.run(argc, argv, [&] {
        repetitions = std::max<std::size_t>(repetitions, 1);
        const fs::path traces = traces_dir();
        std::vector<TraceRun> runs;
        std::vector<std::string> missing;
        for (const auto& source : sources(traces)) {
            if (!fs::is_regular_file(source.file)) {
                missing.push_back(source.name);
                continue;
            }
            runs.push_back(run_trace(tool, source, repetitions));
        }
        if (runs.empty()) {
            tool.write(fmt::format("bench_simulate: skipped: no traces in '{}' (set GPUOPS_EXTERNAL_DATA to the "
                                   "shared data folder)\n",
                                   traces.string()));
            return gpuops::ExitCode::ok;
        }
        const Speed speed = itp_speed(runs, repetitions);
        const Json doc = report_json(runs, speed, repetitions, missing, traces);
        gpuops::Output json_out(json_path);
        gpuops::json_io::write(json_out.stream(), doc);
        json_out.commit();
        // A missed target is a finding, not a failure of the benchmark: FAIL in the table, exit 0.
        if (tool.common().format == "json") {
            tool.write(gpuops::json_io::dump(doc, !tool.common().compact));
        } else {
            tool.write(report_markdown(runs, speed, repetitions, missing, json_out.is_stdout() ? "" : json_path));
        }
        return gpuops::ExitCode::ok;
    });
}
