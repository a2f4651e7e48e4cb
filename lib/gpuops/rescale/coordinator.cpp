// Coordinator event plumbing and the handlers of worker requests: registration, resume, leases, safe points,
// acks, notices and departures. The view change itself lives in coordinator_transition.cpp.
#include "gpuops/rescale/coordinator.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace gpuops::rescale {
namespace {

/// Token comparison that takes the same time wherever the first difference is.
bool same_secret(std::string_view a, std::string_view b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    const std::size_t n = std::max(a.size(), b.size());
    for (std::size_t i = 0; i < n; ++i) {
        const auto x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
        const auto y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
        diff = static_cast<unsigned char>(diff | (x ^ y));
    }
    return diff == 0;
}

std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30U)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27U)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31U);
}

/// Sessions derive from the shell's random seed, so the core stays deterministic under test.
std::string make_session(std::uint64_t seed, std::uint64_t coord_incarnation, MemberId id) {
    return fmt::format("{:016x}{:016x}", splitmix64(seed ^ splitmix64(id)), splitmix64(seed + coord_incarnation + id));
}

template <typename T>
constexpr bool is_admin_command =
    std::is_same_v<T, StatusCmd> || std::is_same_v<T, ShrinkCmd> || std::is_same_v<T, ExpandCmd> ||
    std::is_same_v<T, DrainHostCmd> || std::is_same_v<T, SetCmd> || std::is_same_v<T, CloseCmd>;

template <typename T>
constexpr bool is_request =
    std::is_same_v<T, Hello> || std::is_same_v<T, Heartbeat> || std::is_same_v<T, SafePoint> ||
    std::is_same_v<T, Drained> || std::is_same_v<T, Ack> || std::is_same_v<T, Ready> || std::is_same_v<T, Notice> ||
    std::is_same_v<T, Leave> || std::is_same_v<T, Put> || std::is_same_v<T, Fence> || std::is_same_v<T, Get>;

}  // namespace

std::string_view to_string(MemberStatus status) {
    constexpr std::array names{"joining", "active", "dead", "left"};
    return names.at(static_cast<std::size_t>(status));
}

std::string_view to_string(Phase phase) {
    constexpr std::array names{"idle", "safe_point_wait", "preparing"};
    return names.at(static_cast<std::size_t>(phase));
}

// ---- plumbing -------------------------------------------------------------------------------------------------

void Coordinator::begin(TimeMs now) {
    now_ = std::max(now_, now);  // the clock is monotonic; a late timestamp must not move deadlines back
    out_.clear();
}

Actions Coordinator::finish() {
    advance();
    return std::exchange(out_, {});
}

void Coordinator::persist(Record record) { out_.emplace_back(PersistAction{std::move(record)}); }

void Coordinator::send(ConnId conn, Message message) {
    send(conn, std::make_shared<const Message>(std::move(message)));
}

void Coordinator::send(ConnId conn, std::shared_ptr<const Message> message) {
    out_.emplace_back(SendAction{conn, std::move(message)});
}

void Coordinator::send_to(MemberId id, Message message) {
    send_to(id, std::make_shared<const Message>(std::move(message)));
}

void Coordinator::send_to(MemberId id, std::shared_ptr<const Message> message) {
    const auto it = members_.find(id);
    // A disconnected member misses the message; catch_up() repeats what still matters when it resumes.
    if (it != members_.end() && it->second.conn) send(*it->second.conn, std::move(message));
}

void Coordinator::close_conn(ConnId conn) {
    if (const auto it = conn_member_.find(conn); it != conn_member_.end()) {
        members_.at(it->second).conn.reset();
        conn_member_.erase(it);
    }
    out_.emplace_back(CloseAction{conn});
}

void Coordinator::reply_error(ConnId conn, std::uint64_t seq, ErrorCode code, std::string msg) {
    send(conn, ErrorReply{code, std::move(msg), seq});
}

void Coordinator::renew_lease(MemberState& m) { m.expires_at = now_ + config_.lease_ms; }

void Coordinator::unbind(MemberState& m) {
    if (m.conn) conn_member_.erase(*m.conn);
    m.conn.reset();
    m.expires_at = now_ + config_.reconnect_grace_ms;
}

MemberState* Coordinator::member_on(ConnId conn, std::uint64_t seq) {
    const auto it = conn_member_.find(conn);
    if (it == conn_member_.end()) {
        reply_error(conn, seq, ErrorCode::unknown_member, "no member on this connection: send HELLO first");
        return nullptr;
    }
    MemberState& m = members_.at(it->second);
    renew_lease(m);  // any message proves the process alive
    return &m;
}

bool Coordinator::is_gone(MemberId id) const { return members_.at(id).gone(); }

ViewInfo Coordinator::view_info() const {
    ViewInfo info{view_.epoch, view_.hash, {}};
    for (std::size_t rank = 0; rank < view_.members.size(); ++rank) {
        const MemberId id = view_.members[rank];
        info.peers.push_back({id, rank, members_.at(id).registration.addr_b64});
    }
    return info;
}

// ---- entry points ---------------------------------------------------------------------------------------------

Actions Coordinator::on_line(TimeMs now, ConnId conn, std::string_view line, std::size_t max_line_bytes) {
    Decoded decoded = decode(line, max_line_bytes);
    if (auto* envelope = std::get_if<Envelope>(&decoded)) return on_message(now, conn, *envelope);
    begin(now);
    const auto& error = std::get<DecodeError>(decoded);
    send(conn, ErrorReply{error.code, error.message, error.seq});
    // After an oversize line the stream cannot be resynchronised cheaply; other bad lines cost only themselves.
    if (error.code == ErrorCode::too_large) close_conn(conn);
    return finish();
}

Actions Coordinator::on_message(TimeMs now, ConnId conn, const Envelope& envelope) {
    begin(now);
    std::optional<AdminReply> admin_reply;
    std::visit(
        [&](const auto& m) {
            using T = std::decay_t<decltype(m)>;
            if constexpr (is_admin_command<T>) {
                if (!same_secret(m.token, config_.admin_token) || config_.admin_token.empty()) {
                    reply_error(conn, envelope.seq, ErrorCode::bad_token, "wrong admin token");
                    close_conn(conn);
                    return;
                }
                admin_reply = admin(m);
            } else if constexpr (is_request<T>) {
                if (closed_) {
                    reply_error(conn, envelope.seq, ErrorCode::closed, "the job is closed");
                    close_conn(conn);
                    return;
                }
                handle(conn, envelope.seq, m);
            } else {
                reply_error(conn, envelope.seq, ErrorCode::protocol,
                            fmt::format("{} is sent by the coordinator, not to it", T::type));
            }
        },
        envelope.body);
    if (!admin_reply) return finish();
    advance();
    // Sent after advance() so that the status shows the transition the command started, if any.
    if (admin_reply->ok) admin_reply->status = status_json();
    send(conn, std::move(*admin_reply));
    return std::exchange(out_, {});
}

Actions Coordinator::on_closed(TimeMs now, ConnId conn) {
    begin(now);
    if (const auto it = conn_member_.find(conn); it != conn_member_.end()) unbind(members_.at(it->second));
    return finish();
}

Actions Coordinator::on_tick(TimeMs now) {
    begin(now);
    check_deadlines();
    check_fence_deadlines();
    return finish();
}

std::pair<AdminReply, Actions> Coordinator::on_admin(TimeMs now, const AdminCommand& command) {
    begin(now);
    AdminReply reply = std::visit([&](const auto& c) { return admin(c); }, command);
    Actions actions = finish();
    // The status in the reply shows the transition the command started, if any.
    if (reply.ok) reply.status = status_json();
    return {std::move(reply), std::move(actions)};
}

// ---- registration and resume ----------------------------------------------------------------------------------

void Coordinator::handle(ConnId conn, std::uint64_t seq, const Hello& m) {
    if (conn_member_.contains(conn)) {
        reply_error(conn, seq, ErrorCode::protocol, "this connection already has a member");
        return;
    }
    // An empty job means "the job this coordinator serves": the token is what authenticates.
    if ((!m.job.empty() && m.job != config_.job) || !same_secret(m.token, config_.token)) {
        reply_error(conn, seq, ErrorCode::bad_token, fmt::format("wrong job or token for job {}", quote(m.job)));
        close_conn(conn);
        return;
    }
    if (m.resume) {
        const auto it = members_.find(m.resume->member_id);
        if (it == members_.end() || it->second.registration.worker_id != m.worker_id) {
            reply_error(conn, seq, ErrorCode::unknown_member,
                        fmt::format("no member {} for worker {}", m.resume->member_id, quote(m.worker_id)));
            return;
        }
        if (it->second.registration.incarnation == m.incarnation &&
            !same_secret(it->second.registration.session, m.resume->session)) {
            reply_error(conn, seq, ErrorCode::bad_token, "wrong session");
            close_conn(conn);
            return;
        }
        resume_member(conn, seq, m, it->second);
        return;
    }
    // A fresh HELLO from a worker that already has a live member: the same process whose WELCOME was lost gets
    // its member back; a new process (another incarnation) replaces the old one, which cannot be running.
    for (auto& [id, member] : members_) {
        if (member.registration.worker_id != m.worker_id || member.gone()) continue;
        if (member.registration.incarnation == m.incarnation) {
            resume_member(conn, seq, m, member);
            return;
        }
        declare_dead(id, "superseded by a new incarnation");
    }
    register_member(conn, m);
}

void Coordinator::register_member(ConnId conn, const Hello& m) {
    const MemberId id = next_member_id_++;
    MemberState member;
    member.registration =
        RegisterRecord{id,     m.worker_id, m.incarnation, make_session(config_.session_seed, coord_incarnation_, id),
                       m.host, m.addr_b64,  m.meta};
    member.status = MemberStatus::joining;
    member.conn = conn;
    member.changed_at = now_;
    renew_lease(member);
    persist(member.registration);  // before WELCOME: a resume after a restart must find this id
    conn_member_[conn] = id;
    const auto& stored = members_.emplace(id, std::move(member)).first->second;
    member_registered(stored);
    send(conn, Welcome{id, stored.registration.session, coord_incarnation_, JoinState::joining, std::nullopt});
}

void Coordinator::resume_member(ConnId conn, std::uint64_t seq, const Hello& m, MemberState& member) {
    // A zombie: the process that owned this member was replaced, or the member was removed. It must stop.
    if (member.registration.incarnation != m.incarnation || member.gone()) {
        const std::string reason = member.registration.incarnation != m.incarnation
                                       ? "stale incarnation"
                                       : fmt::format("member is {}", to_string(member.status));
        send(conn, Evicted{view_.epoch, reason});
        close_conn(conn);
        (void)seq;
        return;
    }
    if (member.conn) {
        // The old connection is half-open at best; the new one wins.
        const ConnId old = *member.conn;
        unbind(member);
        out_.emplace_back(CloseAction{old});
    }
    member.conn = conn;
    conn_member_[conn] = member.registration.member_id;
    renew_lease(member);
    const bool active = member.status == MemberStatus::active;
    send(conn,
         Welcome{member.registration.member_id, member.registration.session, coord_incarnation_,
                 active ? JoinState::active : JoinState::joining, active ? std::optional(view_info()) : std::nullopt});
    catch_up(member);
}

/// Repeats to a resumed member what it may have missed while disconnected and still has to act on.
void Coordinator::catch_up(MemberState& member) {
    const MemberId id = member.registration.member_id;
    // Without it a worker that ACKed an aborted proposal stays prepared and ignores every later TRANSITION.
    for (const Epoch epoch : aborted_)
        send_to(id, Abort{epoch, 0, "aborted while this member was away"});
    if (!flight_) return;
    if (flight_->phase == Phase::safe_point_wait && flight_->needs_safe_point && view_.contains(id)) {
        const bool victim = std::ranges::find(flight_->victims, id) != flight_->victims.end();
        if (victim ? !member.drained : !flight_->at_safe_point.contains(id)) send_to(id, transition_message());
    }
    if (flight_->phase == Phase::preparing && flight_->proposed.contains(id) && !flight_->acked.contains(id)) {
        send_to(id, prepare_message(id));
    }
}

// ---- leases and the transition's messages -----------------------------------------------------------------------

void Coordinator::handle(ConnId conn, std::uint64_t seq, const Heartbeat& /*m*/) {
    MemberState* member = member_on(conn, seq);
    if (!member) return;
    HbAck ack{view_.epoch, std::nullopt};
    if (flight_ && view_.contains(member->registration.member_id)) {
        ack.pending = PendingInfo{flight_->id, flight_->kind, flight_->victims};
    }
    send(conn, std::move(ack));
}

/// SAFE_POINT and DRAINED must name the transition in flight and its starting epoch; anything else is stale.
bool Coordinator::check_transition_message(ConnId conn, std::uint64_t seq, Epoch epoch, TransitionId id) {
    if (!flight_ || flight_->id != id || epoch != flight_->from_epoch || flight_->phase != Phase::safe_point_wait) {
        reply_error(conn, seq, ErrorCode::stale_epoch,
                    fmt::format("transition {} at epoch {} is not the one in flight", id, epoch));
        return false;
    }
    return true;
}

void Coordinator::handle(ConnId conn, std::uint64_t seq, const SafePoint& m) {
    MemberState* member = member_on(conn, seq);
    if (!member || !check_transition_message(conn, seq, m.epoch, m.transition_id)) return;
    if (!view_.contains(member->registration.member_id)) {
        reply_error(conn, seq, ErrorCode::protocol, "only members of the view report safe points");
        return;
    }
    flight_->at_safe_point.insert(member->registration.member_id);
}

void Coordinator::handle(ConnId conn, std::uint64_t seq, const Drained& m) {
    MemberState* member = member_on(conn, seq);
    if (!member || !check_transition_message(conn, seq, m.epoch, m.transition_id)) return;
    const MemberId id = member->registration.member_id;
    if (std::ranges::find(flight_->victims, id) == flight_->victims.end()) {
        reply_error(conn, seq, ErrorCode::protocol, fmt::format("member {} is not a victim of this transition", id));
        return;
    }
    member->drained = true;
    flight_->at_safe_point.insert(id);
}

void Coordinator::handle(ConnId conn, std::uint64_t seq, const Ack& m) {
    MemberState* member = member_on(conn, seq);
    if (!member) return;
    const MemberId id = member->registration.member_id;
    if (!flight_ || flight_->phase != Phase::preparing || m.epoch != flight_->proposed.epoch) {
        reply_error(conn, seq, ErrorCode::stale_epoch, fmt::format("no proposal for epoch {} is open", m.epoch));
        return;
    }
    if (!flight_->proposed.contains(id)) {
        reply_error(conn, seq, ErrorCode::protocol, fmt::format("member {} is not in the proposed view", id));
        return;
    }
    if (m.view_hash != flight_->proposed.hash) {
        reply_error(conn, seq, ErrorCode::protocol, fmt::format("view hash {} is not the proposal's", m.view_hash));
        return;
    }
    if (!m.ok) {
        // A member that could not reconcile its endpoints cannot be in the view; without it the re-proposal
        // can succeed, with it the job would retry forever.
        declare_dead(id, fmt::format("rejected epoch {}: {}", m.epoch, m.err));
        return;
    }
    flight_->acked.insert(id);
}

void Coordinator::handle(ConnId conn, std::uint64_t seq, const Ready& m) {
    MemberState* member = member_on(conn, seq);
    if (member && m.epoch != view_.epoch) {
        reply_error(conn, seq, ErrorCode::stale_epoch,
                    fmt::format("epoch {} is not the committed epoch {}", m.epoch, view_.epoch));
    }
}

// ---- notices and departures -----------------------------------------------------------------------------------

void Coordinator::handle(ConnId conn, std::uint64_t seq, const Notice& m) {
    // An agent on the instance may send a notice on its own connection, with the job token instead of a HELLO.
    if (conn_member_.contains(conn)) {
        renew_lease(members_.at(conn_member_.at(conn)));
    } else if (!same_secret(m.token, config_.token)) {
        reply_error(conn, seq, ErrorCode::bad_token, "a NOTICE without HELLO must carry the job token");
        close_conn(conn);
        return;
    }
    std::vector<MemberId> targets;
    for (const auto& [id, member] : members_)
        if (member.registration.worker_id == m.worker_id && !member.gone()) targets.push_back(id);
    if (targets.empty()) {
        reply_error(conn, seq, ErrorCode::unknown_member,
                    fmt::format("no live member for worker {}", quote(m.worker_id)));
        return;
    }
    const TimeMs deadline = now_ + m.deadline_in_ms.value_or(config_.safe_point_timeout_ms);
    for (const MemberId id : targets) {
        MemberState& member = members_.at(id);
        if (member.status == MemberStatus::joining) {
            mark_left(id);  // a joiner about to be interrupted is not worth admitting
            continue;
        }
        if (!member.victim_deadline) member.changed_at = now_;
        member.victim_deadline = std::min(member.victim_deadline.value_or(deadline), deadline);
        membership_changed();
    }
    // An agent has no member to hear from later: it is told the notice was taken.
    if (!conn_member_.contains(conn)) {
        send(conn, AdminReply{true, std::nullopt,
                              fmt::format("notice for worker {} taken: {} member(s) to drain", quote(m.worker_id),
                                          targets.size()),
                              nullptr});
    }
}

void Coordinator::handle(ConnId conn, std::uint64_t seq, const Leave& /*m*/) {
    MemberState* member = member_on(conn, seq);
    if (member) mark_left(member->registration.member_id);
}

}  // namespace gpuops::rescale
