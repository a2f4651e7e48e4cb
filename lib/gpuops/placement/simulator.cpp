// The trace simulator: a min-heap of departures, arrivals in trace order, a FIFO queue, and piecewise-constant
// integrals of N·SIF and GPU use over the busy periods.
#include "gpuops/placement/simulator.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <deque>
#include <map>
#include <queue>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

namespace gpuops::placement {

namespace {

constexpr auto idx(std::int64_t v) { return static_cast<std::size_t>(v); }

/// A job of the trace during the run.
struct JobRun {
    enum class Phase { pending, queued, running, done, dropped };
    Phase phase = Phase::pending;
    double start_s = 0;
    double finish_s = 0;
};

/// A departure due at `finish_s`; stale when the job's finish moved since it was pushed.
struct Due {
    double finish_s;
    std::size_t job;
    bool operator>(const Due& o) const { return finish_s != o.finish_s ? finish_s > o.finish_s : job > o.job; }
};

class Simulator {
public:
    Simulator(const Trace& trace, const SimulationOptions& options, const SimulationObserver& observer)
        : trace_(trace),
          options_(options),
          observer_(observer),
          runs_(trace.jobs.size()),
          node_used_(idx(options.nodes), 0),
          by_size_(idx(options.gpus_per_node) + 1, 0) {
        ClusterState empty;
        empty.nodes.reserve(idx(options.nodes));
        for (int n = 0; n < options.nodes; ++n)
            empty.nodes.push_back({fmt::format("n{}", n), options.gpus_per_node});
        policy_ = make_policy(options.policy, empty, options.policy_options);
        problem_.nodes_by_capacity.assign(idx(options.gpus_per_node) + 1, 0);
        problem_.nodes_by_capacity[idx(options.gpus_per_node)] = options.nodes;
        capacity_ = static_cast<std::int64_t>(options.nodes) * options.gpus_per_node;
        result_.policy = std::string(to_string(options.policy));
        index_.reserve(trace.jobs.size());
        for (std::size_t j = 0; j < trace.jobs.size(); ++j)
            index_.emplace(trace.jobs[j].id, j);
    }

    SimulationResult run() {
        double now = 0;
        double next_sample = 0;
        while (next_arrival_ < trace_.jobs.size() || !due_.empty()) {
            drop_stale();
            double t = next_arrival_ < trace_.jobs.size() ? trace_.jobs[next_arrival_].submit_s : INFINITY;
            if (!due_.empty()) t = std::min(t, due_.top().finish_s);
            if (std::isinf(t)) break;
            integrate(now, t);
            if (options_.sample_period_s > 0) {
                for (; next_sample < t; next_sample += options_.sample_period_s)
                    sample(next_sample);
            }
            now = t;
            step(t);
            if (observer_) observer_(t, *policy_);
            if (options_.sample_period_s <= 0) sample(t);
        }
        if (options_.sample_period_s > 0) {
            for (; next_sample <= result_.makespan_s; next_sample += options_.sample_period_s)
                sample(next_sample);
        }
        finish();
        return std::move(result_);
    }

private:
    [[nodiscard]] std::size_t queued() const { return queue_.size(); }

    void drop_stale() {
        while (!due_.empty()) {
            const Due& d = due_.top();
            const JobRun& r = runs_[d.job];
            if (r.phase == JobRun::Phase::running && r.finish_s == d.finish_s) return;
            due_.pop();
        }
    }

    /// The state between `from` and `to` is the one left by the events at `from`.
    void integrate(double from, double to) {
        if (queue_.empty() || to <= from) return;
        const double dt = to - from;
        result_.busy_s += dt;
        gpu_time_ += dt * static_cast<double>(used_) / static_cast<double>(capacity_);
        sif_time_ += dt * static_cast<double>(n_sif()) / static_cast<double>(options_.nodes);
    }

    void step(double t) {
        bool freed = false;
        // Departures due now, earliest first (ties by trace order).
        for (drop_stale(); !due_.empty() && due_.top().finish_s <= t; drop_stale()) {
            const std::size_t j = due_.top().job;
            due_.pop();
            depart(j, t);
            freed = true;
        }
        if (const auto moved = policy_->advance(t); !moved.empty()) {
            charge(moved);
            freed = true;
        }
        const std::size_t first_new = queue_.size();
        for (; next_arrival_ < trace_.jobs.size() && trace_.jobs[next_arrival_].submit_s <= t; ++next_arrival_)
            arrive(next_arrival_);
        admit(t, freed, first_new);
        result_.max_queued = std::max(result_.max_queued, static_cast<std::int64_t>(queue_.size()));
    }

    void arrive(std::size_t j) {
        const TraceJob& job = trace_.jobs[j];
        const int g = job.gpus_per_instance;
        const int per_node = g > 0 ? options_.gpus_per_node / g : 0;
        if (job.instances < 1 || g < 1 || per_node == 0 ||
            static_cast<std::int64_t>(job.instances) > static_cast<std::int64_t>(per_node) * options_.nodes) {
            runs_[j].phase = JobRun::Phase::dropped;
            ++result_.jobs_never_fit;
            return;
        }
        runs_[j].phase = JobRun::Phase::queued;
        queue_.push_back(j);
    }

    /// Starts queued jobs: the head while it fits, or (backfill) every job that fits. Jobs tried before against a
    /// state no emptier are not tried again unless something was freed (a departure or a migration).
    void admit(double t, bool freed, std::size_t first_new) {
        if (!options_.backfill) {
            // Strict FIFO: the head is retried only when room may have appeared or it is new.
            if (!freed && first_new > 0) return;
            while (!queue_.empty()) {
                const std::size_t j = queue_.front();
                if (!try_start(j, t)) {
                    if (used_ == 0) {  // refused by an empty cluster: it never fits
                        queue_.pop_front();
                        runs_[j].phase = JobRun::Phase::dropped;
                        ++result_.jobs_never_fit;
                        continue;
                    }
                    break;
                }
                queue_.pop_front();
            }
            return;
        }
        // Within one scan the state only fills up: a job of g GPUs per instance refused with w instances is refused
        // with more, and (baselines, which fit iff Σ_n ⌊free_n/g⌋ ≥ w) with larger instances too. Those are
        // skipped until a start changes the state, which keeps a long queue's scans cheap.
        const bool monotone_in_g = options_.policy != PolicyKind::compass;
        std::vector<int> refused(idx(options_.gpus_per_node) + 1, INT_MAX);  // g → fewest instances refused
        const auto skip = [&](const TraceJob& job) {
            const auto g = idx(job.gpus_per_instance);
            if (monotone_in_g) {
                for (std::size_t h = 1; h <= g; ++h)
                    if (refused[h] <= job.instances) return true;
                return false;
            }
            return refused[g] <= job.instances;
        };
        std::deque<std::size_t> left;
        for (std::size_t k = 0; k < queue_.size(); ++k) {
            const std::size_t j = queue_[k];
            const TraceJob& job = trace_.jobs[j];
            if ((freed || k >= first_new) && !skip(job)) {
                if (try_start(j, t)) {
                    std::fill(refused.begin(), refused.end(), INT_MAX);
                    continue;
                }
                int& r = refused[idx(job.gpus_per_instance)];
                r = std::min(r, job.instances);
            }
            left.push_back(j);
        }
        // Whatever an empty cluster refuses never fits (strict ABS limits): drop it rather than wait forever.
        while (used_ == 0 && !left.empty()) {
            const std::size_t j = left.front();
            left.pop_front();
            if (try_start(j, t)) continue;
            runs_[j].phase = JobRun::Phase::dropped;
            ++result_.jobs_never_fit;
        }
        queue_ = std::move(left);
    }

    bool try_start(std::size_t j, double t) {
        const TraceJob& job = trace_.jobs[j];
        const std::int64_t gpus = static_cast<std::int64_t>(job.instances) * job.gpus_per_instance;
        if (used_ + gpus > capacity_) return false;
        const Decision d = policy_->place({job.id, job.instances, job.gpus_per_instance});
        if (d.wait) return false;
        JobRun& r = runs_[j];
        r.phase = JobRun::Phase::running;
        r.start_s = t;
        r.finish_s = t + job.duration_s;
        used_ += gpus;
        by_size_[idx(job.gpus_per_instance)] += job.instances;
        for (const Placement& p : d.placements)
            touch(p.node);
        charge(d.migrations);
        due_.push({r.finish_s, j});
        return true;
    }

    void depart(std::size_t j, double t) {
        const TraceJob& job = trace_.jobs[j];
        const LiveCluster& c = policy_->cluster();
        std::vector<NodeId> nodes;
        for (const InstanceId i : c.job(c.find_job(job.id)).instances)
            nodes.push_back(c.instance(i).node);
        const auto migrations = policy_->remove(job.id);
        for (const NodeId n : nodes)
            touch(n);
        charge(migrations);
        JobRun& r = runs_[j];
        r.phase = JobRun::Phase::done;
        used_ -= static_cast<std::int64_t>(job.instances) * job.gpus_per_instance;
        by_size_[idx(job.gpus_per_instance)] -= job.instances;
        ++result_.jobs;
        const double queue_s = r.start_s - job.submit_s;
        queue_times_.push_back(queue_s);
        jct_sum_ += t - job.submit_s;
        result_.makespan_s = std::max(result_.makespan_s, t);
    }

    /// Each moved job's finish moves later by the cost, once per event or once per instance moved.
    void charge(const std::vector<Migration>& migrations) {
        if (migrations.empty()) return;
        std::map<std::size_t, int> stalls;
        for (const Migration& m : migrations) {
            ++result_.migrations;
            touch(m.from_node);
            touch(m.to_node);
            const auto it = index_.find(m.job);
            if (it == index_.end()) throw InternalError(fmt::format("a migration of unknown job {}", m.job));
            int& s = stalls[it->second];
            s = options_.charge == MigrationCharge::per_instance ? s + 1 : 1;
        }
        for (const auto& [j, count] : stalls) {
            result_.migration_stalls += count;
            JobRun& r = runs_[j];
            if (options_.migration_cost_s <= 0 || r.phase != JobRun::Phase::running) continue;
            r.finish_s += count * options_.migration_cost_s;
            due_.push({r.finish_s, j});
        }
    }

    /// Keeps the partial-node count Φ^π up to date for a node whose instances changed.
    void touch(NodeId n) {
        if (n == no_id) return;
        const int used = policy_->cluster().node(n).used;
        int& old = node_used_[idx(n)];
        const auto partial = [&](int u) { return u > 0 && u < options_.gpus_per_node ? 1 : 0; };
        phi_pi_ += partial(used) - partial(old);
        old = used;
    }

    [[nodiscard]] std::int64_t phi_star() {
        problem_.instances_by_size = by_size_;
        if (options_.gpus_per_node == 8 && check_wcc(by_size_).holds) return used_ % 8 != 0 ? 1 : 0;
        if (const auto it = phi_cache_.find(by_size_); it != phi_cache_.end()) {
            if (!it->second.exact) ++result_.phi_star_inexact;
            return it->second.value;
        }
        const PhiStar p = min_partial_nodes(problem_, options_.phi_star_budget);
        if (phi_cache_.size() > 200'000) phi_cache_.clear();
        phi_cache_.emplace(by_size_, p);
        if (!p.exact) ++result_.phi_star_inexact;
        return p.value;
    }

    [[nodiscard]] std::int64_t n_sif() {
        if (used_ == 0) return 0;
        return std::max<std::int64_t>(0, phi_pi_ - phi_star());
    }

    void sample(double t) {
        result_.samples.push_back({t, n_sif(), static_cast<double>(used_) / static_cast<double>(capacity_),
                                   static_cast<std::int64_t>(queue_.size())});
    }

    void finish() {
        if (result_.busy_s > 0) {
            result_.afr = sif_time_ / result_.busy_s;
            result_.agu = gpu_time_ / result_.busy_s;
        }
        if (!queue_times_.empty()) {
            const auto n = static_cast<double>(queue_times_.size());
            result_.ajct_s = jct_sum_ / n;
            double sum = 0;
            for (const double q : queue_times_)
                sum += q;
            result_.mean_queue_s = sum / n;
            const auto rank = static_cast<std::size_t>(std::ceil(0.95 * n));
            auto nth = queue_times_.begin() + static_cast<std::ptrdiff_t>(std::max<std::size_t>(rank, 1) - 1);
            std::nth_element(queue_times_.begin(), nth, queue_times_.end());
            result_.p95_queue_s = *nth;
        }
    }

    const Trace& trace_;
    const SimulationOptions& options_;
    const SimulationObserver& observer_;
    std::unique_ptr<Policy> policy_;
    std::vector<JobRun> runs_;
    std::unordered_map<std::string, std::size_t> index_;
    std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;
    std::deque<std::size_t> queue_;
    std::size_t next_arrival_ = 0;
    std::int64_t capacity_ = 0;
    std::int64_t used_ = 0;
    std::vector<int> node_used_;
    std::int64_t phi_pi_ = 0;
    std::vector<std::int64_t> by_size_;
    PackingProblem problem_;
    std::map<std::vector<std::int64_t>, PhiStar> phi_cache_;
    double gpu_time_ = 0;
    double sif_time_ = 0;
    double jct_sum_ = 0;
    std::vector<double> queue_times_;
    SimulationResult result_;
};

}  // namespace

SimulationResult simulate(const Trace& trace, const SimulationOptions& options, const SimulationObserver& observer) {
    if (options.nodes < 1) throw DataError(fmt::format("a simulation needs at least 1 node, not {}", options.nodes));
    if (options.gpus_per_node < 1 || options.gpus_per_node > max_node_gpus)
        throw DataError(fmt::format("GPUs per node must be in 1..{}, not {}", max_node_gpus, options.gpus_per_node));
    if (!(options.migration_cost_s >= 0))
        throw DataError(fmt::format("the migration cost must be ≥ 0 s, not {}", options.migration_cost_s));
    if (!(options.sample_period_s >= 0))
        throw DataError(fmt::format("the sample period must be ≥ 0 s, not {}", options.sample_period_s));
    return Simulator(trace, options, observer).run();
}

std::int64_t demand_quantile(const Trace& trace, double eta, int gpus_per_node) {
    if (!(eta > 0 && eta <= 1)) throw DataError(fmt::format("η must be in (0, 1], not {}", eta));
    std::vector<std::pair<double, std::int64_t>> steps;
    for (const TraceJob& j : trace.jobs) {
        if (j.gpus_per_instance < 1 || j.gpus_per_instance > gpus_per_node || j.instances < 1 || !(j.duration_s > 0))
            continue;
        const std::int64_t g = static_cast<std::int64_t>(j.instances) * j.gpus_per_instance;
        steps.emplace_back(j.submit_s, g);
        steps.emplace_back(j.submit_s + j.duration_s, -g);
    }
    std::sort(steps.begin(), steps.end());
    std::map<std::int64_t, double> time_at;  // demand level → time spent there (positive levels only)
    std::int64_t level = 0;
    double support = 0;
    for (std::size_t k = 0; k < steps.size(); ++k) {
        level += steps[k].second;
        if (k + 1 < steps.size() && level > 0) {
            const double dt = steps[k + 1].first - steps[k].first;
            if (dt > 0) {
                time_at[level] += dt;
                support += dt;
            }
        }
    }
    if (support <= 0) return 0;
    double below = 0;
    for (const auto& [l, dt] : time_at) {
        below += dt;
        if (below >= eta * support * (1 - 1e-12)) return l;
    }
    return time_at.rbegin()->first;
}

int nodes_for_eta(const Trace& trace, double eta, int gpus_per_node) {
    if (gpus_per_node < 1) throw DataError(fmt::format("GPUs per node must be ≥ 1, not {}", gpus_per_node));
    const std::int64_t p = demand_quantile(trace, eta, gpus_per_node);
    std::int64_t n = (p + gpus_per_node - 1) / gpus_per_node;
    for (const TraceJob& j : trace.jobs) {
        if (j.gpus_per_instance < 1 || j.gpus_per_instance > gpus_per_node || j.instances < 1) continue;
        const std::int64_t per_node = gpus_per_node / j.gpus_per_instance;
        n = std::max(n, (j.instances + per_node - 1) / per_node);
    }
    return static_cast<int>(std::max<std::int64_t>(n, 1));
}

}  // namespace gpuops::placement
