// The occupancy every placement policy keeps: nodes with their GPU ids, jobs and their instances, and the net
// moves of one event (what an operator must migrate), kept incrementally so that an event costs O(its instances).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpuops/placement/cluster_state.hpp"

namespace gpuops::placement {

using NodeId = int;
using InstanceId = int;
using JobId = int;
inline constexpr int no_id = -1;

/// One instance moved by an event: from where it ran to where it runs now (node indexes of the state).
struct Migration {
    std::string job;
    int instance = 0;  ///< index of the instance within its job
    NodeId from_node = no_id;
    std::vector<int> from_gpus;
    NodeId to_node = no_id;
    std::vector<int> to_gpus;
    bool operator==(const Migration&) const = default;
};

class LiveCluster {
public:
    /// GPU holder values besides an instance id.
    static constexpr int free_gpu = -1;
    static constexpr int reserved_gpu = -2;  ///< held back by a policy (an ABS slot's vacancy), not by an instance

    struct Node {
        std::string name;
        int capacity = 0;
        int used = 0;      ///< GPUs held by instances
        int reserved = 0;  ///< GPUs marked reserved_gpu
        std::vector<int> holder;
    };
    struct Instance {
        JobId job = no_id;
        int index = 0;  ///< within its job
        int gpus = 0;
        NodeId node = no_id;  ///< no_id while not placed
        std::vector<int> gpu_ids;
        std::uint64_t born = 0;  ///< the event that created it (its moves in that event are not migrations)
        bool alive = true;
    };
    struct Job {
        std::string name;
        std::vector<InstanceId> instances;
        bool alive = true;
    };

    /// Takes the nodes and placed instances of a validated state; instances without gpu_ids get the lowest
    /// free GPUs of their node, after every listed id is taken.
    explicit LiveCluster(const ClusterState& state);

    [[nodiscard]] int node_count() const noexcept { return static_cast<int>(nodes_.size()); }
    [[nodiscard]] const Node& node(NodeId n) const { return nodes_[static_cast<std::size_t>(n)]; }
    [[nodiscard]] const Instance& instance(InstanceId i) const { return instances_[static_cast<std::size_t>(i)]; }
    [[nodiscard]] int instance_slots() const noexcept { return static_cast<int>(instances_.size()); }
    [[nodiscard]] const Job& job(JobId j) const { return jobs_[static_cast<std::size_t>(j)]; }
    [[nodiscard]] int job_slots() const noexcept { return static_cast<int>(jobs_.size()); }
    [[nodiscard]] JobId find_job(std::string_view name) const;
    [[nodiscard]] int free_gpus(NodeId n) const { return node(n).capacity - node(n).used - node(n).reserved; }
    [[nodiscard]] int largest_capacity() const noexcept { return largest_capacity_; }

    /// A new job with `count` unplaced instances of `gpus` GPUs each. The name must not be running.
    JobId add_job(std::string name, int count, int gpus);
    /// Forgets a job whose instances were all taken off their nodes.
    void drop_job(JobId j);

    /// The `count` lowest GPU ids of node `n` that are free (not held, not reserved).
    [[nodiscard]] std::vector<int> lowest_free(NodeId n, int count) const;
    /// Puts an unplaced instance on `ids` of node `n`; each must be free or reserved.
    void put(InstanceId i, NodeId n, std::span<const int> ids);
    /// Takes a placed instance off its node; its GPUs become reserved (`keep_reserved`) or free.
    void take(InstanceId i, bool keep_reserved = false);
    void reserve(NodeId n, std::span<const int> ids);
    void unreserve(NodeId n, std::span<const int> ids);

    /// Starts an event: moves of instances that existed before it are recorded from here on.
    void begin_event();
    /// The net moves since begin_event(): instances running elsewhere (node or GPUs) than when it began.
    [[nodiscard]] std::vector<Migration> event_migrations() const;
    [[nodiscard]] std::uint64_t event() const noexcept { return event_; }
    /// Where a placed instance ran when the event began (its current place when it did not move).
    [[nodiscard]] std::pair<NodeId, std::span<const int>> origin(InstanceId i) const;

    /// The placed instances, nodes in state order, as a gpuops.cluster-state (GPU ids always listed).
    [[nodiscard]] ClusterState snapshot() const;
    /// Consistency of the holders, counters and instance records; one message per problem.
    [[nodiscard]] std::vector<std::string> check() const;

private:
    struct Origin {
        InstanceId instance;
        NodeId node;
        std::vector<int> gpu_ids;
    };
    Node& node_mut(NodeId n) { return nodes_[static_cast<std::size_t>(n)]; }

    std::vector<Node> nodes_;
    std::vector<Instance> instances_;
    std::vector<Job> jobs_;
    std::unordered_map<std::string, JobId> job_index_;
    int largest_capacity_ = 0;
    std::uint64_t event_ = 0;
    std::vector<Origin> origins_;  ///< first take of each pre-existing instance this event
    std::unordered_map<InstanceId, std::size_t> origin_of_;
};

}  // namespace gpuops::placement
