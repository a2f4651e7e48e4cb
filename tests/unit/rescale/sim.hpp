// A deterministic simulation of one coordinator, its store, a network of FIFO connections and scripted workers
// that follow the client state machine of research/rescale.md §6.4. It checks the invariants of §7 after every
// step and collects violations as text, so that a failing schedule can be printed with its seed.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gpuops/rescale/coordinator.hpp"

namespace gpuops::rescale::sim {

enum class WorkerState { offline, hello_sent, joining, active, gone };

struct Worker {
    std::string worker_id;
    std::string host;
    int incarnation_no = 0;
    bool alive = true;
    WorkerState state = WorkerState::offline;
    std::optional<ConnId> conn;
    std::optional<MemberId> member;
    std::string session;
    std::uint64_t seq = 0;
    TimeMs next_heartbeat = 0;
    std::optional<TimeMs> reconnect_at;
    // The client's view state (§6.4).
    Epoch committed = 0;
    std::vector<MemberId> view;
    std::string view_hash;
    std::optional<Prepare> prepared;
    // Misbehaviour that lasts only while faults are on: ignore TRANSITION, never drain, reject PREPARE.
    bool stuck = false;
    bool no_drain = false;
    bool nack = false;
    // The KV exercise: PUT then FENCE once per epoch, then GET a peer's value.
    std::optional<std::string> fence_pending;
    std::optional<Epoch> fence_epoch;  ///< the epoch of fence_pending
    bool get_pending = false;
    std::set<std::uint64_t> stale_seqs;  ///< injected stale requests still waiting for their ERROR

    [[nodiscard]] std::string incarnation() const { return worker_id + "#" + std::to_string(incarnation_no); }
};

struct SimConfig {
    CoordinatorConfig coordinator;
    TimeMs heartbeat_ms = 250;
    bool exercise_kv = true;
    bool record_messages = false;  ///< keep what each worker received, for take_received()
    bool trace = false;            ///< keep a text trace of the last events, for trace_tail()
};

class Sim {
public:
    explicit Sim(SimConfig config, std::uint64_t seed = 1);

    // ---- what a schedule can do ----
    int spawn(std::string host = {});  ///< a new worker process; returns its index
    void connect(int w);               ///< opens a connection and sends HELLO (resume when it has a member)
    void kill(int w, bool close_socket);
    void disconnect(int w);
    void notice(int w, bool via_agent, TimeMs deadline_in_ms);
    void leave(int w);
    void restart_coordinator(std::optional<std::size_t> crash_after_actions = std::nullopt);
    AdminReply admin(const AdminCommand& command);
    /// A resume with an old incarnation of worker `w`'s member: must be EVICTED, must not disturb the member.
    void inject_zombie(int w);
    /// A message for an epoch before the committed one from an active worker: must get ERROR STALE_EPOCH.
    void inject_stale(int w);
    void respawn(int w);  ///< the same worker id, a new process (incarnation)

    // ---- running ----
    bool deliver_one();  ///< delivers one random pending message or EOF; false when the network is empty
    void deliver_all();
    void advance(TimeMs dt);  ///< time passes: heartbeats, reconnects, coordinator tick
    /// Clears misbehaviour and runs until nothing is pending; false when that did not happen in `limit_ms`.
    bool settle(TimeMs limit_ms);
    void random_step(std::mt19937_64& rng, bool faults);

    // ---- checks ----
    [[nodiscard]] bool quiescent() const;
    void check_quiescent_state();
    [[nodiscard]] const std::vector<std::string>& violations() const { return violations_; }
    [[nodiscard]] const Coordinator& coordinator() const { return *coord_; }
    [[nodiscard]] const MemoryRecordStore& store() const { return store_; }
    [[nodiscard]] const std::vector<Worker>& workers() const { return workers_; }
    [[nodiscard]] Worker& worker(int w) { return workers_.at(static_cast<std::size_t>(w)); }
    [[nodiscard]] TimeMs now() const { return now_; }
    [[nodiscard]] std::size_t commits() const { return commit_count_; }
    [[nodiscard]] std::size_t aborts() const { return abort_count_; }
    [[nodiscard]] std::size_t restarts() const { return restart_count_; }
    [[nodiscard]] std::size_t fences_completed() const { return fences_ok_; }
    [[nodiscard]] std::size_t stale_answered() const { return stale_answered_; }
    [[nodiscard]] std::size_t zombies_evicted() const { return zombies_evicted_; }
    /// Messages the coordinator sent to worker `w` since the last call (for scripted tests).
    std::vector<Message> take_received(int w);
    [[nodiscard]] std::string trace_tail() const;

private:
    struct Channel {
        int worker = -1;  ///< the worker process at its end; -1: an agent or injector; -2: a replaced process
        std::optional<MemberId> member;  ///< as WELCOME named it on this connection
        std::deque<Envelope> to_coord;
        std::deque<Message> to_worker;
        bool coord_closed = false;
        bool worker_closed = false;
    };

    void apply(const Actions& actions, std::optional<std::size_t> limit = std::nullopt);
    void on_persist(const Record& record);
    void on_send(ConnId conn, const Message& message);
    void send_from(int w, Message message);
    void worker_receive(int w, const Message& message);
    void worker_eof(int w, ConnId conn);
    void injector_receive(ConnId conn, const Message& message);
    void receive(int w, Worker& wk, const Welcome& m);
    void receive(int w, Worker& wk, const HbAck& m);
    void receive(int w, Worker& wk, const Transition& m);
    void receive(int w, Worker& wk, const Prepare& m);
    void receive(int w, Worker& wk, const Commit& m);
    void receive(int w, Worker& wk, const Abort& m);
    void receive(int w, Worker& wk, const Release& m);
    void receive(int w, Worker& wk, const Evicted& m);
    void receive(int w, Worker& wk, const FenceDone& m);
    void receive(int w, Worker& wk, const GetReply& m);
    void receive(int w, Worker& wk, const ErrorReply& m);
    template <typename T>
    void receive(int w, Worker& wk, const T& m);
    void check_prepare(const Worker& wk, const Prepare& m);
    void adopt_view(Worker& wk, Epoch epoch, const std::vector<MemberId>& members, const std::string& hash);
    void on_commit_record(const CommitRecord& r);
    void do_restart();
    void start_kv(int w);
    void deliver_to_coord(ConnId conn);
    void violation(std::string text);
    void trace(std::string text);

    SimConfig config_;
    std::mt19937_64 rng_;
    MemoryRecordStore store_;
    std::optional<Coordinator> coord_;
    TimeMs now_ = 0;
    ConnId next_conn_ = 1;
    std::map<ConnId, Channel> channels_;
    std::vector<Worker> workers_;
    std::map<MemberId, int> member_worker_;
    std::optional<std::size_t> crash_at_;
    std::set<ConnId> agent_conns_;

    // What the checker has seen.
    std::vector<std::string> violations_;
    std::deque<std::string> trace_;
    std::map<Epoch, ProposeRecord> proposals_;
    std::map<Epoch, GroupView> committed_;  ///< from the store
    std::map<Epoch, std::string> adopted_;  ///< epoch → hash, as workers adopted them
    std::optional<Epoch> open_proposal_;
    Epoch last_propose_ = 0;
    Epoch last_commit_ = 0;
    std::set<MemberId> dead_or_left_;
    std::set<MemberId> registered_;
    std::set<MemberId> drained_;  ///< members whose DRAINED reached the coordinator
    std::map<Epoch, std::set<MemberId>> acks_;
    std::map<std::pair<Epoch, std::string>, std::set<MemberId>> fence_arrivals_;
    std::map<Epoch, std::map<MemberId, std::string>> puts_;
    std::set<ConnId> zombie_conns_;
    std::size_t commit_count_ = 0;
    std::size_t abort_count_ = 0;
    std::size_t restart_count_ = 0;
    std::size_t fences_ok_ = 0;
    std::size_t stale_answered_ = 0;
    std::size_t zombies_evicted_ = 0;
    std::map<int, std::vector<Message>> received_;
};

}  // namespace gpuops::rescale::sim
