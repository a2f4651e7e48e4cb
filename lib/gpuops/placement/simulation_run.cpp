// run_simulation: the steps of a replay in order, with what an operator should hear about each.
#include "gpuops/placement/simulation_run.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"

namespace gpuops::placement {

namespace {

/// The jobs to replay; an empty slice is an error that says why.
Trace replayed_jobs(const Trace& imported, const TraceSlice& slice_spec) {
    Trace trace = slice(imported, slice_spec);
    if (!trace.jobs.empty()) return trace;
    if (!slice_spec.window_day) throw DataError(fmt::format("{}: no job to replay", quote(trace.source)));
    const double last = imported.jobs.empty() ? 0 : imported.jobs.back().submit_s;
    throw DataError(fmt::format("{}: no job was submitted on day {} (the last job arrives on day {})",
                                quote(trace.source), *slice_spec.window_day, static_cast<int>(last / 86'400)));
}

ClusterSizing size_cluster(const SimulationRequest& request, const Trace& trace) {
    ClusterSizing sizing;
    sizing.gpus_per_node = request.import.node_gpus;
    if (request.nodes) {
        sizing.nodes = *request.nodes;
        return sizing;
    }
    if (!(request.eta > 0 && request.eta <= 1))
        throw DataError(fmt::format("eta must be in (0, 1], not {}", request.eta));
    sizing.eta = request.eta;
    sizing.demand_quantile = demand_quantile(trace, request.eta, sizing.gpus_per_node);
    sizing.nodes = nodes_for_eta(trace, request.eta, sizing.gpus_per_node);
    return sizing;
}

}  // namespace

std::unique_ptr<SimulationRun> run_simulation(const SimulationRequest& request,
                                              const SimulationDiagnostic& diagnostic) {
    const Trace imported = read_trace_file(request.trace_path, request.format, request.import);
    // Rows left out change what is replayed: a warning. Counts and conversions are notes.
    for (const std::string& line : describe(imported))
        diagnostic(line.starts_with("skipped "), line);

    auto run = std::make_unique<SimulationRun>();
    run->trace = replayed_jobs(imported, request.slice);
    SimulationReport& report = run->report;
    report.trace = &run->trace;
    report.slice = request.slice;
    report.sizing = size_cluster(request, run->trace);
    diagnostic(false, fmt::format("cluster: {} nodes of {} GPUs", report.sizing.nodes, report.sizing.gpus_per_node));

    report.options = request.options;
    report.options.nodes = report.sizing.nodes;
    report.options.gpus_per_node = report.sizing.gpus_per_node;
    for (const PolicyKind kind : request.policies) {
        SimulationOptions options = report.options;
        options.policy = kind;
        const auto started = std::chrono::steady_clock::now();
        report.results.push_back(simulate(run->trace, options));
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
        diagnostic(false, fmt::format("{}: {} jobs replayed in {:.2f} s", to_string(kind), run->trace.jobs.size(),
                                      took.count()));
        if (const auto dropped = report.results.back().jobs_never_fit; dropped > 0) {
            diagnostic(true, fmt::format("{}: {} job{} never fit the cluster and were left out", to_string(kind),
                                         dropped, dropped == 1 ? "" : "s"));
        }
    }
    return run;
}

std::vector<PolicyKind> parse_policy_list(std::string_view list) {
    std::vector<PolicyKind> out;
    if (list == "all") {
        for (const auto name : policy_names)
            out.push_back(*policy_from_string(name));
        return out;
    }
    std::size_t from = 0;
    while (from <= list.size()) {
        const std::size_t comma = std::min(list.find(',', from), list.size());
        const std::string_view name = list.substr(from, comma - from);
        from = comma + 1;
        std::optional<PolicyKind> kind;
        for (const auto known : policy_names) {
            std::string bare(known);
            std::erase(bare, '-');
            if (name == known || name == bare) kind = policy_from_string(known);
        }
        if (!kind) {
            throw DataError(fmt::format("unknown policy {}; expected all or a list of {}", quote(name),
                                        fmt::join(policy_names, ", ")));
        }
        if (std::ranges::find(out, *kind) != out.end()) throw DataError(fmt::format("{} is listed twice", quote(name)));
        out.push_back(*kind);
    }
    return out;
}

}  // namespace gpuops::placement
