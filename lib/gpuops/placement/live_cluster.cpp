// The occupancy of a cluster under a placement policy, and the net migrations of one event.
#include "gpuops/placement/live_cluster.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace gpuops::placement {

LiveCluster::LiveCluster(const ClusterState& state) {
    std::unordered_map<std::string_view, NodeId> node_of;
    nodes_.reserve(state.nodes.size());
    for (const auto& n : state.nodes) {
        node_of.emplace(n.name, static_cast<NodeId>(nodes_.size()));
        nodes_.push_back({n.name, n.gpus, 0, 0, std::vector<int>(static_cast<std::size_t>(n.gpus), free_gpu)});
        largest_capacity_ = std::max(largest_capacity_, n.gpus);
    }
    instances_.reserve(state.instances.size());
    // Listed ids first, so that the ones assigned below never take a GPU some later instance lists.
    std::vector<InstanceId> without_ids;
    for (const auto& inst : state.instances) {
        JobId j = find_job(inst.job);
        if (j == no_id) {
            j = static_cast<JobId>(jobs_.size());
            jobs_.push_back({inst.job, {}, true});
            job_index_.emplace(inst.job, j);
        }
        auto& job = jobs_[static_cast<std::size_t>(j)];
        const auto id = static_cast<InstanceId>(instances_.size());
        instances_.push_back({j, static_cast<int>(job.instances.size()), inst.gpus, no_id, {}, 0, true});
        job.instances.push_back(id);
        const NodeId n = node_of.at(inst.node);
        if (inst.gpu_ids.empty()) {
            without_ids.push_back(id);
            instances_.back().node = n;  // where it runs; its GPUs are chosen once every listed id is held
        } else {
            put(id, n, inst.gpu_ids);
        }
    }
    for (const InstanceId id : without_ids) {
        auto& inst = instances_[static_cast<std::size_t>(id)];
        const NodeId n = inst.node;
        inst.node = no_id;
        put(id, n, lowest_free(n, inst.gpus));
    }
}

JobId LiveCluster::find_job(std::string_view name) const {
    const auto found = job_index_.find(std::string(name));
    return found == job_index_.end() ? no_id : found->second;
}

JobId LiveCluster::add_job(std::string name, int count, int gpus) {
    if (find_job(name) != no_id) throw InternalError(fmt::format("job {} is already running", quote(name)));
    const auto j = static_cast<JobId>(jobs_.size());
    job_index_.emplace(name, j);
    jobs_.push_back({std::move(name), {}, true});
    auto& job = jobs_.back();
    job.instances.reserve(static_cast<std::size_t>(count));
    for (int k = 0; k < count; ++k) {
        job.instances.push_back(static_cast<InstanceId>(instances_.size()));
        instances_.push_back({j, k, gpus, no_id, {}, event_, true});
    }
    return j;
}

void LiveCluster::drop_job(JobId j) {
    auto& job = jobs_[static_cast<std::size_t>(j)];
    for (const InstanceId i : job.instances) {
        auto& inst = instances_[static_cast<std::size_t>(i)];
        if (inst.node != no_id) throw InternalError(fmt::format("job {} dropped while placed", quote(job.name)));
        inst.alive = false;
    }
    job_index_.erase(job.name);
    job.alive = false;
}

std::vector<int> LiveCluster::lowest_free(NodeId n, int count) const {
    std::vector<int> ids;
    ids.reserve(static_cast<std::size_t>(count));
    const auto& holder = node(n).holder;
    for (std::size_t g = 0; g < holder.size() && static_cast<int>(ids.size()) < count; ++g)
        if (holder[g] == free_gpu) ids.push_back(static_cast<int>(g));
    if (static_cast<int>(ids.size()) < count) {
        throw InternalError(fmt::format("node {} has fewer than {} free GPUs", quote(node(n).name), count));
    }
    return ids;
}

void LiveCluster::put(InstanceId i, NodeId n, std::span<const int> ids) {
    auto& inst = instances_[static_cast<std::size_t>(i)];
    auto& node = node_mut(n);
    if (inst.node != no_id || static_cast<int>(ids.size()) != inst.gpus) {
        throw InternalError(fmt::format("cannot put instance {} on node {}", i, quote(node.name)));
    }
    for (const int g : ids) {
        int& h = node.holder[static_cast<std::size_t>(g)];
        if (h >= 0) throw InternalError(fmt::format("GPU {} of node {} is already held", g, quote(node.name)));
        if (h == reserved_gpu) --node.reserved;
        h = i;
    }
    node.used += inst.gpus;
    inst.node = n;
    inst.gpu_ids.assign(ids.begin(), ids.end());
}

void LiveCluster::take(InstanceId i, bool keep_reserved) {
    auto& inst = instances_[static_cast<std::size_t>(i)];
    if (inst.node == no_id) throw InternalError(fmt::format("instance {} is not placed", i));
    if (inst.born != event_ && !origin_of_.contains(i)) {
        origin_of_.emplace(i, origins_.size());
        origins_.push_back({i, inst.node, inst.gpu_ids});
    }
    auto& node = node_mut(inst.node);
    for (const int g : inst.gpu_ids)
        node.holder[static_cast<std::size_t>(g)] = keep_reserved ? reserved_gpu : free_gpu;
    if (keep_reserved) node.reserved += inst.gpus;
    node.used -= inst.gpus;
    inst.node = no_id;
    inst.gpu_ids.clear();
}

void LiveCluster::reserve(NodeId n, std::span<const int> ids) {
    auto& node = node_mut(n);
    for (const int g : ids) {
        int& h = node.holder[static_cast<std::size_t>(g)];
        if (h != free_gpu) throw InternalError(fmt::format("GPU {} of node {} is not free", g, quote(node.name)));
        h = reserved_gpu;
    }
    node.reserved += static_cast<int>(ids.size());
}

void LiveCluster::unreserve(NodeId n, std::span<const int> ids) {
    auto& node = node_mut(n);
    for (const int g : ids) {
        int& h = node.holder[static_cast<std::size_t>(g)];
        if (h != reserved_gpu) {
            throw InternalError(fmt::format("GPU {} of node {} is not reserved", g, quote(node.name)));
        }
        h = free_gpu;
    }
    node.reserved -= static_cast<int>(ids.size());
}

void LiveCluster::begin_event() {
    ++event_;
    origins_.clear();
    origin_of_.clear();
}

std::vector<Migration> LiveCluster::event_migrations() const {
    std::vector<Migration> moves;
    for (const auto& o : origins_) {
        const auto& inst = instance(o.instance);
        if (!inst.alive || inst.node == no_id) continue;  // departed: not a migration
        if (inst.node == o.node && inst.gpu_ids == o.gpu_ids) continue;
        moves.push_back({job(inst.job).name, inst.index, o.node, o.gpu_ids, inst.node, inst.gpu_ids});
    }
    return moves;
}

std::pair<NodeId, std::span<const int>> LiveCluster::origin(InstanceId i) const {
    if (const auto found = origin_of_.find(i); found != origin_of_.end()) {
        const auto& o = origins_[found->second];
        return {o.node, o.gpu_ids};
    }
    const auto& inst = instance(i);
    return {inst.node, inst.gpu_ids};
}

ClusterState LiveCluster::snapshot() const {
    ClusterState s;
    s.nodes.reserve(nodes_.size());
    for (const auto& n : nodes_)
        s.nodes.push_back({n.name, n.capacity});
    for (const auto& inst : instances_) {
        if (!inst.alive || inst.node == no_id) continue;
        s.instances.push_back({job(inst.job).name, node(inst.node).name, inst.gpus, inst.gpu_ids});
    }
    return s;
}

std::vector<std::string> LiveCluster::check() const {
    std::vector<std::string> problems;
    std::vector<int> used(nodes_.size(), 0);
    for (std::size_t i = 0; i < instances_.size(); ++i) {
        const auto& inst = instances_[i];
        if (!inst.alive || inst.node == no_id) continue;
        const auto& n = node(inst.node);
        if (static_cast<int>(inst.gpu_ids.size()) != inst.gpus)
            problems.push_back(fmt::format("instance {} holds {} ids for {} GPUs", i, inst.gpu_ids.size(), inst.gpus));
        for (const int g : inst.gpu_ids) {
            if (g < 0 || g >= n.capacity || n.holder[static_cast<std::size_t>(g)] != static_cast<int>(i))
                problems.push_back(fmt::format("instance {}: GPU {} of {} is not held by it", i, g, n.name));
        }
        used[static_cast<std::size_t>(inst.node)] += inst.gpus;
    }
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
        const auto& node = nodes_[n];
        const auto reserved = std::count(node.holder.begin(), node.holder.end(), reserved_gpu);
        if (used[n] != node.used || reserved != node.reserved)
            problems.push_back(fmt::format("node {}: counters used {} reserved {}, holders say {} and {}", node.name,
                                           node.used, node.reserved, used[n], reserved));
        if (node.used + node.reserved > node.capacity)
            problems.push_back(fmt::format("node {}: {} GPUs held or reserved of {}", node.name,
                                           node.used + node.reserved, node.capacity));
    }
    return problems;
}

}  // namespace gpuops::placement
