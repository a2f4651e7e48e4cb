// Views as members see them: built from WELCOME and PREPARE, and checked before any endpoint work.
#include "gpuops/rescale/member_view.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "gpuops/rescale/view.hpp"

namespace gpuops::rescale {

std::optional<std::size_t> MemberView::rank_of(MemberId id) const {
    const auto it = std::ranges::find(members, id);
    if (it == members.end()) return std::nullopt;
    return static_cast<std::size_t>(it - members.begin());
}

MemberView view_from(const ViewInfo& info) {
    MemberView v;
    v.epoch = info.epoch;
    v.hash = info.view_hash;
    std::vector<Peer> peers = info.peers;
    std::ranges::sort(peers, {}, &Peer::rank);
    for (const Peer& p : peers) {
        v.members.push_back(p.member_id);
        v.addr_b64[p.member_id] = p.addr_b64;
    }
    return v;
}

MemberView proposed_view(const MemberView& committed, const Prepare& prepare) {
    MemberView next;
    next.epoch = prepare.epoch;
    next.hash = prepare.view_hash;
    next.members = prepare.members;
    if (!prepare.full_table) {
        next.addr_b64 = committed.addr_b64;
        for (const MemberId gone : prepare.removed)
            next.addr_b64.erase(gone);
    }
    // A joiner's table comes in rank order, which is id order unless members have left: then the hint is right
    // and each insert costs O(1).
    for (const Peer& peer : prepare.added)
        next.addr_b64.insert_or_assign(next.addr_b64.end(), peer.member_id, peer.addr_b64);
    return next;
}

std::string check_proposal(const MemberView& committed, const Prepare& prepare, const MemberView& proposed) {
    if (view_hash(prepare.epoch, prepare.members) != prepare.view_hash)
        return "the view hash does not match the members";
    if (!prepare.full_table) {
        const std::set<MemberId> removed(prepare.removed.begin(), prepare.removed.end());
        std::vector<MemberId> joiners;
        for (const MemberId id : prepare.members)
            if (!committed.rank_of(id)) joiners.push_back(id);
        if (next_members(committed.members, removed, joiners) != prepare.members)
            return "the ranks break the rule (survivors in order, joiners appended)";
    }
    // Every member has an address: one ordered walk of the members against the (ordered) address map.
    std::vector<MemberId> sorted = prepare.members;
    std::ranges::sort(sorted);
    auto addr = proposed.addr_b64.begin();
    for (const MemberId id : sorted) {
        while (addr != proposed.addr_b64.end() && addr->first < id)
            ++addr;
        if (addr == proposed.addr_b64.end() || addr->first != id) return fmt::format("no address for member {}", id);
    }
    return {};
}

}  // namespace gpuops::rescale
