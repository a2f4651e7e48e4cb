// The COMPASS operators on the anchor-based space: Place, Remove (with filler refill), Compact (corrected).
#include "gpuops/placement/abs.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace gpuops::placement {
namespace {

template <class T>
void erase_one(std::vector<T>& v, T x) {
    const auto it = std::find(v.begin(), v.end(), x);
    if (it == v.end()) throw InternalError("ABS bookkeeping lost an entry");
    v.erase(it);
}

}  // namespace

std::string_view to_string(NodeKind kind) {
    switch (kind) {
        case NodeKind::empty: return "empty";
        case NodeKind::pool: return "pool";
        case NodeKind::slotted: return "slotted";
        case NodeKind::outside: return "outside";
    }
    return "?";
}

std::string_view to_string(Role role) {
    switch (role) {
        case Role::none: return "none";
        case Role::anchor: return "anchor";
        case Role::filler: return "filler";
        case Role::pooled: return "pooled";
        case Role::pinned: return "pinned";
    }
    return "?";
}

int slot_width(int gpus) {
    if (gpus < 2) throw InternalError(fmt::format("an anchor needs at least 2 GPUs, got {}", gpus));
    int w = 2;
    while (w < gpus)
        w *= 2;
    return w;
}

AbsEngine::AbsEngine(LiveCluster& cluster, AbsOptions options)
    : cluster_(cluster), options_(options), nodes_(static_cast<std::size_t>(cluster.node_count())) {
    std::vector<std::vector<InstanceId>> on_node(nodes_.size());
    for (InstanceId i = 0; i < cluster_.instance_slots(); ++i) {
        ensure_instance(i);
        const auto& inst = cluster_.instance(i);
        if (inst.alive && inst.node != no_id) on_node[static_cast<std::size_t>(inst.node)].push_back(i);
    }
    for (NodeId n = 0; n < cluster_.node_count(); ++n) {
        read_node(n, on_node[static_cast<std::size_t>(n)]);
        refresh_kind(n);
        index(n);
    }
}

void AbsEngine::ensure_instance(InstanceId i) {
    const auto need = static_cast<std::size_t>(i) + 1;
    if (roles_.size() >= need) return;
    const auto size = std::max(need, roles_.size() * 2);
    roles_.resize(size, Role::none);
    slot_of_.resize(size, no_id);
    departing_.resize(size, 0);
}

Role AbsEngine::role(InstanceId i) const {
    return static_cast<std::size_t>(i) < roles_.size() ? roles_[static_cast<std::size_t>(i)] : Role::none;
}

void AbsEngine::read_node(NodeId n, std::vector<InstanceId>& here) {
    const int cap = capacity(n);
    std::vector<InstanceId> anchors;
    std::vector<InstanceId> ones;
    for (const InstanceId i : here)
        (gpus(i) >= 2 ? anchors : ones).push_back(i);
    std::stable_sort(anchors.begin(), anchors.end(),
                     [&](InstanceId a, InstanceId b) { return slot_width(gpus(a)) > slot_width(gpus(b)); });
    std::vector<InstanceId> accepted;
    std::vector<InstanceId> rejected;
    int widths = 0;
    for (const InstanceId a : anchors) {
        const int w = slot_width(gpus(a));
        if (widths + w <= cap) {
            accepted.push_back(a);
            widths += w;
        } else {
            rejected.push_back(a);
        }
    }
    // The slots' vacancies must be free GPUs: the rejected anchors keep theirs.
    auto rejected_gpus = [&] {
        int sum = 0;
        for (const InstanceId a : rejected)
            sum += gpus(a);
        return sum;
    };
    while (!accepted.empty() && widths + rejected_gpus() > cap) {
        widths -= slot_width(gpus(accepted.back()));
        rejected.push_back(accepted.back());
        accepted.pop_back();
    }
    auto& abs = node_abs(n);
    if (accepted.empty()) {
        if (rejected.empty()) {
            abs.pool = ones;
            for (const InstanceId i : ones)
                roles_[static_cast<std::size_t>(i)] = Role::pooled;
            return;
        }
        for (const InstanceId i : here) {
            abs.pinned.push_back(i);
            abs.pinned_gpus += gpus(i);
            roles_[static_cast<std::size_t>(i)] = Role::pinned;
        }
        return;
    }
    std::size_t next_one = 0;
    for (const InstanceId a : accepted) {
        const int w = slot_width(gpus(a));
        int s = 0;
        if (!free_slots_.empty()) {
            s = free_slots_.back();
            free_slots_.pop_back();
        } else {
            s = static_cast<int>(slots_.size());
            slots_.emplace_back();
        }
        auto& slot = slots_[static_cast<std::size_t>(s)];
        slot = Slot{n, w, a, {}, cluster_.instance(a).gpu_ids, true};
        roles_[static_cast<std::size_t>(a)] = Role::anchor;
        slot_of_[static_cast<std::size_t>(a)] = s;
        while (gpus(a) + static_cast<int>(slot.fillers.size()) < w && next_one < ones.size()) {
            const InstanceId f = ones[next_one++];
            slot.fillers.push_back(f);
            slot.gpu_ids.push_back(cluster_.instance(f).gpu_ids.front());
            roles_[static_cast<std::size_t>(f)] = Role::filler;
            slot_of_[static_cast<std::size_t>(f)] = s;
        }
        const auto rest = cluster_.lowest_free(n, w - static_cast<int>(slot.gpu_ids.size()));
        cluster_.reserve(n, rest);
        slot.gpu_ids.insert(slot.gpu_ids.end(), rest.begin(), rest.end());
        abs.slots.push_back(s);
        abs.slot_widths += w;
        update_vacancy(s);
    }
    for (; next_one < ones.size(); ++next_one)
        rejected.push_back(ones[next_one]);
    for (const InstanceId i : rejected) {
        abs.pinned.push_back(i);
        abs.pinned_gpus += gpus(i);
        roles_[static_cast<std::size_t>(i)] = Role::pinned;
    }
}

int AbsEngine::unprofiled(NodeId n) const {
    const auto& abs = node_abs(n);
    return capacity(n) - abs.slot_widths - abs.pinned_gpus;
}

int AbsEngine::pool_room(NodeId n) const {
    const auto& abs = node_abs(n);
    return capacity(n) - static_cast<int>(abs.pool.size()) - abs.pinned_gpus;
}

std::vector<int> AbsEngine::slot_widths(NodeId n) const {
    std::vector<int> widths;
    for (const int s : node_abs(n).slots)
        widths.push_back(slots_[static_cast<std::size_t>(s)].width);
    return widths;
}

// ---- indexes -------------------------------------------------------------------------------------------------

void AbsEngine::unindex(NodeId n) {
    auto& abs = node_abs(n);
    if (abs.key_unprofiled >= 0) by_unprofiled_.erase({abs.key_unprofiled, n});
    if (abs.key_pool_room >= 0) by_pool_room_.erase({abs.key_pool_room, n});
    if (abs.key_pool_count >= 0) by_pool_count_.erase({abs.key_pool_count, n});
    if (abs.key_empty >= 0) empty_.erase({abs.key_empty, n});
    abs.key_unprofiled = abs.key_pool_room = abs.key_pool_count = abs.key_empty = -1;
}

void AbsEngine::index(NodeId n) {
    auto& abs = node_abs(n);
    switch (abs.kind) {
        case NodeKind::slotted:
            if (const int d = unprofiled(n); d > 0) by_unprofiled_.insert({abs.key_unprofiled = d, n});
            break;
        case NodeKind::pool:
            if (const int room = pool_room(n); room > 0) by_pool_room_.insert({abs.key_pool_room = room, n});
            by_pool_count_.insert({abs.key_pool_count = static_cast<int>(abs.pool.size()), n});
            break;
        case NodeKind::empty: empty_.insert({abs.key_empty = capacity(n), n}); break;
        case NodeKind::outside: break;
    }
}

void AbsEngine::refresh_kind(NodeId n) {
    auto& abs = node_abs(n);
    abs.kind = !abs.slots.empty()    ? NodeKind::slotted
               : !abs.pool.empty()   ? NodeKind::pool
               : !abs.pinned.empty() ? NodeKind::outside
                                     : NodeKind::empty;
}

void AbsEngine::update_vacancy(int s) {
    const auto& slot = slots_[static_cast<std::size_t>(s)];
    const bool vacant =
        slot.alive && slot.anchor != no_id && gpus(slot.anchor) + static_cast<int>(slot.fillers.size()) < slot.width;
    if (vacant) {
        vacant_slots_.insert(s);
    } else {
        vacant_slots_.erase(s);
    }
}

// ---- primitive moves -----------------------------------------------------------------------------------------

int AbsEngine::create_slot(NodeId n, int width) {
    unindex(n);
    int s = 0;
    if (!free_slots_.empty()) {
        s = free_slots_.back();
        free_slots_.pop_back();
    } else {
        s = static_cast<int>(slots_.size());
        slots_.emplace_back();
    }
    auto ids = cluster_.lowest_free(n, width);
    cluster_.reserve(n, ids);
    slots_[static_cast<std::size_t>(s)] = Slot{n, width, no_id, {}, std::move(ids), true};
    auto& abs = node_abs(n);
    abs.slots.push_back(s);
    abs.slot_widths += width;
    refresh_kind(n);
    index(n);
    if (recording_) undo_.push_back({Undo::Op::slot_created, s});
    return s;
}

void AbsEngine::destroy_slot(int s) {
    auto& slot = slots_[static_cast<std::size_t>(s)];
    if (slot.anchor != no_id || !slot.fillers.empty()) throw InternalError("a slot was dissolved while occupied");
    const NodeId n = slot.node;
    unindex(n);
    cluster_.unreserve(n, slot.gpu_ids);
    auto& abs = node_abs(n);
    erase_one(abs.slots, s);
    abs.slot_widths -= slot.width;
    slot.alive = false;
    slot.gpu_ids.clear();
    vacant_slots_.erase(s);
    free_slots_.push_back(s);
    refresh_kind(n);
    index(n);
}

void AbsEngine::put_anchor(InstanceId i, int s) {
    auto& slot = slots_[static_cast<std::size_t>(s)];
    cluster_.put(i, slot.node, std::span<const int>(slot.gpu_ids).first(static_cast<std::size_t>(gpus(i))));
    slot.anchor = i;
    roles_[static_cast<std::size_t>(i)] = Role::anchor;
    slot_of_[static_cast<std::size_t>(i)] = s;
    update_vacancy(s);
}

void AbsEngine::join_slot(InstanceId i, int s) {
    auto& slot = slots_[static_cast<std::size_t>(s)];
    const auto& holder = cluster_.node(slot.node).holder;
    const auto gpu = std::find_if(slot.gpu_ids.begin(), slot.gpu_ids.end(), [&](int g) {
        return holder[static_cast<std::size_t>(g)] == LiveCluster::reserved_gpu;
    });
    if (gpu == slot.gpu_ids.end()) throw InternalError("a filler joined a slot without vacancy");
    cluster_.put(i, slot.node, std::span<const int>(&*gpu, 1));
    slot.fillers.push_back(i);
    roles_[static_cast<std::size_t>(i)] = Role::filler;
    slot_of_[static_cast<std::size_t>(i)] = s;
    update_vacancy(s);
}

void AbsEngine::leave_slot(InstanceId i) {
    const int s = slot_of_[static_cast<std::size_t>(i)];
    auto& slot = slots_[static_cast<std::size_t>(s)];
    cluster_.take(i, true);
    if (slot.anchor == i) {
        slot.anchor = no_id;
    } else {
        erase_one(slot.fillers, i);
    }
    roles_[static_cast<std::size_t>(i)] = Role::none;
    slot_of_[static_cast<std::size_t>(i)] = no_id;
    update_vacancy(s);
}

void AbsEngine::pool_join(InstanceId i, NodeId n, int preferred_gpu) {
    unindex(n);
    const auto& holder = cluster_.node(n).holder;
    const bool keep = preferred_gpu >= 0 && holder[static_cast<std::size_t>(preferred_gpu)] == LiveCluster::free_gpu;
    const auto ids = keep ? std::vector<int>{preferred_gpu} : cluster_.lowest_free(n, 1);
    cluster_.put(i, n, ids);
    node_abs(n).pool.push_back(i);
    roles_[static_cast<std::size_t>(i)] = Role::pooled;
    refresh_kind(n);
    index(n);
}

void AbsEngine::pool_leave(InstanceId i) {
    const NodeId n = cluster_.instance(i).node;
    unindex(n);
    cluster_.take(i);
    erase_one(node_abs(n).pool, i);
    roles_[static_cast<std::size_t>(i)] = Role::none;
    refresh_kind(n);
    index(n);
}

void AbsEngine::pin(InstanceId i, NodeId n, std::span<const int> ids) {
    unindex(n);
    cluster_.put(i, n, ids);
    auto& abs = node_abs(n);
    abs.pinned.push_back(i);
    abs.pinned_gpus += gpus(i);
    roles_[static_cast<std::size_t>(i)] = Role::pinned;
    refresh_kind(n);
    index(n);
}

void AbsEngine::unpin(InstanceId i) {
    const NodeId n = cluster_.instance(i).node;
    unindex(n);
    cluster_.take(i);
    auto& abs = node_abs(n);
    erase_one(abs.pinned, i);
    abs.pinned_gpus -= gpus(i);
    roles_[static_cast<std::size_t>(i)] = Role::none;
    orphans_.erase(i);
    refresh_kind(n);
    index(n);
}

void AbsEngine::move_slot(int s, NodeId dst) {
    const int width = slots_[static_cast<std::size_t>(s)].width;
    const InstanceId anchor = slots_[static_cast<std::size_t>(s)].anchor;
    const auto fillers = slots_[static_cast<std::size_t>(s)].fillers;
    for (const InstanceId f : fillers)
        leave_slot(f);
    if (anchor != no_id) leave_slot(anchor);
    destroy_slot(s);
    const int t = create_slot(dst, width);
    if (anchor != no_id) put_anchor(anchor, t);
    for (const InstanceId f : fillers)
        join_slot(f, t);
}

// ---- Place and Remove ----------------------------------------------------------------------------------------

int AbsEngine::find_vacant_slot() const {
    for (const int s : vacant_slots_) {
        const InstanceId a = slots_[static_cast<std::size_t>(s)].anchor;
        if (departing_[static_cast<std::size_t>(a)] == 0) return s;
    }
    return no_id;
}

InstanceId AbsEngine::draw_from_pool() {
    // The sparsest pool node first, so that drawing fillers empties pool nodes rather than opening holes.
    for (const auto& entry : by_pool_count_) {
        const NodeId n = entry.second;  // a copy: pool_leave below re-indexes the node
        const auto& pool = node_abs(n).pool;
        for (std::size_t k = pool.size(); k-- > 0;) {
            const InstanceId f = pool[k];
            if (departing_[static_cast<std::size_t>(f)] != 0) continue;
            const int gpu = cluster_.instance(f).gpu_ids.front();
            pool_leave(f);
            if (recording_) undo_.push_back({Undo::Op::filler_drawn, f, n, gpu});
            return f;
        }
    }
    return no_id;
}

bool AbsEngine::place(InstanceId i) {
    ensure_instance(i);
    const int g = gpus(i);
    if (g >= 2) {
        const int w = slot_width(g);
        NodeId n = no_id;
        if (const auto it = by_unprofiled_.lower_bound({w, std::numeric_limits<int>::min()});
            it != by_unprofiled_.end()) {
            n = it->second;  // best fit: the least unprofiled room that holds the slot
        } else if (const auto e = empty_.lower_bound({w, std::numeric_limits<int>::min()}); e != empty_.end()) {
            n = e->second;
        }
        if (n == no_id) return options_.relaxed && pin_anywhere(i);
        const int s = create_slot(n, w);
        put_anchor(i, s);
        if (recording_) undo_.push_back({Undo::Op::placed, i});
        for (int r = w - g; r > 0; --r) {
            const InstanceId f = draw_from_pool();
            if (f == no_id) break;
            join_slot(f, s);
        }
        return true;
    }
    if (!place_one_gpu(i, no_id, -1)) return options_.relaxed && pin_anywhere(i);
    if (recording_) undo_.push_back({Undo::Op::placed, i});
    return true;
}

bool AbsEngine::place_one_gpu(InstanceId i, NodeId previous_node, int previous_gpu) {
    if (const int s = find_vacant_slot(); s != no_id) {
        join_slot(i, s);
        return true;
    }
    if (!by_pool_room_.empty()) {
        const NodeId n = by_pool_room_.begin()->second;  // the fullest pool node with room
        pool_join(i, n, n == previous_node ? previous_gpu : -1);
        return true;
    }
    if (previous_node != no_id && node_abs(previous_node).kind == NodeKind::empty) {
        pool_join(i, previous_node, previous_gpu);  // the node its slot left: it stays on its GPU
        return true;
    }
    if (!empty_.empty()) {
        pool_join(i, empty_.begin()->second);
        return true;
    }
    return false;
}

bool AbsEngine::pin_anywhere(InstanceId i) {
    const int g = gpus(i);
    NodeId best = no_id;
    int best_room = std::numeric_limits<int>::max();
    for (NodeId n = 0; n < cluster_.node_count(); ++n) {
        const int room = cluster_.free_gpus(n);
        if (room >= g && room < best_room) {
            best = n;
            best_room = room;
        }
    }
    if (best == no_id) return false;
    pin(i, best, cluster_.lowest_free(best, g));
    if (g == 1) orphans_.insert(i);
    if (recording_) undo_.push_back({Undo::Op::placed, i});
    return true;
}

void AbsEngine::remove(InstanceId i) {
    switch (role(i)) {
        case Role::anchor: {
            // Remove: the fillers go elsewhere by the 1-GPU rule of Place, then the slot dissolves.
            const int s = slot_of_[static_cast<std::size_t>(i)];
            const NodeId n = slots_[static_cast<std::size_t>(s)].node;
            const auto fillers = slots_[static_cast<std::size_t>(s)].fillers;
            std::vector<int> old_gpu;
            old_gpu.reserve(fillers.size());
            for (const InstanceId f : fillers) {
                old_gpu.push_back(cluster_.instance(f).gpu_ids.front());
                leave_slot(f);
            }
            leave_slot(i);
            destroy_slot(s);
            for (std::size_t k = 0; k < fillers.size(); ++k) {
                // With no vacancy, pool room or empty node left, the filler stays on its GPU, pinned.
                if (!place_one_gpu(fillers[k], n, old_gpu[k])) {
                    pin(fillers[k], n, std::span<const int>(&old_gpu[k], 1));
                    orphans_.insert(fillers[k]);
                }
            }
            break;
        }
        case Role::filler: {
            // The text's refill (Algorithm 1 omits it; Lemma A.2 needs it): another 1-GPU instance from the pool.
            const int s = slot_of_[static_cast<std::size_t>(i)];
            leave_slot(i);
            const InstanceId anchor = slots_[static_cast<std::size_t>(s)].anchor;
            if (anchor != no_id && departing_[static_cast<std::size_t>(anchor)] == 0) {
                if (const InstanceId f = draw_from_pool(); f != no_id) join_slot(f, s);
            }
            break;
        }
        case Role::pooled: pool_leave(i); break;
        case Role::pinned: unpin(i); break;
        case Role::none: break;
    }
}

void AbsEngine::take_back(InstanceId i) {
    switch (role(i)) {
        case Role::anchor:
        case Role::filler: leave_slot(i); break;
        case Role::pooled: pool_leave(i); break;
        case Role::pinned: unpin(i); break;
        case Role::none: break;
    }
}

bool AbsEngine::arrive(JobId job) {
    const auto& instances = cluster_.job(job).instances;
    undo_.clear();
    recording_ = true;
    last_failure_ = no_id;
    for (const InstanceId i : instances) {
        if (place(i)) continue;
        last_failure_ = i;
        recording_ = false;
        for (std::size_t k = undo_.size(); k-- > 0;) {
            const Undo& u = undo_[k];
            switch (u.op) {
                case Undo::Op::filler_drawn:
                    leave_slot(u.id);
                    pool_join(u.id, u.node, u.gpu);
                    break;
                case Undo::Op::placed: take_back(u.id); break;
                case Undo::Op::slot_created: destroy_slot(u.id); break;
            }
        }
        undo_.clear();
        return false;
    }
    recording_ = false;
    undo_.clear();
    compact();
    return true;
}

void AbsEngine::depart(JobId job) {
    const auto& instances = cluster_.job(job).instances;
    for (const InstanceId i : instances) {
        ensure_instance(i);
        departing_[static_cast<std::size_t>(i)] = 1;
    }
    // Pool and pinned instances first: they need no refill, and a refill never draws a departing instance.
    for (const Role phase : {Role::pooled, Role::filler, Role::anchor}) {
        for (const InstanceId i : instances) {
            const Role r = role(i);
            const bool now = phase == Role::pooled ? (r == Role::pooled || r == Role::pinned) : r == phase;
            if (now) remove(i);
        }
    }
    for (const InstanceId i : instances)
        departing_[static_cast<std::size_t>(i)] = 0;
    compact();
}

}  // namespace gpuops::placement
