// Admin commands (rescale-coord ctl): status, shrink, expand, drain-host, set, close.
#include <algorithm>

#include <fmt/format.h>

#include "gpuops/rescale/coordinator.hpp"

namespace gpuops::rescale {
namespace {

AdminReply refuse(ErrorCode code, std::string msg) { return {false, code, std::move(msg), nullptr}; }

}  // namespace

json_io::Json Coordinator::status_json() const {
    using json_io::Json;
    Json doc = Json::object();
    doc["job"] = config_.job;
    doc["closed"] = closed_;
    if (closed_) doc["close_reason"] = close_reason_;
    doc["coord_incarnation"] = coord_incarnation_;
    doc["phase"] = to_string(phase());
    doc["epoch"] = view_.epoch;
    doc["view_hash"] = view_.hash;
    doc["size"] = view_.size();
    doc["highest_epoch"] = highest_epoch_;
    doc["min_size"] = config_.min_size;
    doc["max_size"] = config_.max_size;
    doc["batch_window_ms"] = config_.batch_window_ms;
    if (flight_) {
        Json t = {{"transition_id", flight_->id},      {"kind", to_string(flight_->kind)},
                  {"from_epoch", flight_->from_epoch}, {"victims", flight_->victims},
                  {"joiners", flight_->joiners},       {"deadline_in_ms", flight_->deadline - now_}};
        if (flight_->phase == Phase::preparing) {
            t["proposed_epoch"] = flight_->proposed.epoch;
            t["acked"] = std::vector<MemberId>(flight_->acked.begin(), flight_->acked.end());
        } else {
            t["at_safe_point"] = std::vector<MemberId>(flight_->at_safe_point.begin(), flight_->at_safe_point.end());
        }
        doc["transition"] = std::move(t);
    } else {
        doc["transition"] = nullptr;
    }
    Json members = Json::array();
    for (const auto& [id, m] : members_) {
        const auto rank = view_.rank_of(id);
        members.push_back({{"member_id", id},
                           {"worker_id", m.registration.worker_id},
                           {"host", m.registration.host},
                           {"status", to_string(m.status)},
                           {"rank", rank ? Json(*rank) : Json(nullptr)},
                           {"connected", m.conn.has_value()},
                           {"victim", m.victim_deadline.has_value()},
                           {"drained", m.drained}});
    }
    doc["members"] = std::move(members);
    return doc;
}

AdminReply Coordinator::admin(const StatusCmd& /*c*/) { return {true, std::nullopt, "status", status_json()}; }

/// Marks `ids` (members of the view) for a planned removal, unless that would leave fewer than min_size.
AdminReply Coordinator::mark_victims(const std::vector<MemberId>& ids, std::optional<TimeMs> deadline_in_ms) {
    if (closed_) return refuse(ErrorCode::closed, "the job is closed");
    std::set<MemberId> leaving(ids.begin(), ids.end());
    for (const MemberId id : view_.members) {
        const MemberState& m = members_.at(id);
        if (m.gone() || m.victim_deadline) leaving.insert(id);
    }
    for (const MemberId id : ids) {
        if (!view_.contains(id) || is_gone(id)) {
            return refuse(ErrorCode::invalid, fmt::format("member {} is not a live member of the view", id));
        }
    }
    const std::size_t remaining = view_.size() - leaving.size();
    if (remaining < config_.min_size) {
        return refuse(ErrorCode::invalid, fmt::format("removing {} would leave {} members, below min size {}",
                                                      ids.size(), remaining, config_.min_size));
    }
    const TimeMs deadline = now_ + deadline_in_ms.value_or(config_.safe_point_timeout_ms);
    for (const MemberId id : ids) {
        MemberState& m = members_.at(id);
        if (!m.victim_deadline) m.changed_at = now_;
        m.victim_deadline = std::min(m.victim_deadline.value_or(deadline), deadline);
    }
    membership_changed();
    return {true, std::nullopt, fmt::format("{} member(s) to drain and remove", ids.size()), nullptr};
}

AdminReply Coordinator::admin(const ShrinkCmd& c) {
    if (!c.members.empty()) return mark_victims(c.members, c.deadline_in_ms);
    if (c.count == 0) return refuse(ErrorCode::invalid, "shrink needs members or a count");
    // The highest ranks go first: every other rank keeps its number.
    std::vector<MemberId> ids;
    for (auto it = view_.members.rbegin(); it != view_.members.rend() && ids.size() < c.count; ++it) {
        const MemberState& m = members_.at(*it);
        if (!m.gone() && !m.victim_deadline) ids.push_back(*it);
    }
    if (ids.size() < c.count) {
        return refuse(ErrorCode::invalid, fmt::format("only {} member(s) can be removed", ids.size()));
    }
    return mark_victims(ids, c.deadline_in_ms);
}

AdminReply Coordinator::admin(const ExpandCmd& c) {
    if (closed_) return refuse(ErrorCode::closed, "the job is closed");
    std::vector<MemberId> chosen;
    for (auto& [id, m] : members_) {
        if (m.status != MemberStatus::joining || m.victim_deadline) continue;
        const bool listed = std::ranges::find(c.worker_ids, m.registration.worker_id) != c.worker_ids.end();
        if (c.worker_ids.empty() ? (c.count == 0 || chosen.size() < c.count) : listed) chosen.push_back(id);
    }
    if (chosen.empty()) return refuse(ErrorCode::invalid, "no matching joiner is waiting");
    if (!c.worker_ids.empty() && chosen.size() < c.worker_ids.size()) {
        return refuse(ErrorCode::invalid, "some of the listed workers are not waiting to join");
    }
    for (const MemberId id : chosen)
        members_.at(id).admitted = true;
    membership_changed();
    force_now_ = true;
    return {true, std::nullopt, fmt::format("{} joiner(s) admitted", chosen.size()), nullptr};
}

AdminReply Coordinator::admin(const DrainHostCmd& c) {
    std::vector<MemberId> ids;
    for (const MemberId id : view_.members)
        if (members_.at(id).registration.host == c.host && !is_gone(id)) ids.push_back(id);
    if (ids.empty()) return refuse(ErrorCode::invalid, fmt::format("no live member on host {}", quote(c.host)));
    return mark_victims(ids, c.deadline_in_ms);
}

AdminReply Coordinator::admin(const SetCmd& c) {
    if (closed_) return refuse(ErrorCode::closed, "the job is closed");
    const std::uint64_t min_size = c.min_size.value_or(config_.min_size);
    const std::uint64_t max_size = c.max_size.value_or(config_.max_size);
    if (min_size < 1 || max_size < min_size) {
        return refuse(ErrorCode::invalid, fmt::format("need 1 <= min ({}) <= max ({})", min_size, max_size));
    }
    // Limits bound the views to come; a running view outside them could neither shrink nor replace a failed
    // member (no view below min is committed), nor would it shrink to meet max.
    const std::size_t size = view_.members.size();
    if (size > 0 && min_size > size) {
        return refuse(ErrorCode::invalid, fmt::format("min {} is above the current size {}", min_size, size));
    }
    if (size > 0 && max_size < size) {
        return refuse(ErrorCode::invalid, fmt::format("max {} is below the current size {}", max_size, size));
    }
    config_.min_size = min_size;
    config_.max_size = max_size;  // caps the joiners
    membership_changed();
    config_.batch_window_ms = c.batch_window_ms.value_or(config_.batch_window_ms);
    persist(ConfigRecord{config_.min_size, config_.max_size, config_.batch_window_ms});
    return {true, std::nullopt, "limits set", nullptr};
}

AdminReply Coordinator::admin(const CloseCmd& /*c*/) {
    close_job("closed by admin");
    return {true, std::nullopt, "job closed", nullptr};
}

}  // namespace gpuops::rescale
