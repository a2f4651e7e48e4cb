// The event-driven trace simulator behind `compass-place simulate`: a trace replayed on N nodes of G GPUs through
// one placement policy, FIFO queueing, gang admission, migration cost, and the COMPASS-ABS metrics (AFR, AJCT, AGU
// over busy periods, §5.5 of the paper) plus queueing, makespan and an N·SIF time series.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpuops/placement/phi_star.hpp"
#include "gpuops/placement/policies.hpp"
#include "gpuops/placement/trace.hpp"

namespace gpuops::placement {

/// How the stall of a migration is charged to the job that moves.
enum class MigrationCharge {
    per_event,     ///< once per job per event that moves any of its instances: the whole gang checkpoints and
                   ///< restarts together (COMPASS-ABS §5: "the whole gang stalls")
    per_instance,  ///< once per instance moved: a job with k instances moved in one event stalls k times
};

struct SimulationOptions {
    PolicyKind policy = PolicyKind::compass;
    PolicyOptions policy_options;
    int nodes = 1;
    int gpus_per_node = 8;
    /// Stall of one migration: the migrated job's finish time moves later by this much (checkpoint and restart;
    /// the paper measures about 8 s). Its GPUs stay held meanwhile.
    double migration_cost_s = 8;
    MigrationCharge charge = MigrationCharge::per_event;
    /// false: strict FIFO, the head of the queue blocks every job behind it. true: any queued job that the policy
    /// admits starts, in queue order (the head keeps its place, it is not reserved for).
    bool backfill = false;
    /// Time series: a sample at every multiple of the period up to the makespan; 0: one after every event time.
    double sample_period_s = 0;
    /// Bound of the exact Φ* search per state (min_partial_nodes); past it, N·SIF uses the lower bound of Φ*.
    std::int64_t phi_star_budget = 20'000;
};

/// One sample of the time series: the state holding from the sample time on (after the events at that time when
/// sampled at every event).
struct SimulationSample {
    double t = 0;
    std::int64_t n_sif = 0;      ///< N·SIF = Φ^π − Φ*: partial nodes beyond the fewest any packing could leave
    double gpu_utilisation = 0;  ///< GPUs held by instances / all GPUs (reserved-but-empty GPUs count as free)
    std::int64_t queued = 0;     ///< jobs waiting
    bool operator==(const SimulationSample&) const = default;
};

/// The metrics. Times in seconds from the first submit. T_peak (the busy periods) = {t : the queue is not empty},
/// the queue being judged after all events at a time are processed; the state is piecewise constant between events
/// and integrals are exact over those pieces.
struct SimulationResult {
    std::string policy;  ///< to_string(kind)
    /// AFR = (1/|T_peak|) ∫_{T_peak} SIF(t) dt with SIF = N·SIF / N; 0 when T_peak is empty.
    double afr = 0;
    /// AJCT: mean over completed jobs of finish − submit = queueing + duration + migration stalls. Jobs that never
    /// fit are not in it.
    double ajct_s = 0;
    /// AGU: (1/|T_peak|) ∫_{T_peak} (GPUs held by instances / all GPUs) dt; 0 when T_peak is empty.
    double agu = 0;
    double busy_s = 0;            ///< |T_peak|
    double mean_queue_s = 0;      ///< mean over completed jobs of start − submit
    double p95_queue_s = 0;       ///< the 95th percentile of the same, nearest rank (the ⌈0.95·n⌉-th smallest)
    double makespan_s = 0;        ///< the last finish (the trace starts at 0); 0 when no job ran
    std::int64_t migrations = 0;  ///< instances moved, all events together
    std::int64_t migration_stalls = 0;  ///< migration costs charged (per MigrationCharge)
    std::int64_t jobs = 0;              ///< jobs completed
    /// Jobs dropped because no placement could ever hold them: an instance larger than a node, more instances than
    /// the empty cluster holds, or (a policy's own limits, e.g. strict ABS) refused while the cluster was empty.
    std::int64_t jobs_never_fit = 0;
    std::int64_t max_queued = 0;
    std::int64_t phi_star_inexact = 0;  ///< N·SIF values computed from a lower bound of Φ* (search budget spent)
    std::vector<SimulationSample> samples;
    bool operator==(const SimulationResult&) const = default;
};

/// Called after every event time is processed (departures, advance, arrivals, admissions), with the policy: tests
/// check the cluster's consistency there.
using SimulationObserver = std::function<void(double t, const Policy& policy)>;

/// Replays `trace` (jobs in submit order) on options.nodes × options.gpus_per_node GPUs. At each event time, in
/// order: departures due (finish ≤ t) through Policy::remove, the policy's advance(t) (periodic policies act at
/// the first event at or after their period, not between events), arrivals (submit ≤ t) appended to the queue,
/// then admission (Policy::place) from the queue: its head while it fits (strict FIFO), or every queued job in
/// order (backfill). Every migration a place, remove or advance reports is charged to the job that moved. Same
/// inputs (seed included) give the same result. DataError for nodes < 1, gpus_per_node < 1, a negative cost or
/// sample period.
[[nodiscard]] SimulationResult simulate(const Trace& trace, const SimulationOptions& options,
                                        const SimulationObserver& observer = {});

/// The demand quantile of the η sizing rule (COMPASS-ABS eqs. 12–13): D(t) = Σ_j w_j·g_j over the jobs that would
/// run at t were nothing queued ([submit, submit + duration)); p_η = the smallest level ℓ with D(t) ≤ ℓ for at
/// least a fraction η of the time D is positive. 0 for a trace without demand. Jobs with g > G are left out.
[[nodiscard]] std::int64_t demand_quantile(const Trace& trace, double eta, int gpus_per_node = 8);

/// N(η) = max(⌈p_η / G⌉, N_maxjob), N_maxjob = max over jobs of ⌈w / ⌊G/g⌋⌉ (the nodes the largest job needs
/// alone); at least 1. Jobs with g > G are left out (they never fit). DataError unless 0 < η ≤ 1 and G ≥ 1.
[[nodiscard]] int nodes_for_eta(const Trace& trace, double eta, int gpus_per_node = 8);

}  // namespace gpuops::placement
