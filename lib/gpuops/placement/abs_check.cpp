// Observing the ABS state: node counts by kind and the invariant checker the tests run after every operation.
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "gpuops/placement/abs.hpp"

namespace gpuops::placement {

// ---- observation ---------------------------------------------------------------------------------------------

AbsStats AbsEngine::stats() const {
    AbsStats st;
    for (NodeId n = 0; n < cluster_.node_count(); ++n) {
        const auto& abs = node_abs(n);
        const auto& node = cluster_.node(n);
        const bool partial = node.used > 0 && node.used < node.capacity;
        switch (abs.kind) {
            case NodeKind::empty: ++st.empty; break;
            case NodeKind::pool:
                ++st.pool;
                st.partial_pool += partial ? 1 : 0;
                break;
            case NodeKind::slotted:
                ++st.slotted;
                st.partial_slotted += partial ? 1 : 0;
                st.slotted_with_room += unprofiled(n) > 0 ? 1 : 0;
                break;
            case NodeKind::outside:
                ++st.outside;
                st.partial_outside += partial ? 1 : 0;
                break;
        }
        st.pinned_instances += static_cast<int>(abs.pinned.size());
    }
    st.vacant_slots = static_cast<int>(vacant_slots_.size());
    return st;
}

std::vector<std::string> AbsEngine::check() const {
    std::vector<std::string> bad = cluster_.check();
    auto say = [&](NodeId n, std::string what) {
        bad.push_back(fmt::format("node {} ({}): {}", cluster_.node(n).name, to_string(node_abs(n).kind), what));
    };
    std::set<std::pair<int, NodeId>> by_unprofiled;
    std::set<std::pair<int, NodeId>> by_pool_room;
    std::set<std::pair<int, NodeId>> by_pool_count;
    std::set<std::pair<int, NodeId>> empty;
    std::set<int> vacant;
    std::vector<int> placed_roles(roles_.size(), 0);
    for (NodeId n = 0; n < cluster_.node_count(); ++n) {
        const auto& abs = node_abs(n);
        const auto& node = cluster_.node(n);
        const int cap = node.capacity;
        int widths = 0;
        int slot_gpus = 0;
        for (const int s : abs.slots) {
            const auto& slot = slots_[static_cast<std::size_t>(s)];
            widths += slot.width;
            if (!slot.alive || slot.node != n) say(n, fmt::format("slot {} is dead or elsewhere", s));
            if (slot.width < 2 || (slot.width & (slot.width - 1)) != 0 || slot.width > cap)
                say(n, fmt::format("slot {} has width {}", s, slot.width));
            if (slot.anchor == no_id) {
                say(n, fmt::format("slot {} has no anchor", s));
                continue;
            }
            const int ga = gpus(slot.anchor);
            if (ga < 2 || slot_width(ga) != slot.width)
                say(n, fmt::format("slot {} of width {} anchors an instance of {} GPUs", s, slot.width, ga));
            if (ga + static_cast<int>(slot.fillers.size()) > slot.width)
                say(n, fmt::format("slot {}: g_a + |F| = {} > w = {}", s, ga + slot.fillers.size(), slot.width));
            if (static_cast<int>(slot.gpu_ids.size()) != slot.width)
                say(n, fmt::format("slot {} spans {} GPUs for width {}", s, slot.gpu_ids.size(), slot.width));
            if (ga + static_cast<int>(slot.fillers.size()) < slot.width) vacant.insert(s);
            std::vector<InstanceId> members = slot.fillers;
            members.push_back(slot.anchor);
            for (const InstanceId m : members) {
                const auto& inst = cluster_.instance(m);
                const Role want = m == slot.anchor ? Role::anchor : Role::filler;
                if (role(m) != want || slot_of_[static_cast<std::size_t>(m)] != s || inst.node != n)
                    say(n, fmt::format("instance {} is not the {} of slot {} it sits in", m, to_string(want), s));
                if (m != slot.anchor && inst.gpus != 1) say(n, fmt::format("filler {} has {} GPUs", m, inst.gpus));
                for (const int g : inst.gpu_ids)
                    if (std::find(slot.gpu_ids.begin(), slot.gpu_ids.end(), g) == slot.gpu_ids.end())
                        say(n, fmt::format("instance {} holds GPU {} outside its slot", m, g));
                ++placed_roles[static_cast<std::size_t>(m)];
            }
            for (const int g : slot.gpu_ids) {
                const int h = node.holder[static_cast<std::size_t>(g)];
                if (h == LiveCluster::free_gpu) say(n, fmt::format("GPU {} of slot {} is free", g, s));
            }
            slot_gpus += slot.width;
        }
        if (widths != abs.slot_widths) say(n, "slot widths do not add up");
        int pinned = 0;
        for (const InstanceId i : abs.pinned) {
            pinned += gpus(i);
            if (role(i) != Role::pinned || cluster_.instance(i).node != n) say(n, fmt::format("pinned {} lost", i));
            ++placed_roles[static_cast<std::size_t>(i)];
        }
        if (pinned != abs.pinned_gpus) say(n, "pinned GPUs do not add up");
        for (const InstanceId i : abs.pool) {
            if (role(i) != Role::pooled || cluster_.instance(i).node != n || gpus(i) != 1)
                say(n, fmt::format("pool member {} is not a pooled 1-GPU instance here", i));
            ++placed_roles[static_cast<std::size_t>(i)];
        }
        switch (abs.kind) {
            case NodeKind::empty:
                if (node.used != 0 || node.reserved != 0 || !abs.slots.empty() || !abs.pool.empty() ||
                    !abs.pinned.empty())
                    say(n, "an empty node holds something");
                empty.insert({cap, n});
                break;
            case NodeKind::pool:
                if (!abs.slots.empty() || abs.pool.empty()) say(n, "a pool node needs 1-GPU instances and no slots");
                if (static_cast<int>(abs.pool.size()) + pinned > cap) say(n, "|P| > G");
                if (pool_room(n) > 0) by_pool_room.insert({pool_room(n), n});
                by_pool_count.insert({static_cast<int>(abs.pool.size()), n});
                break;
            case NodeKind::slotted:
                if (abs.slots.empty() || !abs.pool.empty()) say(n, "a slotted node needs slots and no pool");
                if (widths + pinned > cap)
                    say(n, fmt::format("slot widths {} + pinned {} > G = {}", widths, pinned, cap));
                if (node.used + node.reserved != slot_gpus + pinned) say(n, "GPUs held or reserved outside its slots");
                if (unprofiled(n) > 0) by_unprofiled.insert({unprofiled(n), n});
                break;
            case NodeKind::outside:
                if (!abs.slots.empty() || !abs.pool.empty() || abs.pinned.empty())
                    say(n, "an outside node holds only pinned instances");
                break;
        }
    }
    for (InstanceId i = 0; i < cluster_.instance_slots(); ++i) {
        const auto& inst = cluster_.instance(i);
        const int roles =
            static_cast<std::size_t>(i) < placed_roles.size() ? placed_roles[static_cast<std::size_t>(i)] : 0;
        const bool placed = inst.alive && inst.node != no_id;
        if (placed != (roles == 1) || (!placed && role(i) != Role::none))
            bad.push_back(fmt::format("instance {}: placed {} but {} ABS roles", i, placed, roles));
    }
    if (by_unprofiled != by_unprofiled_) bad.emplace_back("index of unprofiled room is stale");
    if (by_pool_room != by_pool_room_) bad.emplace_back("index of pool room is stale");
    if (by_pool_count != by_pool_count_) bad.emplace_back("index of pool counts is stale");
    if (empty != empty_) bad.emplace_back("index of empty nodes is stale");
    if (vacant != vacant_slots_) bad.emplace_back("index of vacant slots is stale");
    return bad;
}

}  // namespace gpuops::placement
