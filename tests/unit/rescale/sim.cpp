// The simulation harness: network delivery, the scripted client of §6.4, and the §7 invariant checks.
#include "sim.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace gpuops::rescale::sim {
namespace {

std::string value_for(MemberId member, Epoch epoch) { return fmt::format("{}@{}", member, epoch); }

bool distinct(std::vector<MemberId> ids) {
    std::sort(ids.begin(), ids.end());
    return std::adjacent_find(ids.begin(), ids.end()) == ids.end();
}

}  // namespace

Sim::Sim(SimConfig config, std::uint64_t seed) : config_(std::move(config)), rng_(seed) {
    config_.coordinator.session_seed = seed;
    config_.coordinator.self_check = true;  // every schedule also checks the core's caches
    auto started = Coordinator::start(config_.coordinator, {}, now_);
    coord_.emplace(std::move(started.coordinator));
    apply(started.actions);
}

void Sim::violation(std::string text) {
    if (violations_.size() < 20) violations_.push_back(fmt::format("t={} {}", now_, text));
}

void Sim::trace(std::string text) {
    if (!config_.trace) return;
    trace_.push_back(fmt::format("t={} {}", now_, text));
    if (trace_.size() > 400) trace_.pop_front();
}

std::string Sim::trace_tail() const {
    std::string out;
    for (const auto& line : trace_)
        out += line + "\n";
    return out;
}

std::vector<Message> Sim::take_received(int w) { return std::exchange(received_[w], {}); }

// ---- the coordinator's side: actions and the durability checks ---------------------------------------------------

void Sim::apply(const Actions& actions, std::optional<std::size_t> limit) {
    if (crash_at_) limit = std::exchange(crash_at_, std::nullopt);
    for (std::size_t i = 0; i < actions.size(); ++i) {
        if (limit && i >= *limit) break;
        std::visit(
            [&](const auto& a) {
                using A = std::decay_t<decltype(a)>;
                if constexpr (std::is_same_v<A, PersistAction>) {
                    store_.append(a.record);
                    on_persist(a.record);
                } else if constexpr (std::is_same_v<A, SendAction>) {
                    on_send(a.conn, *a.message);
                    const auto it = channels_.find(a.conn);
                    if (it != channels_.end() && !it->second.coord_closed && !it->second.worker_closed) {
                        it->second.to_worker.push_back(*a.message);
                    }
                } else {
                    if (const auto it = channels_.find(a.conn); it != channels_.end()) {
                        it->second.coord_closed = true;
                        it->second.to_coord.clear();
                    }
                }
            },
            actions[i]);
    }
    if (limit) do_restart();
}

void Sim::on_persist(const Record& record) {
    if (const auto* r = std::get_if<ProposeRecord>(&record)) {
        trace(fmt::format("PROPOSE e={} [{}]", r->epoch, fmt::join(r->members, ",")));
        if (open_proposal_)
            violation(fmt::format("proposal {} while {} is open (exclusivity)", r->epoch, *open_proposal_));
        if (r->epoch <= last_propose_)
            violation(fmt::format("epoch {} proposed after {} (reused)", r->epoch, last_propose_));
        if (!distinct(r->members)) violation(fmt::format("proposal {} repeats a member", r->epoch));
        if (r->view_hash != view_hash(r->epoch, r->members)) violation("proposal hash is not view_hash()");
        last_propose_ = r->epoch;
        open_proposal_ = r->epoch;
        proposals_[r->epoch] = *r;
    } else if (const auto* c = std::get_if<CommitRecord>(&record)) {
        on_commit_record(*c);
    } else if (const auto* a = std::get_if<AbortRecord>(&record)) {
        trace(fmt::format("ABORT e={}", a->epoch));
        if (open_proposal_ != a->epoch) violation(fmt::format("abort of epoch {} that is not open", a->epoch));
        open_proposal_.reset();
        ++abort_count_;
    } else if (const auto* d = std::get_if<DeadRecord>(&record)) {
        trace(fmt::format("DEAD m{} ({})", d->member_id, d->reason));
        dead_or_left_.insert(d->member_id);
    } else if (const auto* l = std::get_if<LeftRecord>(&record)) {
        trace(fmt::format("LEFT m{}", l->member_id));
        dead_or_left_.insert(l->member_id);
    } else if (const auto* g = std::get_if<RegisterRecord>(&record)) {
        registered_.insert(g->member_id);
    }
}

void Sim::on_commit_record(const CommitRecord& r) {
    trace(fmt::format("COMMIT e={}", r.epoch));
    if (open_proposal_ != r.epoch) violation(fmt::format("commit of epoch {} that is not the open proposal", r.epoch));
    if (r.epoch <= last_commit_) violation(fmt::format("commit {} after {} (epochs must grow)", r.epoch, last_commit_));
    const auto proposal = proposals_.find(r.epoch);
    if (proposal == proposals_.end() || proposal->second.view_hash != r.view_hash) {
        violation(fmt::format("commit {} does not match its proposal", r.epoch));
        return;
    }
    const GroupView next = make_view(r.epoch, proposal->second.members);
    if (next.size() < coord_->config().min_size) {
        violation(
            fmt::format("view {} of size {} is below min size {}", r.epoch, next.size(), coord_->config().min_size));
    }
    for (const MemberId id : next.members) {
        if (!acks_[r.epoch].contains(id)) violation(fmt::format("commit {} without an ACK from m{}", r.epoch, id));
    }
    // Order: survivors keep their relative order at the front, joiners follow in admission (id) order.
    const std::vector<MemberId> previous = last_commit_ ? committed_.at(last_commit_).members : std::vector<MemberId>{};
    std::vector<MemberId> survivors;
    std::set<MemberId> removed;
    for (const MemberId id : previous) {
        if (next.contains(id)) {
            survivors.push_back(id);
        } else {
            removed.insert(id);
            // Drain before remove: a removed member drained, left, or was declared dead.
            if (!drained_.contains(id) && !dead_or_left_.contains(id)) {
                violation(fmt::format("m{} removed at {} without DRAINED, LEAVE or DEAD", id, r.epoch));
            }
        }
    }
    if (!std::equal(survivors.begin(), survivors.end(), next.members.begin())) {
        violation(fmt::format("survivors lost their order in view {}", r.epoch));
    }
    const std::vector<MemberId> joiners(next.members.begin() + static_cast<std::ptrdiff_t>(survivors.size()),
                                        next.members.end());
    if (!std::is_sorted(joiners.begin(), joiners.end())) {
        violation(fmt::format("joiners of view {} not in admission order", r.epoch));
    }
    for (const MemberId id : joiners) {
        if (std::find(previous.begin(), previous.end(), id) != previous.end())
            violation("a survivor counted as joiner");
    }
    if (next_members(previous, removed, joiners) != next.members) violation("rank map is not next_members()");
    committed_[r.epoch] = next;
    last_commit_ = r.epoch;
    open_proposal_.reset();
    ++commit_count_;
}

void Sim::on_send(ConnId conn, const Message& message) {
    // Write before send: whatever a message reveals is already in the store.
    if (const auto* c = std::get_if<Commit>(&message)) {
        const auto it = committed_.find(c->epoch);
        if (it == committed_.end() || it->second.hash != c->view_hash) {
            violation(fmt::format("COMMIT {} sent before it was durable", c->epoch));
        }
    } else if (const auto* p = std::get_if<Prepare>(&message)) {
        if (open_proposal_ != p->epoch) violation(fmt::format("PREPARE {} sent without an open proposal", p->epoch));
        if (p->epoch <= last_commit_) violation(fmt::format("PREPARE {} for a committed epoch", p->epoch));
    } else if (const auto* w = std::get_if<Welcome>(&message)) {
        if (!registered_.contains(w->member_id)) violation(fmt::format("WELCOME m{} before REGISTER", w->member_id));
        if (w->view && (w->view->epoch != last_commit_ || committed_.at(last_commit_).hash != w->view->view_hash)) {
            violation("WELCOME carries a view that is not the last committed one");
        }
    }
    (void)conn;
}

void Sim::do_restart() {
    trace("coordinator restart");
    ++restart_count_;
    // The process died: what it had not read is lost, what it wrote may still arrive.
    for (auto& [conn, ch] : channels_) {
        ch.coord_closed = true;
        ch.to_coord.clear();
    }
    auto started = Coordinator::start(config_.coordinator, store_.load(), now_);
    coord_.emplace(std::move(started.coordinator));
    apply(started.actions);
}

void Sim::restart_coordinator(std::optional<std::size_t> crash_after_actions) {
    if (crash_after_actions) {
        crash_at_ = crash_after_actions;  // the next action list is cut there, then the process dies
    } else {
        do_restart();
    }
}

AdminReply Sim::admin(const AdminCommand& command) {
    auto [reply, actions] = coord_->on_admin(now_, command);
    trace(fmt::format("admin -> {} {}", reply.ok, reply.msg));
    apply(actions);
    return reply;
}

// ---- the network -----------------------------------------------------------------------------------------------

void Sim::send_from(int w, Message message) {
    Worker& wk = worker(w);
    if (!wk.conn) return;
    auto& ch = channels_.at(*wk.conn);
    if (!ch.worker_closed) ch.to_coord.push_back({++wk.seq, std::move(message)});
}

void Sim::deliver_to_coord(ConnId conn) {
    Channel& ch = channels_.at(conn);
    const Envelope envelope = std::move(ch.to_coord.front());
    ch.to_coord.pop_front();
    trace(fmt::format("-> coord c{} {}", conn, encode(envelope)));
    // What the coordinator could know, for the checks on commits and fences.
    {
        if (ch.member) {
            const MemberId id = *ch.member;
            if (const auto* a = std::get_if<Ack>(&envelope.body); a && a->ok) acks_[a->epoch].insert(id);
            if (std::holds_alternative<Drained>(envelope.body)) drained_.insert(id);
            if (const auto* f = std::get_if<Fence>(&envelope.body)) fence_arrivals_[{f->epoch, f->fence_id}].insert(id);
            if (const auto* p = std::get_if<Put>(&envelope.body)) puts_[p->epoch][id] = p->val_b64;
        }
    }
    apply(coord_->on_message(now_, conn, envelope));
}

bool Sim::deliver_one() {
    // Any connection may go next (reordering across connections); within one, order is kept (TCP).
    std::vector<std::pair<ConnId, int>> events;
    for (const auto& [conn, ch] : channels_) {
        if (!ch.to_coord.empty() || ch.worker_closed) events.emplace_back(conn, 0);
        if (!ch.to_worker.empty() || ch.coord_closed) events.emplace_back(conn, 1);
    }
    if (events.empty()) return false;
    const auto [conn, direction] = events[rng_() % events.size()];
    Channel& ch = channels_.at(conn);
    if (direction == 0) {
        if (!ch.to_coord.empty()) {
            deliver_to_coord(conn);
        } else {
            apply(coord_->on_closed(now_, conn));
            channels_.erase(conn);
        }
        return true;
    }
    if (!ch.to_worker.empty()) {
        const Message message = std::move(ch.to_worker.front());
        ch.to_worker.pop_front();
        if (ch.worker == -1) {
            injector_receive(conn, message);
        } else if (ch.worker >= 0) {
            worker_receive(ch.worker, message);
        }
    } else {
        const int w = ch.worker;
        channels_.erase(conn);
        if (w >= 0) worker_eof(w, conn);
    }
    return true;
}

void Sim::deliver_all() {
    while (deliver_one()) {
    }
}

void Sim::advance(TimeMs dt) {
    now_ += dt;
    for (std::size_t i = 0; i < workers_.size(); ++i) {
        Worker& wk = workers_[i];
        if (!wk.alive) continue;
        const bool member = wk.state == WorkerState::joining || wk.state == WorkerState::active;
        if (wk.conn && member && now_ >= wk.next_heartbeat) {
            wk.next_heartbeat = now_ + config_.heartbeat_ms;
            send_from(static_cast<int>(i), Heartbeat{wk.committed});
        }
        if (!wk.conn && wk.reconnect_at && now_ >= *wk.reconnect_at) connect(static_cast<int>(i));
    }
    if (const auto due = coord_->next_deadline(); due && *due <= now_) apply(coord_->on_tick(now_));
}

// ---- schedule operations -----------------------------------------------------------------------------------------

int Sim::spawn(std::string host) {
    Worker wk;
    wk.worker_id = fmt::format("w{}", workers_.size());
    wk.host = host.empty() ? fmt::format("h{}", workers_.size() / 2) : std::move(host);
    workers_.push_back(std::move(wk));
    const int w = static_cast<int>(workers_.size()) - 1;
    connect(w);
    return w;
}

void Sim::connect(int w) {
    Worker& wk = worker(w);
    if (!wk.alive || wk.state == WorkerState::gone) return;
    const ConnId conn = next_conn_++;
    channels_[conn].worker = w;
    wk.conn = conn;
    wk.reconnect_at.reset();
    wk.state = WorkerState::hello_sent;
    Hello hello{config_.coordinator.job,    config_.coordinator.token, wk.worker_id, wk.incarnation(), wk.host,
                "addr-" + wk.incarnation(), json_io::Json::object(),   std::nullopt};
    if (wk.member) hello.resume = ResumeInfo{*wk.member, wk.session, wk.committed};
    trace(fmt::format("{} connects c{}", wk.worker_id, conn));
    send_from(w, std::move(hello));
}

void Sim::kill(int w, bool close_socket) {
    Worker& wk = worker(w);
    trace(fmt::format("kill {}", wk.worker_id));
    wk.alive = false;
    wk.reconnect_at.reset();
    if (close_socket && wk.conn) {
        auto& ch = channels_.at(*wk.conn);
        ch.worker_closed = true;
        ch.to_worker.clear();
    }
}

void Sim::disconnect(int w) {
    Worker& wk = worker(w);
    if (!wk.conn) return;
    trace(fmt::format("disconnect {}", wk.worker_id));
    auto& ch = channels_.at(*wk.conn);
    ch.worker_closed = true;
    ch.to_worker.clear();
    wk.conn.reset();
    wk.stale_seqs.clear();
    if (wk.alive && wk.state != WorkerState::gone) {
        wk.state = WorkerState::offline;
        wk.reconnect_at = now_ + 5 + static_cast<TimeMs>(rng_() % 300);
    }
}

void Sim::notice(int w, bool via_agent, TimeMs deadline_in_ms) {
    Worker& wk = worker(w);
    Notice notice{wk.worker_id, "manual", {}, deadline_in_ms, {}};
    if (!via_agent) {
        send_from(w, std::move(notice));
        return;
    }
    notice.token = config_.coordinator.token;
    const ConnId conn = next_conn_++;
    Channel& ch = channels_[conn];
    ch.to_coord.push_back({1, std::move(notice)});
    ch.worker_closed = true;  // the agent sends one line and hangs up
    agent_conns_.insert(conn);
}

void Sim::leave(int w) {
    if (worker(w).state == WorkerState::active) send_from(w, Leave{"test"});
}

void Sim::respawn(int w) {
    Worker& wk = worker(w);
    if (wk.alive && wk.conn) kill(w, true);
    trace(fmt::format("respawn {}", wk.worker_id));
    // Whatever the old process left open (a hung host keeps its socket) is no longer this worker's.
    for (auto& [conn, ch] : channels_)
        if (ch.worker == w) ch.worker = -2;
    const Worker old = wk;
    wk = Worker{};
    wk.worker_id = old.worker_id;
    wk.host = old.host;
    wk.incarnation_no = old.incarnation_no + 1;
    connect(w);
}

void Sim::inject_zombie(int w) {
    const Worker& wk = worker(w);
    if (!wk.member) return;
    const ConnId conn = next_conn_++;
    Channel& ch = channels_[conn];
    Hello hello{config_.coordinator.job,
                config_.coordinator.token,
                wk.worker_id,
                wk.worker_id + "#zombie",
                wk.host,
                "addr-zombie",
                json_io::Json::object(),
                ResumeInfo{*wk.member, wk.session, wk.committed}};
    ch.to_coord.push_back({1, std::move(hello)});
    zombie_conns_.insert(conn);
}

void Sim::inject_stale(int w) {
    Worker& wk = worker(w);
    if (wk.state != WorkerState::active || !wk.conn || wk.committed < 2) return;
    wk.stale_seqs.insert(wk.seq + 1);
    if (rng_() % 2 == 0) {
        send_from(w, SafePoint{wk.committed - 1, 1});
    } else {
        send_from(w, Put{wk.committed - 1, "stale", "x", KvScope::epoch});
    }
}

void Sim::injector_receive(ConnId conn, const Message& message) {
    if (zombie_conns_.contains(conn)) {
        if (std::holds_alternative<Evicted>(message)) {
            ++zombies_evicted_;
        } else {
            violation(fmt::format("a zombie resume got {} instead of EVICTED", type_of(message)));
        }
        return;
    }
    const auto* error = std::get_if<ErrorReply>(&message);
    if (!error || error->code != ErrorCode::unknown_member) {
        violation(fmt::format("an agent's NOTICE got {}", encode({0, message})));
    }
}

// ---- the scripted worker (client state machine of §6.4) ------------------------------------------------------------

void Sim::worker_receive(int w, const Message& message) {
    Worker& wk = worker(w);
    trace(fmt::format("-> {} {}", wk.worker_id, encode({0, message})));
    if (config_.record_messages) received_[w].push_back(message);
    if (!wk.alive || wk.state == WorkerState::gone) return;
    std::visit([&](const auto& m) { receive(w, wk, m); }, message);
}

void Sim::worker_eof(int w, ConnId conn) {
    Worker& wk = worker(w);
    if (wk.conn != conn) return;
    trace(fmt::format("{} sees c{} closed", wk.worker_id, conn));
    wk.conn.reset();
    wk.stale_seqs.clear();
    if (wk.alive && wk.state != WorkerState::gone) {
        wk.state = WorkerState::offline;
        wk.reconnect_at = now_ + 5 + static_cast<TimeMs>(rng_() % 200);
    }
}

template <typename T>
void Sim::receive(int /*w*/, Worker& wk, const T& m) {
    violation(fmt::format("{} received {}, which the coordinator never sends to workers", wk.worker_id, T::type));
    (void)m;
}

void Sim::receive(int w, Worker& wk, const Welcome& m) {
    if (wk.state != WorkerState::hello_sent) violation(fmt::format("{}: WELCOME without HELLO", wk.worker_id));
    if (wk.member && *wk.member != m.member_id) violation(fmt::format("{}: resumed as another member", wk.worker_id));
    wk.member = m.member_id;
    wk.session = m.session;
    channels_.at(*wk.conn).member = m.member_id;
    member_worker_[m.member_id] = w;
    wk.next_heartbeat = now_ + config_.heartbeat_ms;
    if (m.state == JoinState::joining) {
        if (wk.committed != 0) violation(fmt::format("{}: a member resumed as a joiner", wk.worker_id));
        wk.state = WorkerState::joining;
        return;
    }
    if (!m.view) {
        violation(fmt::format("{}: ACTIVE WELCOME without a view", wk.worker_id));
        return;
    }
    std::vector<MemberId> members;
    for (std::size_t rank = 0; rank < m.view->peers.size(); ++rank) {
        if (m.view->peers[rank].rank != rank) violation("WELCOME peers not in rank order");
        members.push_back(m.view->peers[rank].member_id);
    }
    if (m.view->epoch > wk.committed) {
        // It ACKed this epoch and missed the COMMIT while disconnected; anything else would be a view it never saw.
        if (!wk.prepared || wk.prepared->epoch != m.view->epoch) {
            violation(fmt::format("{}: WELCOME into epoch {} it was not PREPAREd for", wk.worker_id, m.view->epoch));
        }
        adopt_view(wk, m.view->epoch, members, m.view->view_hash);
        wk.prepared.reset();
    } else if (m.view->epoch < wk.committed) {
        violation(
            fmt::format("{}: coordinator went back from epoch {} to {}", wk.worker_id, wk.committed, m.view->epoch));
    } else if (m.view->view_hash != wk.view_hash) {
        violation(fmt::format("{}: same epoch, other view after resume", wk.worker_id));
    }
    wk.state = WorkerState::active;
    // A client re-sends its outstanding KV requests after a resume (they are idempotent).
    if (wk.fence_pending) {
        if (wk.committed == *wk.fence_epoch) {
            send_from(w, Put{wk.committed, "k", value_for(*wk.member, wk.committed), KvScope::epoch});
            send_from(w, Fence{wk.committed, *wk.fence_pending, true});
        } else {
            wk.fence_pending.reset();
        }
    }
    wk.get_pending = false;
}

void Sim::receive(int /*w*/, Worker& /*wk*/, const HbAck& /*m*/) {}

void Sim::receive(int w, Worker& wk, const Transition& m) {
    if (wk.state != WorkerState::active) violation(fmt::format("{}: TRANSITION to a non-member", wk.worker_id));
    if (m.from_epoch != wk.committed) {
        violation(fmt::format("{}: TRANSITION from epoch {} while in {}", wk.worker_id, m.from_epoch, wk.committed));
    }
    if (wk.stuck) return;
    if (std::find(m.victims.begin(), m.victims.end(), *wk.member) != m.victims.end()) {
        if (!wk.no_drain) send_from(w, Drained{wk.committed, m.transition_id});
    } else {
        send_from(w, SafePoint{wk.committed, m.transition_id});
    }
}

void Sim::check_prepare(const Worker& wk, const Prepare& m) {
    if (m.epoch <= wk.committed) violation(fmt::format("{}: stale PREPARE {}", wk.worker_id, m.epoch));
    if (view_hash(m.epoch, m.members) != m.view_hash) violation("PREPARE hash does not match its rank map");
    if (!distinct(m.members)) violation("PREPARE rank map repeats a member");
    if (std::find(m.members.begin(), m.members.end(), *wk.member) == m.members.end()) {
        violation(fmt::format("{}: PREPARE to a member not in it", wk.worker_id));
    }
    if (wk.state == WorkerState::joining) {
        if (!m.full_table || m.added.size() != m.members.size()) violation("a joiner's PREPARE lacks the full table");
        return;
    }
    if (m.from_epoch != wk.committed) violation(fmt::format("{}: PREPARE from another epoch", wk.worker_id));
    // The client recomputes the rank map from its own view and the delta: the rule is a pure function.
    std::vector<Peer> added = m.added;
    std::sort(added.begin(), added.end(), [](const Peer& a, const Peer& b) { return a.rank < b.rank; });
    std::vector<MemberId> joiners;
    for (const Peer& p : added)
        joiners.push_back(p.member_id);
    const std::set<MemberId> removed(m.removed.begin(), m.removed.end());
    if (next_members(wk.view, removed, joiners) != m.members) {
        violation(fmt::format("{}: PREPARE {} is not the rank rule applied to its delta", wk.worker_id, m.epoch));
    }
}

void Sim::receive(int w, Worker& wk, const Prepare& m) {
    if (wk.state != WorkerState::active && wk.state != WorkerState::joining) {
        violation(fmt::format("{}: PREPARE before WELCOME", wk.worker_id));
        return;
    }
    check_prepare(wk, m);
    wk.prepared = m;
    send_from(w, Ack{m.epoch, m.view_hash, !wk.nack, wk.nack ? "injected failure" : ""});
}

void Sim::adopt_view(Worker& wk, Epoch epoch, const std::vector<MemberId>& members, const std::string& hash) {
    if (epoch <= wk.committed)
        violation(fmt::format("{}: epoch went from {} to {}", wk.worker_id, wk.committed, epoch));
    const auto [it, fresh] = adopted_.try_emplace(epoch, hash);
    if (!fresh && it->second != hash) violation(fmt::format("two views adopted for epoch {} (agreement)", epoch));
    const auto stored = committed_.find(epoch);
    if (stored == committed_.end() || stored->second.hash != hash || stored->second.members != members) {
        violation(fmt::format("{}: adopted epoch {} that the store does not hold", wk.worker_id, epoch));
    }
    wk.committed = epoch;
    wk.view = members;
    wk.view_hash = hash;
    wk.fence_pending.reset();
    wk.get_pending = false;
}

void Sim::receive(int w, Worker& wk, const Commit& m) {
    if (!wk.prepared || wk.prepared->epoch != m.epoch || wk.prepared->view_hash != m.view_hash) {
        violation(fmt::format("{}: COMMIT {} without the matching PREPARE", wk.worker_id, m.epoch));
        return;
    }
    const std::vector<MemberId> members = wk.prepared->members;
    adopt_view(wk, m.epoch, members, m.view_hash);
    wk.prepared.reset();
    wk.state = WorkerState::active;
    send_from(w, Ready{m.epoch});
    if (config_.exercise_kv) start_kv(w);
}

void Sim::start_kv(int w) {
    Worker& wk = worker(w);
    wk.fence_pending = "f";
    wk.fence_epoch = wk.committed;  // the epoch the fence belongs to
    send_from(w, Put{wk.committed, "k", value_for(*wk.member, wk.committed), KvScope::epoch});
    send_from(w, Fence{wk.committed, "f", true});
}

void Sim::receive(int /*w*/, Worker& wk, const Abort& m) {
    if (m.epoch && wk.prepared && wk.prepared->epoch == *m.epoch) wk.prepared.reset();
}

void Sim::receive(int w, Worker& wk, const Release& /*m*/) {
    // The process exits (a spare would come back as a new incarnation), which closes its connection.
    disconnect(w);
    wk.state = WorkerState::gone;
    wk.alive = false;
    wk.reconnect_at.reset();
}

void Sim::receive(int /*w*/, Worker& wk, const Evicted& /*m*/) {
    wk.state = WorkerState::gone;
    wk.alive = false;
}

void Sim::receive(int w, Worker& wk, const FenceDone& m) {
    if (!wk.fence_pending || *wk.fence_pending != m.fence_id || wk.fence_epoch != m.epoch) return;  // a repeat
    wk.fence_pending.reset();
    if (!m.ok) return;
    ++fences_ok_;
    if (m.epoch != wk.committed)
        violation(fmt::format("{}: fence of epoch {} done in {}", wk.worker_id, m.epoch, wk.committed));
    const auto view = committed_.find(m.epoch);
    if (view == committed_.end()) {
        violation("fence done for an epoch that never committed");
        return;
    }
    const auto& arrived = fence_arrivals_[{m.epoch, m.fence_id}];
    for (const MemberId id : view->second.members) {
        if (!arrived.contains(id)) violation(fmt::format("fence {} released before m{} arrived", m.epoch, id));
        const bool seen = std::any_of(m.kv.begin(), m.kv.end(), [&](const KvEntry& e) {
            return e.member_id == id && e.key == "k" && e.val_b64 == value_for(id, m.epoch);
        });
        if (!seen) violation(fmt::format("fence {} did not collect the PUT of m{}", m.epoch, id));
    }
    // A direct GET of the next rank's value must find it.
    const auto at = static_cast<std::size_t>(std::find(wk.view.begin(), wk.view.end(), *wk.member) - wk.view.begin());
    const MemberId peer = wk.view[(at + 1) % wk.view.size()];
    wk.get_pending = true;
    send_from(w, Get{m.epoch, "k", peer, KvScope::epoch});
}

void Sim::receive(int /*w*/, Worker& wk, const GetReply& m) {
    if (!wk.get_pending || m.epoch != wk.committed) return;
    wk.get_pending = false;
    if (m.ok && m.val_b64 != value_for(m.member_id, m.epoch)) {
        violation(fmt::format("GET of m{} at {} returned {}", m.member_id, m.epoch, m.val_b64));
    }
}

void Sim::receive(int /*w*/, Worker& wk, const ErrorReply& m) {
    if (m.re && wk.stale_seqs.erase(*m.re)) {
        const bool member_gone = wk.member && coord_->members().contains(*wk.member) &&
                                 coord_->members().at(*wk.member).status != MemberStatus::active;
        if (m.code == ErrorCode::stale_epoch || (m.code == ErrorCode::unknown_member && member_gone)) {
            ++stale_answered_;
        } else {
            violation(fmt::format("{}: stale request answered {} {}", wk.worker_id, to_string(m.code), m.msg));
        }
        return;
    }
    // Races make these two normal (a message crossing a COMMIT or a RELEASE); anything else is a bug.
    if (m.code != ErrorCode::stale_epoch && m.code != ErrorCode::unknown_member) {
        violation(fmt::format("{}: unexpected ERROR {} {}", wk.worker_id, to_string(m.code), m.msg));
    }
}

// ---- random schedules and quiescence ------------------------------------------------------------------------------

void Sim::random_step(std::mt19937_64& rng, bool faults) {
    const auto pick = [&](auto&& want) -> int {
        std::vector<int> candidates;
        for (std::size_t i = 0; i < workers_.size(); ++i)
            if (want(workers_[i])) candidates.push_back(static_cast<int>(i));
        return candidates.empty() ? -1 : candidates[rng() % candidates.size()];
    };
    const auto alive = [](const Worker& wk) { return wk.alive; };
    const auto active = [](const Worker& wk) { return wk.alive && wk.state == WorkerState::active; };
    const auto r = rng() % 100;
    if (!faults || r < 45 || r >= 93) {
        if (!deliver_one()) advance(1 + static_cast<TimeMs>(rng() % 40));
        return;
    }
    if (r < 70) {
        advance(1 + static_cast<TimeMs>(rng() % 40));
    } else if (r < 74) {
        if (workers_.size() < 8) spawn();
    } else if (r < 77) {
        if (const int w = pick(alive); w >= 0) kill(w, rng() % 2 == 0);
    } else if (r < 80) {
        if (const int w = pick(alive); w >= 0) disconnect(w);
    } else if (r < 82) {
        if (const int w = pick(active); w >= 0) notice(w, rng() % 2 == 0, 200 + static_cast<TimeMs>(rng() % 3000));
    } else if (r < 83) {
        if (const int w = pick(active); w >= 0) leave(w);
    } else if (r < 84) {
        restart_coordinator(rng() % 2 == 0 ? std::optional<std::size_t>(rng() % 4) : std::nullopt);
    } else if (r < 85) {
        (void)admin(ShrinkCmd{{}, {}, 1, std::nullopt});
    } else if (r < 86) {
        (void)admin(ExpandCmd{{}, 0, {}});
    } else if (r < 87) {
        if (const int w = pick(active); w >= 0) (void)admin(DrainHostCmd{{}, worker(w).host, std::nullopt});
    } else if (r < 88) {
        if (const int w = pick(active); w >= 0) inject_zombie(w);
    } else if (r < 90) {
        if (const int w = pick(active); w >= 0) inject_stale(w);
    } else if (r < 91) {
        if (const int w = pick([](const Worker& wk) { return wk.member.has_value(); }); w >= 0) respawn(w);
    } else {
        if (const int w = pick(alive); w >= 0) {
            Worker& wk = worker(w);
            const auto which = rng() % 3;
            (which == 0 ? wk.stuck : which == 1 ? wk.no_drain : wk.nack) = true;
        }
    }
}

bool Sim::quiescent() const {
    for (const auto& [conn, ch] : channels_) {
        if (!ch.to_coord.empty() || !ch.to_worker.empty() || ch.worker_closed || ch.coord_closed) return false;
    }
    const Coordinator& c = *coord_;
    if (c.closed()) return true;
    if (c.phase() != Phase::idle) return false;
    if (c.has_pending_changes() && !c.waiting_for_min_size()) return false;
    for (const Worker& wk : workers_) {
        if (!wk.alive) continue;
        if (wk.state == WorkerState::offline || wk.state == WorkerState::hello_sent) return false;
        if (wk.fence_pending || wk.get_pending) return false;
    }
    // Every member the coordinator counts as live is a running process (a killed one must have timed out).
    for (const auto& [id, m] : c.members()) {
        if (m.status != MemberStatus::active && m.status != MemberStatus::joining) continue;
        const auto it = member_worker_.find(id);
        if (it == member_worker_.end()) return false;
        const Worker& wk = workers_.at(static_cast<std::size_t>(it->second));
        if (!wk.alive || wk.member != id || !wk.conn || m.conn != wk.conn) return false;
    }
    return true;
}

void Sim::check_quiescent_state() {
    const Coordinator& c = *coord_;
    if (c.closed()) return;
    for (const Worker& wk : workers_) {
        if (!wk.alive || wk.state != WorkerState::active) continue;
        if (wk.committed != c.view().epoch || wk.view_hash != c.view().hash) {
            violation(
                fmt::format("{} settled in epoch {}, coordinator in {}", wk.worker_id, wk.committed, c.view().epoch));
        }
        if (!c.view().contains(*wk.member)) violation(fmt::format("{} active but not in the view", wk.worker_id));
    }
    for (const MemberId id : c.view().members) {
        const auto& m = c.members().at(id);
        if (m.status != MemberStatus::active && !c.waiting_for_min_size()) {
            violation(fmt::format("m{} in the settled view is {}", id, to_string(m.status)));
        }
    }
    for (const Worker& wk : workers_) {
        if (wk.alive && !wk.stale_seqs.empty())
            violation(fmt::format("{}: a stale request was never answered", wk.worker_id));
    }
}

bool Sim::settle(TimeMs limit_ms) {
    for (Worker& wk : workers_)
        wk.stuck = wk.no_drain = wk.nack = false;
    const TimeMs until = now_ + limit_ms;
    while (true) {
        deliver_all();
        if (quiescent()) {
            check_quiescent_state();
            return true;
        }
        if (now_ >= until) return false;
        // Jump to the next thing that has a time: a heartbeat, a reconnect or a coordinator deadline.
        TimeMs next = now_ + 100;
        for (const Worker& wk : workers_) {
            if (!wk.alive) continue;
            if (wk.conn) next = std::min(next, wk.next_heartbeat);
            if (wk.reconnect_at) next = std::min(next, *wk.reconnect_at);
        }
        if (const auto due = coord_->next_deadline()) next = std::min(next, *due);
        advance(std::max<TimeMs>(1, next - now_));
    }
}

}  // namespace gpuops::rescale::sim
