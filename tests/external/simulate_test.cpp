// The simulator over slices of the real traces in ../shared/data/traces (Microsoft ITP via ElasticFlow, Alibaba
// openb, Tiresias), every policy on a cluster sized by the η rule (η = 0.9) of the slice: every job accounted for,
// metrics in range and consistent with each other, a consistent cluster after every event, no migration from the
// policies that never migrate, COMPASS's N·SIF ≤ 2 after every event (WCC holds throughout: these traces only ask
// for 1, 2, 4 and 8 GPUs per instance), its AFR ≤ 2/N and ≤ the non-migrating baselines', and deterministic
// replays. Skipped when the traces are absent.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuops/placement/phi_star.hpp"
#include "gpuops/placement/policies.hpp"
#include "gpuops/placement/simulation_report.hpp"
#include "gpuops/placement/simulator.hpp"
#include "gpuops/placement/trace.hpp"

#include "external/data_dir.hpp"

using namespace gpuops;
using placement::PolicyKind;
using placement::SimulationResult;
using placement::Trace;

namespace {

using test::have;
using test::traces_dir;

constexpr double eta = 0.9;
constexpr int node_gpus = 8;
constexpr std::int64_t slice_jobs = 400;

/// The policies that never move a running instance.
bool migrates(PolicyKind kind) { return kind == PolicyKind::compass || kind == PolicyKind::repack; }

/// The first `slice_jobs` jobs of a trace file and the η-sized cluster they replay on.
struct Slice {
    Trace trace;
    int nodes = 0;
    double mean_duration_s = 0;
    double last_submit_s = 0;
    double last_end_s = 0;  ///< max of submit + duration: no job can finish before it
};

Slice load(const std::filesystem::path& file, const placement::TraceOptions& options = {}) {
    Slice s;
    s.trace = placement::slice(placement::read_trace_file(file.string(), std::nullopt, options),
                               placement::TraceSlice{std::nullopt, slice_jobs});
    REQUIRE_FALSE(s.trace.jobs.empty());
    s.nodes = placement::nodes_for_eta(s.trace, eta, node_gpus);
    double sum = 0;
    for (const auto& j : s.trace.jobs) {
        sum += j.duration_s;
        s.last_submit_s = std::max(s.last_submit_s, j.submit_s);
        s.last_end_s = std::max(s.last_end_s, j.submit_s + j.duration_s);
    }
    s.mean_duration_s = sum / static_cast<double>(s.trace.jobs.size());
    return s;
}

/// One replay with what the observer saw after every event time.
struct Replay {
    SimulationResult result;
    std::vector<bool> wcc;          ///< per event time: WCC holds for the running instances
    std::int64_t inconsistent = 0;  ///< event times after which LiveCluster::check found a problem
    std::string first_problem;
};

placement::SimulationOptions options_for(const Slice& s, PolicyKind kind) {
    placement::SimulationOptions o;
    o.policy = kind;
    o.nodes = s.nodes;
    o.gpus_per_node = node_gpus;
    return o;
}

Replay replay(const Slice& s, PolicyKind kind) {
    Replay r;
    r.result = placement::simulate(s.trace, options_for(s, kind), [&](double, const placement::Policy& policy) {
        const auto& c = policy.cluster();
        std::vector<std::int64_t> by_size(node_gpus + 1, 0);
        for (int i = 0; i < c.instance_slots(); ++i) {
            const auto& in = c.instance(i);
            if (in.alive && in.node != placement::no_id) ++by_size[static_cast<std::size_t>(in.gpus)];
        }
        r.wcc.push_back(placement::check_wcc(by_size).holds);
        if (const auto problems = c.check(); !problems.empty()) {
            if (r.inconsistent++ == 0) r.first_problem = problems.front();
        }
    });
    return r;
}

/// Every policy over one slice: the invariants of each replay, then COMPASS against the bound and the baselines.
void check_slice(const Slice& s) {
    const auto jobs = static_cast<std::int64_t>(s.trace.jobs.size());
    INFO(s.trace.source << ": " << jobs << " jobs on " << s.nodes << " nodes");
    std::map<PolicyKind, SimulationResult> results;
    for (const auto name : placement::policy_names) {
        const PolicyKind kind = *placement::policy_from_string(name);
        INFO("policy " << name);
        const Replay run = replay(s, kind);
        const SimulationResult& r = run.result;
        CHECK(r.policy == name);

        // Every job is accounted for; the η-sized cluster holds the largest job alone, so none is dropped.
        CHECK(r.jobs + r.jobs_never_fit == jobs);
        CHECK(r.jobs_never_fit == 0);

        // The cluster stays consistent after every event time.
        CHECK(run.inconsistent == 0);
        CHECK(run.first_problem == std::string());

        // Metrics in range.
        CHECK(r.afr >= 0);
        CHECK(r.afr <= 1);
        CHECK(r.agu >= 0);
        CHECK(r.agu <= 1);
        CHECK(r.mean_queue_s >= 0);
        CHECK(r.p95_queue_s >= 0);
        CHECK(r.p95_queue_s <= r.makespan_s);
        CHECK(r.busy_s >= 0);
        CHECK(r.busy_s <= r.makespan_s);
        CHECK((r.busy_s > 0) == (r.max_queued > 0));  // T_peak is where the queue is not empty
        CHECK(r.phi_star_inexact == 0);               // N·SIF is exact on these slices

        // Every job finished no earlier than it could: the makespan covers every submit + duration.
        CHECK(r.makespan_s >= s.last_submit_s);
        CHECK(r.makespan_s >= s.last_end_s);

        // AJCT = mean queueing + mean duration + the migration stalls spread over the jobs (8 s each, per event).
        CHECK(r.ajct_s >= r.mean_queue_s + s.mean_duration_s * (1 - 1e-12));
        const double stalls_s = static_cast<double>(r.migration_stalls) * options_for(s, kind).migration_cost_s;
        CHECK(r.ajct_s ==
              Approx(r.mean_queue_s + s.mean_duration_s + stalls_s / static_cast<double>(r.jobs)).epsilon(1e-9));

        // Migrations: none from the policies that never migrate; at most one stall per moved instance.
        if (!migrates(kind)) {
            CHECK(r.migrations == 0);
            CHECK(r.migration_stalls == 0);
        }
        CHECK(r.migration_stalls <= r.migrations);

        // The time series: one sample after every event time, in range.
        REQUIRE(r.samples.size() == run.wcc.size());
        REQUIRE_FALSE(r.samples.empty());
        CHECK(r.samples.back().t == r.makespan_s);
        CHECK(
            std::is_sorted(r.samples.begin(), r.samples.end(), [](const auto& a, const auto& b) { return a.t < b.t; }));
        for (const auto& sample : r.samples) {
            INFO("t = " << sample.t);
            REQUIRE(sample.n_sif >= 0);
            REQUIRE(sample.n_sif <= s.nodes);
            REQUIRE(sample.gpu_utilisation >= 0);
            REQUIRE(sample.gpu_utilisation <= 1);
            REQUIRE(sample.queued >= 0);
            REQUIRE(sample.queued <= r.max_queued);
        }

        // WCC holds throughout (instances of 1, 2, 4 and 8 GPUs only), and with it COMPASS keeps N·SIF ≤ 2 after
        // every event (Theorem 1), where the baselines go well past it.
        CHECK(std::all_of(run.wcc.begin(), run.wcc.end(), [](bool w) { return w; }));
        if (kind == PolicyKind::compass) {
            for (std::size_t k = 0; k < r.samples.size(); ++k) {
                if (!run.wcc[k]) continue;
                INFO("t = " << r.samples[k].t);
                REQUIRE(r.samples[k].n_sif <= 2);
            }
        }

        // Deterministic: the same replay again (without an observer) gives the same result, samples included.
        CHECK(placement::simulate(s.trace, options_for(s, kind)) == r);
        results.emplace(kind, r);
    }

    // COMPASS: AFR within the paper's bound, and no more than any baseline that never migrates. (The periodic
    // global repack, itself migrating, does beat it on some ITP slices: not asserted.)
    const SimulationResult& compass = results.at(PolicyKind::compass);
    CHECK(compass.afr <= 2.0 / s.nodes);
    for (const auto& [kind, r] : results) {
        if (migrates(kind)) continue;
        INFO("COMPASS against " << r.policy);
        CHECK(compass.afr <= r.afr + 1e-9);
    }
}

}  // namespace

TEST_CASE("real ITP slices (clusters 02, 07, 10): every policy replays the first 400 jobs consistently",
          "[external][simulate]") {
    const auto dir = traces_dir() / "elasticflow-itp";
    if (!have(dir)) return;
    for (const char* file : {"cluster02.csv", "cluster07.csv", "cluster10.csv"}) {
        const Slice s = load(dir / file);
        check_slice(s);
    }
}

TEST_CASE("real alibaba openb default pod list (fractional pods as 1 GPU): every policy replays the first 400 pods",
          "[external][simulate]") {
    const auto dir = traces_dir() / "alibaba-gpu-v2023";
    if (!have(dir)) return;
    placement::TraceOptions options;
    options.round_up_fractional = true;
    const Slice s = load(dir / "openb_pod_list_default.csv", options);
    CHECK(s.trace.report.skipped.count("fractional GPU share") == 0);
    check_slice(s);
}

TEST_CASE("real tiresias 60_job.csv: every policy replays all 60 jobs", "[external][simulate]") {
    const auto dir = traces_dir() / "tiresias-sim";
    if (!have(dir)) return;
    const Slice s = load(dir / "60_job.csv");
    REQUIRE(s.trace.jobs.size() == 60);
    check_slice(s);
}
