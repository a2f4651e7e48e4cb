// The policies: COMPASS over the ABS engine, and the node-choice baselines over an index of free GPUs.
#include "gpuops/placement/policies.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

namespace gpuops::placement {

std::string_view to_string(PolicyKind kind) { return policy_names[static_cast<std::size_t>(kind)]; }

std::optional<PolicyKind> policy_from_string(std::string_view name) {
    for (std::size_t k = 0; k < policy_names.size(); ++k)
        if (policy_names[k] == name) return static_cast<PolicyKind>(k);
    return std::nullopt;
}

namespace {

/// The gang context of a failing instance: what was placed (tentatively) before it.
std::string after(int instance) {
    return instance == 0 ? std::string() : fmt::format(" once the {} before it are placed", instance);
}

}  // namespace

// ---- the interface -------------------------------------------------------------------------------------------

Decision Policy::place(const JobRequest& job) {
    cluster_.begin_event();
    const JobId j = cluster_.add_job(job.name, job.instances, job.gpus_per_instance);
    Decision d;
    if (const int failed = do_place(j); failed != no_id) {
        cluster_.drop_job(j);
        d.wait = true;
        d.wait_reason = failure(job, failed);
        return d;
    }
    for (const InstanceId i : cluster_.job(j).instances) {
        const auto& inst = cluster_.instance(i);
        d.placements.push_back({inst.index, inst.node, inst.gpu_ids});
    }
    d.migrations = cluster_.event_migrations();
    return d;
}

std::vector<Migration> Policy::remove(std::string_view job) {
    const JobId j = cluster_.find_job(job);
    if (j == no_id) throw DataError(fmt::format("job {} is not running", quote(job)));
    cluster_.begin_event();
    do_remove(j);
    cluster_.drop_job(j);
    return cluster_.event_migrations();
}

std::vector<Migration> Policy::advance(double /*now_s*/) { return {}; }

std::vector<Migration> Policy::rebalance() {
    cluster_.begin_event();
    do_rebalance();
    return cluster_.event_migrations();
}

std::string Policy::failure(const JobRequest& job, int instance) const {
    int most = 0;
    for (NodeId n = 0; n < cluster_.node_count(); ++n)
        most = std::max(most, cluster_.free_gpus(n));
    return fmt::format("instance {} of {} fits on no node{}: a node has at most {} free GPUs, an instance needs {}",
                       instance, job.instances, after(instance), most, job.gpus_per_instance);
}

// ---- COMPASS ---------------------------------------------------------------------------------------------------

CompassPolicy::CompassPolicy(const ClusterState& state, const PolicyOptions& options)
    : Policy(state), abs_(cluster_, {options.relaxed, options.compact}) {}

int CompassPolicy::do_place(JobId job) {
    if (abs_.arrive(job)) return no_id;
    return cluster_.instance(abs_.last_failure()).index;
}

void CompassPolicy::do_remove(JobId job) { abs_.depart(job); }

std::string CompassPolicy::failure(const JobRequest& job, int instance) const {
    const int g = job.gpus_per_instance;
    const std::string where = g >= 2 ? fmt::format("no slotted node has {0} unprofiled GPUs for its width-{0} slot "
                                                   "and no empty node has {0} GPUs",
                                                   slot_width(g))
                                     : std::string("no slot has a vacancy, no pool node has room and no node is empty");
    return fmt::format("instance {} of {} ({} GPU{}) has no place in ABS{}: {}{}", instance, job.instances, g,
                       g == 1 ? "" : "s", after(instance), where,
                       abs_.options().relaxed ? fmt::format(", and no node has {} free GPUs outside its slots", g)
                                              : std::string(" (strict ABS; --relaxed also uses free GPUs outside "
                                                            "the slots)"));
}

// ---- baselines -------------------------------------------------------------------------------------------------

namespace {

/// splitmix64: a small, fully specified generator, so that a seed gives the same choices everywhere.
class Rng {
public:
    explicit Rng(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31U);
    }
    /// Uniform in [0, n), n > 0 (rejection keeps it unbiased).
    std::uint64_t below(std::uint64_t n) {
        const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
        std::uint64_t x = next();
        while (x >= limit)
            x = next();
        return x % n;
    }

private:
    std::uint64_t state_;
};

class NodePolicy : public Policy {
public:
    NodePolicy(const ClusterState& state, PolicyKind kind, const PolicyOptions& options)
        : Policy(state),
          kind_(kind),
          options_(options),
          rng_(options.seed),
          by_free_(static_cast<std::size_t>(cluster_.largest_capacity()) + 1),
          next_repack_s_(options.repack_period_s) {
        for (NodeId n = 0; n < cluster_.node_count(); ++n)
            by_free_[static_cast<std::size_t>(cluster_.free_gpus(n))].insert(n);
        for (InstanceId i = 0; i < cluster_.instance_slots(); ++i)
            if (cluster_.instance(i).alive && cluster_.instance(i).node != no_id) count(cluster_.instance(i).gpus, 1);
    }
    [[nodiscard]] PolicyKind kind() const override { return kind_; }

    std::vector<Migration> advance(double now_s) override {
        if (kind_ != PolicyKind::repack || options_.repack_period_s <= 0 || now_s < next_repack_s_) return {};
        next_repack_s_ = (std::floor(now_s / options_.repack_period_s) + 1) * options_.repack_period_s;
        return rebalance();
    }

private:
    int do_place(JobId job) override {
        const auto& ids = cluster_.job(job).instances;
        if (kind_ == PolicyKind::fgd) count(cluster_.instance(ids.front()).gpus, static_cast<int>(ids.size()));
        for (std::size_t k = 0; k < ids.size(); ++k) {
            const int g = cluster_.instance(ids[k]).gpus;
            const NodeId n = choose(g);
            if (n == no_id) {
                for (std::size_t b = 0; b < k; ++b)
                    take(ids[b]);
                if (kind_ == PolicyKind::fgd) count(g, -static_cast<int>(ids.size()));
                return static_cast<int>(k);
            }
            put(ids[k], n, cluster_.lowest_free(n, g));
        }
        if (kind_ != PolicyKind::fgd) count(cluster_.instance(ids.front()).gpus, static_cast<int>(ids.size()));
        return no_id;
    }

    void do_remove(JobId job) override {
        for (const InstanceId i : cluster_.job(job).instances) {
            count(cluster_.instance(i).gpus, -1);
            take(i);
        }
    }

    void put(InstanceId i, NodeId n, std::span<const int> ids) {
        by_free_[static_cast<std::size_t>(cluster_.free_gpus(n))].erase(n);
        cluster_.put(i, n, ids);
        by_free_[static_cast<std::size_t>(cluster_.free_gpus(n))].insert(n);
    }
    void take(InstanceId i) {
        const NodeId n = cluster_.instance(i).node;
        by_free_[static_cast<std::size_t>(cluster_.free_gpus(n))].erase(n);
        cluster_.take(i);
        by_free_[static_cast<std::size_t>(cluster_.free_gpus(n))].insert(n);
    }
    void count(int gpus, int delta) {
        if (static_cast<std::size_t>(gpus) >= sizes_.size()) sizes_.resize(static_cast<std::size_t>(gpus) + 1, 0);
        sizes_[static_cast<std::size_t>(gpus)] += delta;
        instances_ += delta;
    }

    /// FGD's fragment of a node with `free` GPUs: free · share of instances larger than free.
    [[nodiscard]] double fragment(int free) const {
        if (instances_ <= 0) return 0;
        std::int64_t larger = 0;
        for (std::size_t g = static_cast<std::size_t>(free) + 1; g < sizes_.size(); ++g)
            larger += sizes_[g];
        return free * static_cast<double>(larger) / static_cast<double>(instances_);
    }

    NodeId choose(int g) {
        const int top = static_cast<int>(by_free_.size()) - 1;
        switch (kind_) {
            case PolicyKind::first_fit: {
                NodeId best = no_id;
                for (int f = g; f <= top; ++f)
                    if (!by_free_[static_cast<std::size_t>(f)].empty()) {
                        const NodeId n = *by_free_[static_cast<std::size_t>(f)].begin();
                        if (best == no_id || n < best) best = n;
                    }
                return best;
            }
            case PolicyKind::best_fit:
            case PolicyKind::repack:
                for (int f = g; f <= top; ++f)
                    if (!by_free_[static_cast<std::size_t>(f)].empty())
                        return *by_free_[static_cast<std::size_t>(f)].begin();
                return no_id;
            case PolicyKind::spread:
                for (int f = top; f >= g; --f)
                    if (!by_free_[static_cast<std::size_t>(f)].empty())
                        return *by_free_[static_cast<std::size_t>(f)].begin();
                return no_id;
            case PolicyKind::random: {
                std::size_t total = 0;
                for (int f = g; f <= top; ++f)
                    total += by_free_[static_cast<std::size_t>(f)].size();
                if (total == 0) return no_id;
                auto r = static_cast<std::size_t>(rng_.below(total));
                for (int f = g; f <= top; ++f) {
                    const auto& bucket = by_free_[static_cast<std::size_t>(f)];
                    if (r < bucket.size()) return *std::next(bucket.begin(), static_cast<std::ptrdiff_t>(r));
                    r -= bucket.size();
                }
                return no_id;
            }
            case PolicyKind::fgd: {
                NodeId best = no_id;
                double best_delta = 0;
                for (int f = g; f <= top; ++f) {
                    const auto& bucket = by_free_[static_cast<std::size_t>(f)];
                    if (bucket.empty()) continue;
                    const double delta = fragment(f - g) - fragment(f);
                    // Ascending f: a tie keeps the tighter fit found first.
                    if (best == no_id || delta < best_delta - 1e-12) {
                        best = *bucket.begin();
                        best_delta = delta;
                    }
                }
                return best;
            }
            case PolicyKind::compass: break;
        }
        throw InternalError("a node policy was asked to be COMPASS");
    }

    void do_rebalance() override {
        if (kind_ == PolicyKind::repack) repack();
    }

    /// Best-fit decreasing of every running instance into empty nodes, then each new node's contents matched to
    /// the old node (of the same capacity) that already holds most of their GPUs, so that fewer instances move.
    void repack() {
        std::vector<InstanceId> running;
        for (InstanceId i = 0; i < cluster_.instance_slots(); ++i)
            if (cluster_.instance(i).alive && cluster_.instance(i).node != no_id) running.push_back(i);
        std::stable_sort(running.begin(), running.end(), [&](InstanceId a, InstanceId b) {
            return cluster_.instance(a).gpus > cluster_.instance(b).gpus;
        });
        const auto nodes = static_cast<std::size_t>(cluster_.node_count());
        std::vector<std::set<NodeId>> scratch(by_free_.size());
        std::vector<int> free(nodes);
        for (NodeId n = 0; n < cluster_.node_count(); ++n) {
            free[static_cast<std::size_t>(n)] = cluster_.node(n).capacity;
            scratch[static_cast<std::size_t>(free[static_cast<std::size_t>(n)])].insert(n);
        }
        std::vector<std::vector<InstanceId>> bins(nodes);
        for (const InstanceId i : running) {
            const int g = cluster_.instance(i).gpus;
            NodeId bin = no_id;
            for (auto f = static_cast<std::size_t>(g); f < scratch.size() && bin == no_id; ++f)
                if (!scratch[f].empty()) bin = *scratch[f].begin();
            if (bin == no_id) return;  // best-fit decreasing does worse than the current placement: keep it
            auto& fb = free[static_cast<std::size_t>(bin)];
            scratch[static_cast<std::size_t>(fb)].erase(bin);
            fb -= g;
            scratch[static_cast<std::size_t>(fb)].insert(bin);
            bins[static_cast<std::size_t>(bin)].push_back(i);
        }
        // Match bins to nodes of the same capacity by the GPUs already in place, largest overlap first.
        std::map<std::pair<std::size_t, NodeId>, int> overlap;
        for (std::size_t b = 0; b < nodes; ++b)
            for (const InstanceId i : bins[b]) {
                const NodeId at = cluster_.instance(i).node;
                if (cluster_.node(at).capacity == cluster_.node(static_cast<NodeId>(b)).capacity)
                    overlap[{b, at}] += cluster_.instance(i).gpus;
            }
        std::vector<std::tuple<int, std::size_t, NodeId>> pairs;
        pairs.reserve(overlap.size());
        for (const auto& [key, gpus] : overlap)
            pairs.emplace_back(gpus, key.first, key.second);
        std::stable_sort(pairs.begin(), pairs.end(),
                         [](const auto& a, const auto& b) { return std::get<0>(a) > std::get<0>(b); });
        std::vector<NodeId> target(nodes, no_id);
        std::vector<char> taken(nodes, 0);
        for (const auto& [gpus, b, n] : pairs) {
            if (target[b] != no_id || taken[static_cast<std::size_t>(n)] != 0) continue;
            target[b] = n;
            taken[static_cast<std::size_t>(n)] = 1;
        }
        for (std::size_t b = 0; b < nodes; ++b) {
            if (target[b] != no_id) continue;
            for (std::size_t n = 0; n < nodes && target[b] == no_id; ++n)
                if (taken[n] == 0 &&
                    cluster_.node(static_cast<NodeId>(n)).capacity == cluster_.node(static_cast<NodeId>(b)).capacity) {
                    target[b] = static_cast<NodeId>(n);
                    taken[n] = 1;
                }
        }
        // Take every instance that changes node first, then put them back: their new GPUs are free by then.
        std::vector<std::pair<InstanceId, NodeId>> moves;
        for (std::size_t b = 0; b < nodes; ++b)
            for (const InstanceId i : bins[b])
                if (cluster_.instance(i).node != target[b]) moves.emplace_back(i, target[b]);
        for (const auto& [i, n] : moves)
            take(i);
        for (const auto& [i, n] : moves)
            put(i, n, cluster_.lowest_free(n, cluster_.instance(i).gpus));
    }

    PolicyKind kind_;
    PolicyOptions options_;
    Rng rng_;
    std::vector<std::set<NodeId>> by_free_;  ///< index f: the nodes with f free GPUs
    std::vector<std::int64_t> sizes_;        ///< running instances by GPU count (FGD's shares)
    std::int64_t instances_ = 0;
    double next_repack_s_;
};

}  // namespace

std::unique_ptr<Policy> make_policy(PolicyKind kind, const ClusterState& state, const PolicyOptions& options) {
    if (kind == PolicyKind::compass) return std::make_unique<CompassPolicy>(state, options);
    return std::make_unique<NodePolicy>(state, kind, options);
}

}  // namespace gpuops::placement
