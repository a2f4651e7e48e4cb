// The view change of research/rescale.md §6.3: collect pending changes, TRANSITION → SAFE_POINT/DRAINED →
// PROPOSE (durable) → PREPARE → ACK → COMMIT (durable) → RELEASE, with ABORT and re-proposal on any failure.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "gpuops/rescale/coordinator.hpp"

namespace gpuops::rescale {

const Coordinator::Changes& Coordinator::pending_changes() const {
    if (!pending_cache_) {
        pending_cache_ = compute_pending_changes();
    } else if (config_.self_check && compute_pending_changes() != *pending_cache_) {
        throw std::logic_error("the cached pending changes are stale: a change did not call membership_changed()");
    }
    return *pending_cache_;
}

void Coordinator::member_registered(const MemberState& m) {
    if (!pending_cache_) return;
    Changes& c = *pending_cache_;
    // As compute_pending_changes() would: a fresh member is joining and never admitted or a victim yet.
    const std::size_t staying = view_.members.size() - c.gone.size() - c.victims.size();
    if (config_.auto_expand && staying + c.joiners.size() < config_.max_size) {
        c.since = c.empty() ? m.changed_at : std::min(c.since, m.changed_at);
        c.joiners.push_back(m.registration.member_id);
    }
}

std::size_t Coordinator::size_after(const Changes& changes) const {
    // gone and victims are members of the view (disjoint), joiners are not in it.
    const std::size_t size =
        view_.members.size() - changes.gone.size() - changes.victims.size() + changes.joiners.size();
    if (config_.self_check && size != members_after(changes).size()) {
        throw std::logic_error("size_after disagrees with members_after");
    }
    return size;
}

Coordinator::Changes Coordinator::compute_pending_changes() const {
    Changes c;
    std::optional<TimeMs> since;
    const auto note = [&](const MemberState& m) { since = std::min(since.value_or(m.changed_at), m.changed_at); };
    std::uint64_t staying = 0;
    for (const MemberId id : view_.members) {
        const MemberState& m = members_.at(id);
        if (m.gone()) {
            c.gone.push_back(id);
            c.any_dead = c.any_dead || m.status == MemberStatus::dead;
            c.any_left = c.any_left || m.status == MemberStatus::left;
            note(m);
        } else if (m.victim_deadline) {
            c.victims.push_back(id);
            note(m);
        } else {
            ++staying;
        }
    }
    // Member ids grow with registration, so map order is admission order.
    for (const auto& [id, m] : members_) {
        if (m.status != MemberStatus::joining || m.victim_deadline) continue;
        if (!config_.auto_expand && !m.admitted) continue;
        if (staying + c.joiners.size() >= config_.max_size) break;
        c.joiners.push_back(id);
        note(m);
    }
    c.since = since.value_or(0);
    return c;
}

bool Coordinator::has_pending_changes() const { return !pending_changes().empty(); }

std::vector<MemberId> Coordinator::members_after(const Changes& changes) const {
    std::set<MemberId> removed(changes.gone.begin(), changes.gone.end());
    removed.insert(changes.victims.begin(), changes.victims.end());
    return next_members(view_.members, removed, changes.joiners);
}

bool Coordinator::waiting_for_min_size() const {
    const Changes& changes = pending_changes();
    return !changes.empty() && size_after(changes) < config_.min_size;
}

TransitionKind Coordinator::kind_of(const Changes& changes) const {
    const bool planned = !changes.victims.empty() || changes.any_left;
    const int kinds = int{planned} + int{changes.any_dead} + int{!changes.joiners.empty()};
    if (kinds > 1) return TransitionKind::mixed;
    if (changes.any_dead) return TransitionKind::fail;
    return changes.joiners.empty() ? TransitionKind::shrink : TransitionKind::expand;
}

void Coordinator::advance() {
    // Each step starts, moves or ends a transition; a completed one may let the next start at once.
    while (!closed_ && step()) {
    }
}

bool Coordinator::step() {
    if (!flight_) return begin_transition();
    if (flight_->phase == Phase::safe_point_wait) {
        if (!safe_points_complete()) return false;
        propose();
        return true;
    }
    if (!all_acked()) return false;
    commit();
    return true;
}

bool Coordinator::begin_transition() {
    const Changes changes = pending_changes();  // a copy: the transition below changes membership
    if (changes.empty()) return false;
    // Everything that arrives within one batch window goes into one epoch ("eight simultaneous interruptions").
    if (!force_now_ && now_ < changes.since + config_.batch_window_ms) return false;
    if (size_after(changes) < config_.min_size) {
        if (config_.below_min == BelowMinPolicy::close && !view_.members.empty()) {
            close_job(fmt::format("the view would fall below min size {}", config_.min_size));
        }
        return false;  // wait: a later joiner re-runs this
    }
    force_now_ = false;

    InFlight flight;
    flight.id = (coord_incarnation_ << 32U) | ++transition_counter_;
    flight.kind = kind_of(changes);
    flight.from_epoch = view_.epoch;
    flight.victims = changes.victims;
    flight.joiners = changes.joiners;
    // A failure needs no safe point (the runtime recovers on its own); planned changes and joiners need the
    // runtime parked at a safe point, except when there is no running view yet.
    flight.needs_safe_point = !view_.members.empty() && (!changes.victims.empty() || !changes.joiners.empty());
    flight.phase = Phase::safe_point_wait;
    flight.deadline = now_ + config_.safe_point_timeout_ms;
    for (const MemberId id : changes.victims)
        flight.deadline = std::max(now_, std::min(flight.deadline, *members_.at(id).victim_deadline));
    flight_ = std::move(flight);
    if (flight_->needs_safe_point) {
        // One message for every member: the server encodes a shared message once.
        const auto transition = std::make_shared<const Message>(transition_message());
        for (const MemberId id : view_.members)
            if (!is_gone(id)) send_to(id, transition);
    }
    return true;
}

bool Coordinator::safe_points_complete() const {
    if (!flight_->needs_safe_point) return true;
    for (const MemberId id : view_.members) {
        if (is_gone(id)) continue;
        const bool victim = std::ranges::find(flight_->victims, id) != flight_->victims.end();
        if (victim ? !members_.at(id).drained : !flight_->at_safe_point.contains(id)) return false;
    }
    return true;
}

void Coordinator::propose() {
    // Members that died while the runtime was parking are removed too: a dead member cannot ACK.
    std::set<MemberId> removed(flight_->victims.begin(), flight_->victims.end());
    for (const MemberId id : view_.members)
        if (is_gone(id)) removed.insert(id);
    std::vector<MemberId> joiners;
    for (const MemberId id : flight_->joiners) {
        const MemberState& m = members_.at(id);
        if (m.status == MemberStatus::joining && !m.victim_deadline) joiners.push_back(id);
    }
    std::vector<MemberId> next = next_members(view_.members, removed, joiners);
    if (next == view_.members) {
        abandon("nothing left to change");
        return;
    }
    if (next.size() < config_.min_size) {
        abandon(fmt::format("the view would fall below min size {}", config_.min_size));
        return;
    }
    flight_->joiners = std::move(joiners);
    flight_->proposed = make_view(++highest_epoch_, std::move(next));
    flight_->phase = Phase::preparing;
    flight_->deadline = now_ + config_.prepare_timeout_ms;
    flight_->acked.clear();
    flight_->prepare_delta.reset();
    flight_->prepare_full.reset();
    // The epoch is allocated by this record: logged before any PREPARE names it, never reused.
    persist(ProposeRecord{flight_->proposed.epoch, view_.epoch, flight_->proposed.members, flight_->proposed.hash});
    for (const MemberId id : flight_->proposed.members)
        send_to(id, prepare_message(id));
}

bool Coordinator::all_acked() const {
    // Only members of the proposal are ever recorded as acked.
    return flight_->acked.size() == flight_->proposed.members.size();
}

void Coordinator::commit() {
    const GroupView old = std::exchange(view_, flight_->proposed);
    // Durable before any worker can see it: a restart must never forget a view that some worker switched to.
    persist(CommitRecord{view_.epoch, view_.hash});
    aborted_.clear();
    const auto commit_message = std::make_shared<const Message>(Commit{view_.epoch, view_.hash});
    for (const MemberId id : view_.members) {
        MemberState& m = members_.at(id);
        m.status = MemberStatus::active;
        m.admitted = false;
        send_to(id, commit_message);
    }
    for (const MemberId id : old.members) {
        MemberState& m = members_.at(id);
        if (m.gone() || view_.contains(id)) continue;
        // A drained victim: out of the job. Its connection stays open so that it may park as a spare
        // (a new HELLO with a new incarnation).
        m.status = MemberStatus::left;
        m.victim_deadline.reset();
        if (m.conn) {
            send(*m.conn, Release{view_.epoch});
            conn_member_.erase(*m.conn);
            m.conn.reset();
        }
    }
    membership_changed();  // the new view, joiners active, victims left
    flight_.reset();
    end_epoch_kv(old.epoch);
}

void Coordinator::abort_proposal(const std::string& reason) {
    persist(AbortRecord{flight_->proposed.epoch});
    aborted_.insert(flight_->proposed.epoch);
    std::set<MemberId> told(view_.members.begin(), view_.members.end());
    told.insert(flight_->proposed.members.begin(), flight_->proposed.members.end());
    const auto abort = std::make_shared<const Message>(Abort{flight_->proposed.epoch, flight_->id, reason});
    flight_.reset();
    for (const MemberId id : told)
        if (!is_gone(id)) send_to(id, abort);
}

void Coordinator::abandon(const std::string& reason) {
    const bool told = flight_->needs_safe_point;
    const auto abort = std::make_shared<const Message>(Abort{std::nullopt, flight_->id, reason});
    flight_.reset();
    if (!told) return;  // nobody heard of it
    for (const MemberId id : view_.members)
        if (!is_gone(id)) send_to(id, abort);
}

void Coordinator::declare_dead(MemberId id, const std::string& reason) {
    if (is_gone(id)) return;
    MemberState& m = members_.at(id);
    m.status = MemberStatus::dead;
    m.changed_at = now_;
    m.victim_deadline.reset();
    membership_changed();
    persist(DeadRecord{id, view_.epoch, reason});
    if (m.conn) {
        send(*m.conn, Evicted{view_.epoch, reason});
        close_conn(*m.conn);
    }
    member_gone(id);
}

void Coordinator::mark_left(MemberId id) {
    if (is_gone(id)) return;
    MemberState& m = members_.at(id);
    m.status = MemberStatus::left;
    m.changed_at = now_;
    m.victim_deadline.reset();
    membership_changed();
    persist(LeftRecord{id, view_.epoch});
    if (m.conn) {
        send(*m.conn, Release{view_.epoch});
        conn_member_.erase(*m.conn);
        m.conn.reset();
    }
    member_gone(id);
}

void Coordinator::member_gone(MemberId id) {
    fail_kv_for_gone(id);
    // A proposal that counts on this member can no longer commit: abort it; advance() proposes again without it.
    if (flight_ && flight_->phase == Phase::preparing && flight_->proposed.contains(id)) {
        abort_proposal(fmt::format("member {} is gone", id));
    }
}

void Coordinator::check_deadlines() {
    std::vector<std::pair<MemberId, std::string>> expired;
    for (const auto& [id, m] : members_) {
        if (!m.gone() && now_ >= m.expires_at) {
            expired.emplace_back(id, m.conn ? "lease expired" : "reconnect grace expired");
        }
    }
    for (const auto& [id, reason] : expired)
        declare_dead(id, reason);

    if (!flight_ || now_ < flight_->deadline) return;
    if (flight_->phase == Phase::safe_point_wait) {
        // Past the drain deadline a victim is removed anyway, recorded DEAD (not LEFT): its objects may be lost.
        for (const MemberId id : std::vector(flight_->victims))
            if (!members_.at(id).drained) declare_dead(id, "did not drain before the deadline");
        if (flight_ && !safe_points_complete()) abandon("members did not reach a safe point in time");
        return;
    }
    std::vector<MemberId> silent;
    for (const MemberId id : flight_->proposed.members)
        if (!flight_->acked.contains(id)) silent.push_back(id);
    for (const MemberId id : silent)
        declare_dead(id, "no ACK before the prepare timeout");
}

void Coordinator::close_job(const std::string& reason) {
    if (closed_) return;
    if (flight_ && flight_->phase == Phase::preparing) persist(AbortRecord{flight_->proposed.epoch});
    persist(CloseRecord{});
    for (const auto& [conn, id] : conn_member_) {
        send(conn, Release{view_.epoch});
        out_.emplace_back(CloseAction{conn});
        members_.at(id).conn.reset();
    }
    conn_member_.clear();
    flight_.reset();
    fences_.clear();
    gets_.clear();
    closed_ = true;
    close_reason_ = reason;
}

Transition Coordinator::transition_message() const {
    return {flight_->id,      flight_->from_epoch, flight_->kind,
            flight_->victims, flight_->joiners,    flight_->deadline - now_};
}

std::shared_ptr<const Message> Coordinator::prepare_message(MemberId to) {
    const bool full_table = !view_.contains(to);
    auto& built = full_table ? flight_->prepare_full : flight_->prepare_delta;
    if (built) return built;
    const GroupView& next = flight_->proposed;
    Prepare p{next.epoch, flight_->from_epoch, next.hash, next.members, {}, {}, full_table};
    for (const MemberId id : view_.members)
        if (!next.contains(id)) p.removed.push_back(id);
    for (std::size_t rank = 0; rank < next.members.size(); ++rank) {
        const MemberId id = next.members[rank];
        if (full_table || !view_.contains(id)) p.added.push_back({id, rank, members_.at(id).registration.addr_b64});
    }
    built = std::make_shared<const Message>(std::move(p));
    return built;
}

std::optional<TimeMs> Coordinator::next_deadline() const {
    if (closed_) return std::nullopt;
    std::optional<TimeMs> next;
    const auto consider = [&](TimeMs t) { next = std::min(next.value_or(t), t); };
    for (const auto& [id, m] : members_)
        if (!m.gone()) consider(m.expires_at);
    for (const auto& [fence_id, fence] : fences_)
        consider(fence.deadline);
    if (flight_) {
        consider(flight_->deadline);
    } else if (const Changes& changes = pending_changes(); !changes.empty()) {
        // Only a window still running counts: an elapsed one is waiting for min size, and a tick cannot help.
        const TimeMs window_end = changes.since + config_.batch_window_ms;
        if (window_end > now_) consider(window_end);
    }
    return next;
}

}  // namespace gpuops::rescale
