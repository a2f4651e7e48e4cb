// COMPASS-ABS: the anchor-based space (slots, anchors, fillers, pool nodes) and its Place, Remove and Compact
// operators (Zhou and Wu, §4.2-4.3), with the corrected Compact of research/compass.md and an invariant checker.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuops/placement/live_cluster.hpp"

namespace gpuops::placement {

/// empty: nothing on it; pool: only 1-GPU instances; slotted: slots of width 2/4/8; outside: only instances
/// that ABS does not manage (pinned), read from a state that was not in ABS.
enum class NodeKind { empty, pool, slotted, outside };
[[nodiscard]] std::string_view to_string(NodeKind kind);

/// anchor: the one instance of >= 2 GPUs of a slot; filler: a 1-GPU instance in a slot's vacancy; pooled: a 1-GPU
/// instance on a pool node; pinned: left where it runs, outside ABS (see AbsEngine).
enum class Role { none, anchor, filler, pooled, pinned };
[[nodiscard]] std::string_view to_string(Role role);

/// corrected: the paper's BestFitDrain passes, the slot passes repeated until they move nothing, then moves of
/// slot groups between the partial slotted nodes left (research/compass.md); paper: the three passes once each,
/// as written, which can leave two partial slotted nodes (A = {4}, B = {4,2}).
enum class CompactRule { corrected, paper };

struct AbsOptions {
    bool relaxed = false;  ///< when strict ABS has no destination, use free GPUs outside the slots (pinned)
    CompactRule compact = CompactRule::corrected;
};

/// w*(g): the slot width of an anchor of g >= 2 GPUs, the smallest power of two >= g (2; 4 for 3-4; 8 for 5-8).
[[nodiscard]] int slot_width(int gpus);

/// Node counts by kind; partial: 0 < GPUs in use < capacity.
struct AbsStats {
    int empty = 0, pool = 0, slotted = 0, outside = 0;
    int partial_pool = 0;
    int partial_slotted = 0;
    int partial_outside = 0;
    int slotted_with_room = 0;  ///< slotted nodes with unprofiled GPUs: D(n) > 0
    int vacant_slots = 0;       ///< slots with g_a + |F| < w
    int pinned_instances = 0;
};

/// The ABS view of a LiveCluster and the COMPASS operators on it. Every move goes through the cluster, which
/// records the event's net migrations.
///
/// Reading a state that was not produced by COMPASS: per node, instances of >= 2 GPUs become anchors of slots of
/// width w*(g) (widest first) while the slots and the GPUs of the instances left out fit the node; 1-GPU instances
/// fill the slots' vacancies, or make a pool node when the node has no instance of >= 2 GPUs. What does not fit
/// (anchors past the node's GPUs, 1-GPU instances beyond the vacancies) is *pinned*: it keeps its GPUs, is never
/// migrated, and its GPUs count against the node's room; a node with only pinned instances is `outside`, and strict
/// ABS places nothing there. Relaxed placement pins an instance that strict ABS cannot place on the node whose
/// free GPUs outside the slots fit it best. A filler whose anchor departs and that finds no vacancy, pool room
/// or empty node stays on its GPU, pinned. 1-GPU instances pinned by ABS itself (these two cases) return by the
/// 1-GPU rule at the next Compact that has a destination for them; pinned anchors and pinned instances read from
/// the state stay where they are.
class AbsEngine {
public:
    AbsEngine(LiveCluster& cluster, AbsOptions options);

    /// Algorithm 1, arrival: Place every instance of the job, then Compact. All or nothing: when an instance has
    /// no destination, the instances placed so far are taken back, the fillers drawn return, and it is false.
    bool arrive(JobId job);
    /// The failing instance of the last arrive() that returned false.
    [[nodiscard]] InstanceId last_failure() const noexcept { return last_failure_; }
    /// Algorithm 1, departure: Remove every instance of the job (pool and pinned ones first, then fillers, then
    /// anchors), then Compact. The instances end unplaced; the caller drops the job.
    void depart(JobId job);

    /// The operators on one instance (the paper's Place, Remove and Compact).
    bool place(InstanceId i);
    void remove(InstanceId i);
    void compact();

    [[nodiscard]] NodeKind kind(NodeId n) const { return nodes_[static_cast<std::size_t>(n)].kind; }
    [[nodiscard]] Role role(InstanceId i) const;
    /// D(n) = capacity - slot widths - pinned GPUs (for a slotted node).
    [[nodiscard]] int unprofiled(NodeId n) const;
    /// The widths of the live slots on node n.
    [[nodiscard]] std::vector<int> slot_widths(NodeId n) const;
    [[nodiscard]] AbsStats stats() const;
    /// The ABS invariants (slot widths, g_a + |F| <= w, |P| <= G, sum of widths <= G, node kinds, indexes, the
    /// cluster's own counters); one message per violation, empty when all hold.
    [[nodiscard]] std::vector<std::string> check() const;
    [[nodiscard]] const AbsOptions& options() const noexcept { return options_; }

private:
    struct Slot {
        NodeId node = no_id;
        int width = 0;
        InstanceId anchor = no_id;
        std::vector<InstanceId> fillers;
        std::vector<int> gpu_ids;  ///< width GPUs: the anchor's, the fillers', the rest reserved
        bool alive = false;
    };
    struct NodeAbs {
        NodeKind kind = NodeKind::empty;
        std::vector<int> slots;
        int slot_widths = 0;
        std::vector<InstanceId> pool;
        std::vector<InstanceId> pinned;
        int pinned_gpus = 0;
        // Keys under which the node sits in the indexes (-1: absent).
        int key_unprofiled = -1, key_pool_room = -1, key_pool_count = -1, key_empty = -1;
    };
    struct Undo {
        enum class Op { slot_created, placed, filler_drawn } op;
        int id;  ///< the slot or the instance
        NodeId node = no_id;
        int gpu = 0;
    };

    NodeAbs& node_abs(NodeId n) { return nodes_[static_cast<std::size_t>(n)]; }
    const NodeAbs& node_abs(NodeId n) const { return nodes_[static_cast<std::size_t>(n)]; }
    [[nodiscard]] int capacity(NodeId n) const { return cluster_.node(n).capacity; }
    [[nodiscard]] int pool_room(NodeId n) const;
    [[nodiscard]] int gpus(InstanceId i) const { return cluster_.instance(i).gpus; }
    void ensure_instance(InstanceId i);
    void read_node(NodeId n, std::vector<InstanceId>& here);

    void unindex(NodeId n);
    void index(NodeId n);
    void refresh_kind(NodeId n);
    void update_vacancy(int s);

    int create_slot(NodeId n, int width);
    void destroy_slot(int s);
    void put_anchor(InstanceId i, int s);
    void join_slot(InstanceId i, int s);
    void leave_slot(InstanceId i);
    void pool_join(InstanceId i, NodeId n, int preferred_gpu = -1);
    void pool_leave(InstanceId i);
    void pin(InstanceId i, NodeId n, std::span<const int> ids);
    void unpin(InstanceId i);
    void move_slot(int s, NodeId dst);

    int find_vacant_slot() const;
    InstanceId draw_from_pool();
    bool place_one_gpu(InstanceId i, NodeId previous_node, int previous_gpu);
    bool pin_anywhere(InstanceId i);
    void take_back(InstanceId i);

    void adopt_orphans();
    void drain_pool();
    bool drain_slots(int width);
    bool repair_slots();

    LiveCluster& cluster_;
    AbsOptions options_;
    std::vector<NodeAbs> nodes_;
    std::vector<Slot> slots_;
    std::vector<int> free_slots_;
    std::vector<Role> roles_;
    std::vector<int> slot_of_;
    std::vector<char> departing_;
    std::set<std::pair<int, NodeId>> by_unprofiled_;  ///< slotted nodes with D > 0, by D
    std::set<std::pair<int, NodeId>> by_pool_room_;   ///< pool nodes with room, by room
    std::set<std::pair<int, NodeId>> by_pool_count_;  ///< pool nodes by their 1-GPU instances
    std::set<std::pair<int, NodeId>> empty_;          ///< empty nodes by capacity
    std::set<int> vacant_slots_;
    std::set<InstanceId> orphans_;  ///< 1-GPU instances ABS pinned itself; Compact brings them back
    std::vector<Undo> undo_;
    bool recording_ = false;
    InstanceId last_failure_ = no_id;
};

}  // namespace gpuops::placement
