// Starting a coordinator over its records: a fresh job, or a restart that resumes from the last committed view.
#include <algorithm>
#include <iterator>
#include <utility>

#include "gpuops/rescale/coordinator.hpp"

namespace gpuops::rescale {

Coordinator::Started Coordinator::start(CoordinatorConfig config, std::span<const Record> records, TimeMs now) {
    Coordinator c(std::move(config));
    c.begin(now);
    c.replay(records);
    c.membership_changed();
    ++c.coord_incarnation_;
    // START goes first so that transition ids of this incarnation can never repeat an earlier one's.
    Actions replayed = std::exchange(c.out_, {});
    c.persist(StartRecord{c.coord_incarnation_});
    std::ranges::move(replayed, std::back_inserter(c.out_));
    if (records.empty()) {
        c.persist(ConfigRecord{c.config_.min_size, c.config_.max_size, c.config_.batch_window_ms});
    }
    Actions actions = c.finish();
    return {std::move(c), std::move(actions)};
}

/// Rebuilds the durable state. Volatile state starts over: no connection is bound, every live member gets
/// `reconnect_grace` from now to resume (leases are re-granted, never shortened), notices must be sent again.
void Coordinator::replay(std::span<const Record> records) {
    std::map<Epoch, ProposeRecord> proposals;
    std::optional<Epoch> open_proposal;
    std::set<MemberId> ever_in_view;
    for (const Record& record : records) {
        std::visit(
            [&](const auto& r) {
                using R = std::decay_t<decltype(r)>;
                if constexpr (std::is_same_v<R, StartRecord>) {
                    coord_incarnation_ = std::max(coord_incarnation_, r.coord_incarnation);
                } else if constexpr (std::is_same_v<R, ConfigRecord>) {
                    config_.min_size = r.min_size;
                    config_.max_size = r.max_size;
                    config_.batch_window_ms = r.batch_window_ms;
                } else if constexpr (std::is_same_v<R, RegisterRecord>) {
                    MemberState m;
                    m.registration = r;
                    members_[r.member_id] = std::move(m);
                    next_member_id_ = std::max(next_member_id_, r.member_id + 1);
                } else if constexpr (std::is_same_v<R, ProposeRecord>) {
                    proposals[r.epoch] = r;
                    highest_epoch_ = std::max(highest_epoch_, r.epoch);
                    open_proposal = r.epoch;
                } else if constexpr (std::is_same_v<R, CommitRecord>) {
                    view_ = make_view(r.epoch, proposals.at(r.epoch).members);
                    ever_in_view.insert(view_.members.begin(), view_.members.end());
                    open_proposal.reset();
                    epoch_values_.clear();
                    aborted_.clear();
                } else if constexpr (std::is_same_v<R, AbortRecord>) {
                    open_proposal.reset();
                    aborted_.insert(r.epoch);
                } else if constexpr (std::is_same_v<R, DeadRecord>) {
                    members_.at(r.member_id).status = MemberStatus::dead;
                } else if constexpr (std::is_same_v<R, LeftRecord>) {
                    members_.at(r.member_id).status = MemberStatus::left;
                } else if constexpr (std::is_same_v<R, KvPutRecord>) {
                    if (r.scope == KvScope::job || r.epoch == view_.epoch) store_put(r);
                } else if constexpr (std::is_same_v<R, CloseRecord>) {
                    closed_ = true;
                    close_reason_ = "closed before the restart";
                }
            },
            record);
    }
    for (auto& [id, m] : members_) {
        if (m.status == MemberStatus::joining && view_.contains(id)) m.status = MemberStatus::active;
        // Released victims have no record of their own: they were in a committed view and are no longer.
        if (m.status == MemberStatus::joining && ever_in_view.contains(id)) m.status = MemberStatus::left;
        m.expires_at = now_ + std::max(config_.reconnect_grace_ms, config_.lease_ms);
        m.changed_at = now_;
    }
    // No worker switches before COMMIT, so a proposal without one can be dropped; its epoch stays used.
    if (open_proposal && !closed_) {
        persist(AbortRecord{*open_proposal});
        aborted_.insert(*open_proposal);
    }
}

}  // namespace gpuops::rescale
