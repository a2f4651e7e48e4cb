// compass-place: one placement decision for a job in a GPU cluster state under COMPASS-ABS or a baseline policy
// (where each instance goes, the migrations it causes, or that the job must wait: exit 1), and `simulate`, the
// replay of a job trace under several policies with the COMPASS-ABS metrics.
#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gpuops/core/cli.hpp"
#include "gpuops/core/json_io.hpp"
#include "gpuops/core/output.hpp"
#include "gpuops/placement/decision.hpp"
#include "gpuops/placement/job.hpp"
#include "gpuops/placement/simulation_run.hpp"

using namespace gpuops;

namespace {

/// The options of `compass-place simulate`.
struct SimulateArgs {
    std::string trace_path;
    std::string trace_format = "auto";
    int node_gpus = 8;
    std::string split_rule = "exact";
    bool round_up_fractional = false;
    bool lenient = false;
    std::optional<int> nodes;
    std::optional<double> eta;
    std::string policies = "all";
    bool relaxed = false;
    std::uint64_t seed = 1;
    double repack_period_s = 3600;
    double migration_cost_s = 8;
    std::string migration_charge = "per-event";
    bool backfill = false;
    std::optional<int> window_day;
    std::optional<std::int64_t> max_jobs;
    double sample_period_s = 0;
    std::string series_path;
    std::string plot_path;
};

CLI::App* add_simulate(CLI::App& app, SimulateArgs& a) {
    auto* sim = app.add_subcommand(
        "simulate",
        "Replay a job trace on a cluster under one or more policies: FIFO gang admission, migration cost, and the\n"
        "COMPASS-ABS metrics (AFR, AJCT, AGU over the busy periods), queueing delay, makespan and migrations");
    // Options of the tool itself (--format, -o, -v, ...) are accepted after the subcommand too.
    sim->fallthrough();
    sim->footer("The options of compass-place itself (--format json|text, -o, --compact, --timeout, -q, -v) may\n"
                "follow simulate. See compass-place(1), SIMULATION.");
    sim->add_option("--trace", a.trace_path, "The job trace, a CSV file (- for standard input)")
        ->required()
        ->type_name("FILE");
    std::vector<std::string> formats{"auto"};
    for (const auto name : placement::trace_format_names())
        formats.emplace_back(name);
    sim->add_option("--trace-format", a.trace_format,
                    "auto (default: from the header), canonical, alibaba-openb, alibaba-gfs, elasticflow, tiresias,\n"
                    "philly, helios or sacct")
        ->check(CLI::IsMember(formats))
        ->type_name("FORMAT");
    sim->add_option("--node-gpus", a.node_gpus, "GPUs per node, G (default 8)")
        ->check(CLI::Range(1, placement::max_node_gpus))
        ->type_name("G");
    sim->add_option("--split-rule", a.split_rule,
                    "A job of more GPUs than a node: exact (default; w x g, g the largest divisor <= G), round-up\n"
                    "(ceil(total/G) x G) or skip")
        ->check(CLI::IsMember({"exact", "round-up", "skip"}))
        ->type_name("RULE");
    sim->add_flag("--round-up-fractional", a.round_up_fractional,
                  "alibaba-openb: a pod sharing one GPU counts as 1 GPU instead of being skipped");
    sim->add_flag("--lenient", a.lenient, "Skip malformed rows (and count them) instead of stopping at the first");
    auto* nodes = sim->add_option("--nodes", a.nodes, "The cluster: N nodes of G GPUs")
                      ->check(CLI::Range(1, 1'000'000))
                      ->type_name("N");
    sim->add_option("--eta", a.eta,
                    "Size the cluster by the eta rule of COMPASS-ABS: the nodes that hold the demand a fraction\n"
                    "eta of the time (default 0.9 without --nodes)")
        ->check(CLI::Range(0.0, 1.0))
        ->excludes(nodes)
        ->type_name("X");
    sim->add_option("--policy", a.policies,
                    "Comma-separated policies, or all (default): compass, first-fit, best-fit, spread, random, fgd,\n"
                    "repack")
        ->type_name("LIST");
    sim->add_flag("--relaxed", a.relaxed, "compass: when strict ABS has no place, use free GPUs outside the slots");
    sim->add_option("--seed", a.seed, "random: the seed of its choices (default 1)")->type_name("S");
    sim->add_option("--repack-period", a.repack_period_s, "repack: seconds between global repacks (default 3600)")
        ->check(CLI::PositiveNumber)
        ->type_name("S");
    sim->add_option("--migration-cost", a.migration_cost_s,
                    "Seconds a migrated job stalls (checkpoint and restart; default 8)")
        ->check(CLI::NonNegativeNumber)
        ->type_name("S");
    sim->add_option("--migration-charge", a.migration_charge,
                    "per-event (default: the job stalls once per event that moves it) or per-instance")
        ->check(CLI::IsMember({"per-event", "per-instance"}))
        ->type_name("HOW");
    sim->add_flag("--backfill", a.backfill, "Start any queued job that fits, not only the head of the queue");
    sim->add_option("--window-day", a.window_day, "Replay only the jobs submitted on day D of the trace (from 0)")
        ->check(CLI::NonNegativeNumber)
        ->type_name("D");
    sim->add_option("--max-jobs", a.max_jobs, "Replay only the first N jobs (after --window-day)")
        ->check(CLI::PositiveNumber)
        ->type_name("N");
    sim->add_option("--sample-period", a.sample_period_s,
                    "Seconds between time-series samples (default 0: one after every event time)")
        ->check(CLI::NonNegativeNumber)
        ->type_name("S");
    sim->add_option("--series", a.series_path, "Write the time series of every policy to FILE (.csv or .jsonl)")
        ->type_name("FILE");
    sim->add_option("--plot", a.plot_path, "Write an SVG plot of N*SIF and GPU utilisation over time to FILE")
        ->type_name("FILE");
    return sim;
}

/// Writes `text` to `path` atomically (nothing is left behind when it fails).
void write_file(const std::string& path, const std::string& text) {
    Output out(path);
    out.stream() << text;
    out.commit();
}

ExitCode simulate(const cli::Tool& tool, const SimulateArgs& a) {
    placement::SimulationRequest request;
    try {
        request.policies = placement::parse_policy_list(a.policies);
    } catch (const DataError& e) {
        throw UsageError("--policy: " + e.reason());
    }
    std::optional<placement::SeriesFormat> series_format;
    if (!a.series_path.empty()) {
        series_format = placement::series_format_for(a.series_path);
        if (!series_format) throw UsageError("--series: the file name must end in .csv or .jsonl");
    }
    if (a.relaxed && std::ranges::find(request.policies, placement::PolicyKind::compass) == request.policies.end())
        throw UsageError("--relaxed applies to --policy compass only");
    if (a.eta && !(*a.eta > 0)) throw UsageError("--eta: the fraction must be in (0, 1]");

    request.trace_path = a.trace_path;
    request.format = a.trace_format == "auto" ? std::nullopt : placement::parse_trace_format(a.trace_format);
    request.import.node_gpus = a.node_gpus;
    request.import.split = *placement::parse_split_rule(a.split_rule);
    request.import.round_up_fractional = a.round_up_fractional;
    request.import.lenient = a.lenient;
    request.slice = {a.window_day, a.max_jobs};
    request.nodes = a.nodes;
    request.eta = a.eta.value_or(0.9);
    placement::SimulationOptions& o = request.options;
    o.migration_cost_s = a.migration_cost_s;
    o.charge = a.migration_charge == "per-event" ? placement::MigrationCharge::per_event
                                                 : placement::MigrationCharge::per_instance;
    o.backfill = a.backfill;
    o.sample_period_s = a.sample_period_s;
    o.policy_options.relaxed = a.relaxed;
    o.policy_options.seed = a.seed;
    o.policy_options.repack_period_s = a.repack_period_s;
    const auto run = placement::run_simulation(request, [&](bool warning, const std::string& message) {
        if (warning) {
            tool.warn(message);
        } else {
            tool.note(message);
        }
    });
    const placement::SimulationReport& report = run->report;

    // Every output is complete before the first is written; each file is written atomically.
    std::string series;
    if (series_format) {
        std::ostringstream out;
        placement::write_series(out, report.results, *series_format);
        series = std::move(out).str();
    }
    const std::string plot = a.plot_path.empty() ? std::string() : placement::render_svg(report);
    const std::string summary = tool.common().format == "text"
                                    ? placement::render_text(report)
                                    : json_io::dump(placement::to_json(report, tool.name()), !tool.common().compact);
    if (series_format) write_file(a.series_path, series);
    if (!a.plot_path.empty()) write_file(a.plot_path, plot);
    tool.write(summary);
    return ExitCode::ok;
}

}  // namespace

int main(int argc, char** argv) {
    cli::Tool tool("compass-place",
                   "Decide where a job's instances go in a GPU cluster state, under COMPASS-ABS (anchor-based slots,\n"
                   "Compact after every event) or a baseline; exit 1 when the job must wait. `compass-place simulate`\n"
                   "replays a job trace under several policies.",
                   {"json", "text"});
    std::string state_path;
    std::string job_path;
    std::string name = "new-job";
    int instances = 0;
    int gpus = 0;
    std::string policy_name = "compass";
    bool relaxed = false;
    std::uint64_t seed = 1;
    auto& app = tool.app();
    auto* state_opt =
        app.add_option("--state", state_path, "The gpuops.cluster-state document (default: standard input)")
            ->type_name("FILE");
    auto* job_opt =
        app.add_option("--job", job_path, "The job to place, a gpuops.job document {job, instances, gpus_per_instance}")
            ->type_name("FILE");
    auto* instances_opt = app.add_option("--instances", instances, "Instead of --job: the job's instances")
                              ->check(CLI::Range(1, placement::max_job_instances))
                              ->type_name("N");
    auto* gpus_opt = app.add_option("--gpus", gpus, "Instead of --job: GPUs per instance, all on one node")
                         ->check(CLI::Range(1, placement::max_node_gpus))
                         ->type_name("G");
    auto* name_opt =
        app.add_option("--name", name, "Instead of --job: the job's name (default new-job)")->type_name("NAME");
    auto* policy_opt =
        app.add_option("--policy", policy_name, "compass (default), first-fit, best-fit, spread, random, fgd or repack")
            ->check(
                CLI::IsMember(std::vector<std::string>(placement::policy_names.begin(), placement::policy_names.end())))
            ->type_name("POLICY");
    auto* relaxed_opt =
        app.add_flag("--relaxed", relaxed, "compass: when strict ABS has no place, use free GPUs outside the slots");
    auto* seed_opt = app.add_option("--seed", seed, "random: the seed of its choices (default 1)")->type_name("S");
    SimulateArgs sim_args;
    auto* sim = add_simulate(app, sim_args);

    return tool.run(argc, argv, [&] {
        if (sim->parsed()) {
            for (const auto* opt :
                 {state_opt, job_opt, instances_opt, gpus_opt, name_opt, policy_opt, relaxed_opt, seed_opt}) {
                if (opt->count() > 0)
                    throw UsageError(
                        fmt::format("{} is an option of a single decision, not of simulate", opt->get_name()));
            }
            return simulate(tool, sim_args);
        }
        const bool flags = instances_opt->count() + gpus_opt->count() + name_opt->count() > 0;
        if (!job_path.empty() && flags) throw UsageError("give --job FILE or --instances/--gpus/--name, not both");
        if (job_path.empty() && (instances_opt->count() == 0 || gpus_opt->count() == 0))
            throw UsageError("give --job FILE, or --instances N and --gpus G");
        if ((state_path.empty() || state_path == "-") && job_path == "-")
            throw UsageError("only one of --state and --job can be standard input");
        const auto policy = *placement::policy_from_string(policy_name);
        if (relaxed_opt->count() > 0 && policy != placement::PolicyKind::compass)
            throw UsageError("--relaxed applies to --policy compass only");
        if (seed_opt->count() > 0 && policy != placement::PolicyKind::random)
            throw UsageError("--seed applies to --policy random only");

        const auto state =
            placement::cluster_state_from_json(json_io::read_document(state_path), json_io::display_name(state_path));
        placement::JobRequest job{name, instances, gpus};
        if (!job_path.empty()) job = placement::job_from_json(json_io::read_document(job_path), job_path);
        if (const auto bad = placement::misfit(state, job)) {
            if (!job_path.empty()) throw DataError(bad->reason, {json_io::display_name(job_path), "/" + bad->field, 0});
            const char* option = bad->field == "job" ? "--name" : bad->field == "instances" ? "--instances" : "--gpus";
            throw UsageError(fmt::format("{}: {}", option, bad->reason));
        }

        placement::PolicyOptions options;
        options.relaxed = relaxed;
        options.seed = seed;
        const auto report = placement::decide(state, job, policy, options);
        if (report.abs_before && report.abs_before->pinned_instances > 0) {
            tool.note(fmt::format("{} instances of the state do not fit ABS and stay pinned where they run",
                                  report.abs_before->pinned_instances));
        }
        if (tool.common().format == "text") {
            tool.write(placement::render_text(report));
        } else {
            tool.write(json_io::dump(placement::to_json(report, tool.name()), !tool.common().compact));
        }
        if (!report.decision.wait) return ExitCode::ok;
        tool.warn(fmt::format("job {} must wait: {}", quote(job.name), report.decision.wait_reason));
        return ExitCode::negative;
    });
}
