// Placement policies behind one event-driven interface: COMPASS-ABS and the baselines (first-fit, best-fit,
// spread, random, FGD, periodic global repack). A trace simulator drives the same interface.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuops/placement/abs.hpp"
#include "gpuops/placement/cluster_state.hpp"
#include "gpuops/placement/job.hpp"
#include "gpuops/placement/live_cluster.hpp"

namespace gpuops::placement {

enum class PolicyKind { compass, first_fit, best_fit, spread, random, fgd, repack };
inline constexpr std::array<std::string_view, 7> policy_names = {"compass", "first-fit", "best-fit", "spread",
                                                                 "random",  "fgd",       "repack"};
[[nodiscard]] std::string_view to_string(PolicyKind kind);
[[nodiscard]] std::optional<PolicyKind> policy_from_string(std::string_view name);

/// Where one instance of the placed job goes (node index of the state, node-local GPU ids).
struct Placement {
    int instance = 0;
    NodeId node = no_id;
    std::vector<int> gpu_ids;
    bool operator==(const Placement&) const = default;
};

/// One job arrival: placed (every instance, plus the migrations of running instances it causes) or wait.
struct Decision {
    bool wait = false;
    std::string wait_reason;  ///< why, when waiting
    std::vector<Placement> placements;
    std::vector<Migration> migrations;
};

struct PolicyOptions {
    bool relaxed = false;                          ///< compass: use GPUs outside the ABS slots as a last resort
    CompactRule compact = CompactRule::corrected;  ///< compass
    std::uint64_t seed = 1;                        ///< random
    double repack_period_s = 3600;                 ///< repack: the period of advance()
};

/// A placement policy over a live cluster. Events are cheap: a policy keeps its per-node indexes incremental,
/// so an arrival or departure costs about O(instances · log nodes) (COMPASS: plus its Compact over partial nodes).
class Policy {
public:
    explicit Policy(const ClusterState& state) : cluster_(state) {}
    virtual ~Policy() = default;
    Policy(const Policy&) = delete;
    Policy& operator=(const Policy&) = delete;
    Policy(Policy&&) = delete;
    Policy& operator=(Policy&&) = delete;

    [[nodiscard]] virtual PolicyKind kind() const = 0;

    /// A job arrives: every instance is placed, or none and the decision is to wait (the state is then unchanged).
    /// The name must not be running (InternalError: callers check, see job.hpp).
    Decision place(const JobRequest& job);
    /// A running job departs; returns the migrations its departure causes. DataError when it is not running.
    std::vector<Migration> remove(std::string_view job);
    /// Time passes (seconds from any fixed origin): periodic policies act here (repack every period).
    virtual std::vector<Migration> advance(double now_s);
    /// The policy's periodic action, now (repack: a global repack); nothing for the others.
    std::vector<Migration> rebalance();

    [[nodiscard]] const LiveCluster& cluster() const noexcept { return cluster_; }
    [[nodiscard]] ClusterState snapshot() const { return cluster_.snapshot(); }

protected:
    /// Places every instance of `job` or none; returns no_id, or the index in the job of an instance that fits
    /// nowhere (after every instance placed before it was taken back).
    virtual int do_place(JobId job) = 0;
    virtual void do_remove(JobId job) = 0;
    virtual void do_rebalance() {}
    [[nodiscard]] virtual std::string failure(const JobRequest& job, int instance) const;
    LiveCluster cluster_;
};

/// COMPASS-ABS (abs.hpp): the state's instances are read into ABS as described there.
class CompassPolicy final : public Policy {
public:
    CompassPolicy(const ClusterState& state, const PolicyOptions& options);
    [[nodiscard]] PolicyKind kind() const override { return PolicyKind::compass; }
    [[nodiscard]] const AbsEngine& abs() const noexcept { return abs_; }

private:
    int do_place(JobId job) override;
    void do_remove(JobId job) override;
    [[nodiscard]] std::string failure(const JobRequest& job, int instance) const override;
    AbsEngine abs_;
};

/// The baselines: each instance in turn on one node chosen by its free GPUs, no migration (repack aside).
/// first-fit: the first node (state order) with room; best-fit: the least free GPUs that fit (GFS, Slurm);
/// spread: the most free GPUs (Kubernetes LeastAllocated); random: uniform among nodes with room (seeded);
/// fgd: the least growth of FGD fragmentation, free · share of instances larger than free, the shares being those
/// of the running instances and the job; repack: best-fit, and every period a global best-fit-decreasing repack
/// of all running instances (FFT-like), kept only when every instance fits, nodes matched to keep instances put.
std::unique_ptr<Policy> make_policy(PolicyKind kind, const ClusterState& state, const PolicyOptions& options = {});

}  // namespace gpuops::placement
