// The rescale coordinator as a pure state machine (research/rescale.md §6.3): events and admin commands in,
// an ordered list of actions out. No sockets, no clock, no storage: the shell (server, tests) owns those.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "gpuops/core/json_io.hpp"
#include "gpuops/rescale/codec.hpp"
#include "gpuops/rescale/protocol.hpp"
#include "gpuops/rescale/records.hpp"
#include "gpuops/rescale/view.hpp"

namespace gpuops::rescale {

/// What happens when removing failed members would leave fewer than min_size: keep the old view until enough
/// joiners arrive, or close the job.
enum class BelowMinPolicy { wait, close };

/// Timeouts of §6.8, all in milliseconds of the injected clock.
struct CoordinatorConfig {
    std::string job = "job";
    std::string token;        ///< workers' HELLO and agents' NOTICE must carry it
    std::string admin_token;  ///< admin commands over the wire must carry it
    std::uint64_t min_size = 1;
    std::uint64_t max_size = 1024;
    TimeMs lease_ms = 5000;
    TimeMs reconnect_grace_ms = 5000;
    TimeMs batch_window_ms = 100;
    TimeMs safe_point_timeout_ms = 20000;
    TimeMs prepare_timeout_ms = 2000;
    TimeMs fence_timeout_ms = 30000;
    bool auto_expand = true;  ///< admit waiting joiners after the batch window; off: only on EXPAND
    BelowMinPolicy below_min = BelowMinPolicy::wait;
    std::uint64_t session_seed = 0;  ///< the shell passes a random value; sessions derive from it
    /// For tests: recompute cached state at every use and throw std::logic_error when the cache disagrees.
    bool self_check = false;
};

// ---- actions: the shell runs them in order; a Persist must be durable before the next action runs ---------------

struct PersistAction {
    Record record;
    bool operator==(const PersistAction&) const = default;
};
/// Shared, not copied: a PREPARE with a 1024-member table goes to every joiner, and the shell encodes it once.
struct SendAction {
    ConnId conn = 0;
    std::shared_ptr<const Message> message;
    bool operator==(const SendAction& other) const { return conn == other.conn && *message == *other.message; }
};
/// Close the connection after the sends before it have been flushed.
struct CloseAction {
    ConnId conn = 0;
    bool operator==(const CloseAction&) const = default;
};
using Action = std::variant<PersistAction, SendAction, CloseAction>;
using Actions = std::vector<Action>;

enum class MemberStatus { joining, active, dead, left };
[[nodiscard]] std::string_view to_string(MemberStatus status);

/// What the coordinator knows about one member; `registration` is exactly what REGISTER stored.
struct MemberState {
    RegisterRecord registration;
    MemberStatus status = MemberStatus::joining;
    std::optional<ConnId> conn;
    TimeMs expires_at = 0;  ///< the lease when connected, the reconnect grace when not
    TimeMs changed_at = 0;  ///< since when it waits to be admitted or removed (the batch window counts from here)
    std::optional<TimeMs> victim_deadline;  ///< a planned removal: drain before this
    bool admitted = false;                  ///< chosen by EXPAND (matters only without auto_expand)
    bool drained = false;
    /// Dead or left: never comes back.
    [[nodiscard]] bool gone() const { return status == MemberStatus::dead || status == MemberStatus::left; }
};

enum class Phase { idle, safe_point_wait, preparing };
[[nodiscard]] std::string_view to_string(Phase phase);

/// The one transition in flight.
struct InFlight {
    TransitionId id = 0;
    TransitionKind kind = TransitionKind::shrink;
    Epoch from_epoch = 0;
    std::vector<MemberId> victims;  ///< planned removals: must drain
    std::vector<MemberId> joiners;
    bool needs_safe_point = false;
    Phase phase = Phase::safe_point_wait;
    TimeMs deadline = 0;
    std::set<MemberId> at_safe_point;
    GroupView proposed;  ///< preparing: the proposal
    std::set<MemberId> acked;
    std::shared_ptr<const Message> prepare_delta;  ///< the proposal's PREPARE for survivors, built once
    std::shared_ptr<const Message> prepare_full;   ///< and for joiners (the full table)
};

class Coordinator {
public:
    struct Started;

    /// A coordinator over what `records` hold: fresh when empty; otherwise the last committed view is restored,
    /// a proposal without a decision is aborted, members wait `reconnect_grace` (from `now`) to resume, and
    /// pending epoch KV survives. The actions start with the START record.
    [[nodiscard]] static Started start(CoordinatorConfig config, std::span<const Record> records, TimeMs now);

    /// One line from a connection: decoded here, so a bad line becomes an ERROR (TOO_LARGE also closes).
    [[nodiscard]] Actions on_line(TimeMs now, ConnId conn, std::string_view line,
                                  std::size_t max_line_bytes = default_max_line_bytes);
    [[nodiscard]] Actions on_message(TimeMs now, ConnId conn, const Envelope& envelope);
    /// The peer closed the connection (or the server dropped it): a hint, not death; the grace timer starts.
    [[nodiscard]] Actions on_closed(TimeMs now, ConnId conn);
    /// Time passed: leases, grace periods, batch window, phase and fence deadlines.
    [[nodiscard]] Actions on_tick(TimeMs now);
    /// An admin command from a trusted caller (the token is not checked here).
    [[nodiscard]] std::pair<AdminReply, Actions> on_admin(TimeMs now, const AdminCommand& command);

    /// When on_tick next has something to do; nullopt: nothing is timed.
    [[nodiscard]] std::optional<TimeMs> next_deadline() const;

    [[nodiscard]] const GroupView& view() const noexcept { return view_; }
    [[nodiscard]] Phase phase() const noexcept { return flight_ ? flight_->phase : Phase::idle; }
    [[nodiscard]] const std::optional<InFlight>& in_flight() const noexcept { return flight_; }
    [[nodiscard]] Epoch highest_epoch() const noexcept { return highest_epoch_; }
    [[nodiscard]] bool closed() const noexcept { return closed_; }
    [[nodiscard]] std::uint64_t coord_incarnation() const noexcept { return coord_incarnation_; }
    [[nodiscard]] const CoordinatorConfig& config() const noexcept { return config_; }
    [[nodiscard]] const std::map<MemberId, MemberState>& members() const noexcept { return members_; }
    /// Something is waiting to change the view (joiners, victims, dead or left members of the view).
    [[nodiscard]] bool has_pending_changes() const;
    /// Pending changes exist but would leave the view below min_size (policy wait): nothing moves until joiners come.
    [[nodiscard]] bool waiting_for_min_size() const;
    /// The STATUS document: job, phase, view, limits, every member with its status and rank.
    [[nodiscard]] json_io::Json status_json() const;

private:
    struct Changes {
        std::vector<MemberId> victims;  ///< in the view, to be drained
        std::vector<MemberId> gone;     ///< in the view, dead or left
        std::vector<MemberId> joiners;  ///< admission order, capped at max_size
        bool any_dead = false;
        bool any_left = false;
        TimeMs since = 0;  ///< the earliest change (0 when there is none)
        [[nodiscard]] bool empty() const { return victims.empty() && gone.empty() && joiners.empty(); }
        bool operator==(const Changes&) const = default;
    };
    /// A fence of the committed epoch that some members have reached.
    struct PendingFence {
        Epoch epoch = 0;
        std::set<MemberId> arrived;
        std::set<MemberId> collect;
        TimeMs deadline = 0;
    };
    struct PendingGet {
        MemberId asker = 0;
        Get request;
    };
    using KvKey = std::pair<MemberId, std::string>;

    explicit Coordinator(CoordinatorConfig config) : config_(std::move(config)) {}

    // event plumbing (coordinator.cpp)
    void begin(TimeMs now);
    Actions finish();
    void persist(Record record);
    void send(ConnId conn, Message message);
    void send(ConnId conn, std::shared_ptr<const Message> message);
    void send_to(MemberId id, Message message);
    void send_to(MemberId id, std::shared_ptr<const Message> message);
    void close_conn(ConnId conn);
    void reply_error(ConnId conn, std::uint64_t seq, ErrorCode code, std::string msg);
    MemberState* member_on(ConnId conn, std::uint64_t seq);
    void renew_lease(MemberState& m);
    void unbind(MemberState& m);
    [[nodiscard]] bool is_gone(MemberId id) const;
    [[nodiscard]] ViewInfo view_info() const;

    // requests from workers (coordinator.cpp)
    void handle(ConnId conn, std::uint64_t seq, const Hello& m);
    void handle(ConnId conn, std::uint64_t seq, const Heartbeat& m);
    void handle(ConnId conn, std::uint64_t seq, const SafePoint& m);
    void handle(ConnId conn, std::uint64_t seq, const Drained& m);
    void handle(ConnId conn, std::uint64_t seq, const Ack& m);
    void handle(ConnId conn, std::uint64_t seq, const Ready& m);
    void handle(ConnId conn, std::uint64_t seq, const Notice& m);
    void handle(ConnId conn, std::uint64_t seq, const Leave& m);
    void handle(ConnId conn, std::uint64_t seq, const Put& m);
    void handle(ConnId conn, std::uint64_t seq, const Fence& m);
    void handle(ConnId conn, std::uint64_t seq, const Get& m);
    void register_member(ConnId conn, const Hello& m);
    void resume_member(ConnId conn, std::uint64_t seq, const Hello& m, MemberState& member);
    void catch_up(MemberState& member);
    bool check_transition_message(ConnId conn, std::uint64_t seq, Epoch epoch, TransitionId id);

    // membership and the transition (coordinator_transition.cpp)
    /// Cached: every event asks (a 1024-member job sees thousands of heartbeats and ACKs between changes), and
    /// computing it walks every member. Whatever alters its inputs calls membership_changed().
    [[nodiscard]] const Changes& pending_changes() const;
    [[nodiscard]] Changes compute_pending_changes() const;
    void membership_changed() { pending_cache_.reset(); }
    /// A new joining member: appended to the cached joiners (it has the highest id) rather than recomputing all,
    /// which a bootstrap of n workers would do n times.
    void member_registered(const MemberState& m);
    /// The size of the view after `changes`, without building it.
    [[nodiscard]] std::size_t size_after(const Changes& changes) const;
    void advance();
    bool step();
    bool begin_transition();
    [[nodiscard]] bool safe_points_complete() const;
    void propose();
    [[nodiscard]] bool all_acked() const;
    void commit();
    void abort_proposal(const std::string& reason);
    void abandon(const std::string& reason);
    void declare_dead(MemberId id, const std::string& reason);
    void mark_left(MemberId id);
    void member_gone(MemberId id);
    void check_deadlines();
    void close_job(const std::string& reason);
    [[nodiscard]] TransitionKind kind_of(const Changes& changes) const;
    [[nodiscard]] std::vector<MemberId> members_after(const Changes& changes) const;
    [[nodiscard]] Transition transition_message() const;
    /// The proposal's PREPARE for `to`: survivors get the new members' addresses, joiners every address.
    [[nodiscard]] std::shared_ptr<const Message> prepare_message(MemberId to);

    // PUT/FENCE/GET (coordinator_kv.cpp)
    bool check_kv_epoch(ConnId conn, std::uint64_t seq, const MemberState& m, Epoch epoch);
    void store_put(const KvPutRecord& put);
    void complete_fence(const std::string& fence_id);
    void fail_fence(const std::string& fence_id, const std::string& reason);
    void answer_gets();
    void fail_kv_for_gone(MemberId id);
    void end_epoch_kv(Epoch ended);
    void check_fence_deadlines();
    [[nodiscard]] std::vector<KvEntry> epoch_kv() const;

    // admin (coordinator_admin.cpp)
    AdminReply admin(const StatusCmd& c);
    AdminReply admin(const ShrinkCmd& c);
    AdminReply admin(const ExpandCmd& c);
    AdminReply admin(const DrainHostCmd& c);
    AdminReply admin(const SetCmd& c);
    AdminReply admin(const CloseCmd& c);
    AdminReply mark_victims(const std::vector<MemberId>& ids, std::optional<TimeMs> deadline_in_ms);

    // recovery (coordinator_recovery.cpp)
    void replay(std::span<const Record> records);

    CoordinatorConfig config_;
    std::uint64_t coord_incarnation_ = 0;
    TimeMs now_ = 0;
    Actions out_;
    bool closed_ = false;
    std::string close_reason_;

    std::map<MemberId, MemberState> members_;
    std::map<ConnId, MemberId> conn_member_;
    MemberId next_member_id_ = 1;
    GroupView view_;
    Epoch highest_epoch_ = 0;
    std::optional<InFlight> flight_;
    mutable std::optional<Changes> pending_cache_;  ///< see pending_changes()
    std::uint64_t transition_counter_ = 0;
    bool force_now_ = false;  ///< EXPAND: skip the batch window once
    /// Proposals aborted since the last commit (by a restart or not): a member that ACKed one and missed its ABORT
    /// (disconnected, or the coordinator crashed right after the record) hears it when it resumes.
    std::set<Epoch> aborted_;

    std::map<KvKey, std::string> epoch_values_;
    std::map<KvKey, std::string> job_values_;
    std::map<std::string, PendingFence> fences_;
    std::map<std::string, FenceDone> done_fences_;  ///< replayed to a member that asks again after a reconnect
    std::vector<PendingGet> gets_;
};

struct Coordinator::Started {
    Coordinator coordinator;
    Actions actions;
};

}  // namespace gpuops::rescale
