// The rescale-coord wire protocol (research/rescale.md §6.2): every message type as a plain value struct.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gpuops/core/json_io.hpp"

namespace gpuops::rescale {

using MemberId = std::uint64_t;      ///< coordinator-assigned, never reused
using Epoch = std::uint64_t;         ///< view number; 0 is the empty view before the first commit
using TransitionId = std::uint64_t;  ///< unique across coordinator restarts
using ConnId = std::uint64_t;        ///< a connection, named by the server that owns the sockets
using TimeMs = std::int64_t;         ///< the injected clock: monotonic milliseconds

inline constexpr int protocol_version = 1;

/// The codes of ERROR replies (§6.2). Every rejected request gets exactly one of these.
enum class ErrorCode {
    protocol,        ///< malformed JSON, a missing or mistyped field, a message that makes no sense here
    unknown_type,    ///< "t" names no message type
    too_large,       ///< the line exceeds the coordinator's limit
    bad_token,       ///< wrong job token, admin token or session
    unknown_member,  ///< no such member (or HELLO not sent yet on this connection)
    stale_epoch,     ///< the message is for an epoch or transition that is over
    busy,            ///< a request that needs an idle coordinator came during a transition
    invalid,         ///< an admin command that cannot be applied (below min size, unknown member, ...)
    closed,          ///< the job was closed
};
[[nodiscard]] std::string_view to_string(ErrorCode code);
[[nodiscard]] std::optional<ErrorCode> error_code_from_string(std::string_view text);

/// What a transition changes: only planned victims, only joiners, only failed members, or several of these.
enum class TransitionKind { shrink, expand, fail, mixed };
[[nodiscard]] std::string_view to_string(TransitionKind kind);
[[nodiscard]] std::optional<TransitionKind> transition_kind_from_string(std::string_view text);

/// A worker's standing after HELLO: waiting to be admitted, or a member of the committed view.
enum class JoinState { joining, active };
[[nodiscard]] std::string_view to_string(JoinState state);
[[nodiscard]] std::optional<JoinState> join_state_from_string(std::string_view text);

/// KV namespaces: one per epoch (cleared when the next view commits) and one for the whole job.
enum class KvScope { epoch, job };
[[nodiscard]] std::string_view to_string(KvScope scope);
[[nodiscard]] std::optional<KvScope> kv_scope_from_string(std::string_view text);

/// A member's address as the view tables carry it.
struct Peer {
    MemberId member_id = 0;
    std::uint64_t rank = 0;
    std::string addr_b64;
    bool operator==(const Peer&) const = default;
};

/// A committed view as WELCOME hands it to a resuming or late worker: members in rank order, with addresses.
struct ViewInfo {
    Epoch epoch = 0;
    std::string view_hash;
    std::vector<Peer> peers;
    bool operator==(const ViewInfo&) const = default;
};

struct ResumeInfo {
    MemberId member_id = 0;
    std::string session;
    Epoch last_epoch = 0;
    bool operator==(const ResumeInfo&) const = default;
};

struct KvEntry {
    MemberId member_id = 0;
    std::string key;
    std::string val_b64;
    bool operator==(const KvEntry&) const = default;
};

// ---- worker → coordinator -------------------------------------------------------------------------------------

struct Hello {
    static constexpr std::string_view type = "HELLO";
    std::string job;
    std::string token;
    std::string worker_id;    ///< stable across process restarts (instance id, host+slot)
    std::string incarnation;  ///< a nonce per process start: a resume from another incarnation is a zombie
    std::string host;
    std::string addr_b64;  ///< opaque (a UCX worker address), never interpreted
    json_io::Json meta = json_io::Json::object();
    std::optional<ResumeInfo> resume;
    bool operator==(const Hello&) const = default;
};

struct Heartbeat {
    static constexpr std::string_view type = "HEARTBEAT";
    Epoch epoch = 0;
    bool operator==(const Heartbeat&) const = default;
};

struct SafePoint {
    static constexpr std::string_view type = "SAFE_POINT";
    Epoch epoch = 0;
    TransitionId transition_id = 0;
    bool operator==(const SafePoint&) const = default;
};

struct Drained {
    static constexpr std::string_view type = "DRAINED";
    Epoch epoch = 0;
    TransitionId transition_id = 0;
    bool operator==(const Drained&) const = default;
};

struct Ack {
    static constexpr std::string_view type = "ACK";
    Epoch epoch = 0;  ///< the proposed epoch
    std::string view_hash;
    bool ok = true;   ///< false: endpoint reconciliation failed
    std::string err;  ///< why, when !ok
    bool operator==(const Ack&) const = default;
};

struct Ready {
    static constexpr std::string_view type = "READY";
    Epoch epoch = 0;
    bool operator==(const Ready&) const = default;
};

struct Put {
    static constexpr std::string_view type = "PUT";
    Epoch epoch = 0;
    std::string key;
    std::string val_b64;
    KvScope scope = KvScope::epoch;
    bool operator==(const Put&) const = default;
};

struct Fence {
    static constexpr std::string_view type = "FENCE";
    Epoch epoch = 0;
    std::string fence_id;
    bool collect = false;  ///< the reply carries every PUT of the epoch
    bool operator==(const Fence&) const = default;
};

struct Get {
    static constexpr std::string_view type = "GET";
    Epoch epoch = 0;
    std::string key;
    MemberId member_id = 0;  ///< whose value
    KvScope scope = KvScope::epoch;
    bool operator==(const Get&) const = default;
};

/// An interruption notice, from the worker itself or from an agent on its instance (then `token` is the job token).
struct Notice {
    static constexpr std::string_view type = "NOTICE";
    std::string worker_id;
    std::string source;                    ///< aws | gcp | azure | manual
    std::string deadline_utc;              ///< as the cloud said it; informational
    std::optional<TimeMs> deadline_in_ms;  ///< lead time, converted at the edge; absent: the safe-point timeout
    std::string token;
    bool operator==(const Notice&) const = default;
};

struct Leave {
    static constexpr std::string_view type = "LEAVE";
    std::string reason;
    bool operator==(const Leave&) const = default;
};

// ---- coordinator → worker -------------------------------------------------------------------------------------

struct Welcome {
    static constexpr std::string_view type = "WELCOME";
    MemberId member_id = 0;
    std::string session;
    std::uint64_t coord_incarnation = 0;
    JoinState state = JoinState::joining;
    std::optional<ViewInfo> view;  ///< the committed view, for a member of it
    bool operator==(const Welcome&) const = default;
};

struct PendingInfo {
    TransitionId transition_id = 0;
    TransitionKind kind = TransitionKind::shrink;
    std::vector<MemberId> victims;
    bool operator==(const PendingInfo&) const = default;
};

struct HbAck {
    static constexpr std::string_view type = "HB_ACK";
    Epoch epoch = 0;
    std::optional<PendingInfo> pending;  ///< a transition is under way: reach a safe point soon
    bool operator==(const HbAck&) const = default;
};

struct Transition {
    static constexpr std::string_view type = "TRANSITION";
    TransitionId transition_id = 0;
    Epoch from_epoch = 0;
    TransitionKind kind = TransitionKind::shrink;
    std::vector<MemberId> victims;  ///< must drain (the runtime's availability bitmap)
    std::vector<MemberId> joiners;
    TimeMs deadline_ms = 0;  ///< time left to reach the safe point / drain
    bool operator==(const Transition&) const = default;
};

/// A proposed view. `members` are the member ids in rank order (index = rank).
/// Survivors get the delta (`added`, `removed`); joiners get every member in `added` (full_table).
struct Prepare {
    static constexpr std::string_view type = "PREPARE";
    Epoch epoch = 0;
    Epoch from_epoch = 0;
    std::string view_hash;
    std::vector<MemberId> members;
    std::vector<Peer> added;
    std::vector<MemberId> removed;
    bool full_table = false;
    bool operator==(const Prepare&) const = default;
};

struct Commit {
    static constexpr std::string_view type = "COMMIT";
    Epoch epoch = 0;
    std::string view_hash;
    bool operator==(const Commit&) const = default;
};

/// A transition abandoned: stay in the committed view. `epoch` names the proposal when one was made;
/// a transition abandoned before its proposal has none.
struct Abort {
    static constexpr std::string_view type = "ABORT";
    std::optional<Epoch> epoch;
    TransitionId transition_id = 0;
    std::string reason;
    bool operator==(const Abort&) const = default;
};

struct Release {
    static constexpr std::string_view type = "RELEASE";
    Epoch epoch = 0;
    bool operator==(const Release&) const = default;
};

/// A fence's outcome: ok with the collected KV, or failed (a member died, the epoch ended, the timeout passed).
struct FenceDone {
    static constexpr std::string_view type = "FENCE_DONE";
    Epoch epoch = 0;
    std::string fence_id;
    bool ok = true;
    std::string reason;
    std::vector<KvEntry> kv;
    bool operator==(const FenceDone&) const = default;
};

struct GetReply {
    static constexpr std::string_view type = "GET_REPLY";
    Epoch epoch = 0;
    std::string key;
    MemberId member_id = 0;
    bool ok = true;
    std::string val_b64;
    std::string reason;
    bool operator==(const GetReply&) const = default;
};

struct Evicted {
    static constexpr std::string_view type = "EVICTED";
    Epoch epoch = 0;
    std::string reason;
    bool operator==(const Evicted&) const = default;
};

struct ErrorReply {
    static constexpr std::string_view type = "ERROR";
    ErrorCode code = ErrorCode::protocol;
    std::string msg;
    std::optional<std::uint64_t> re;  ///< the seq of the request, when it could be read
    bool operator==(const ErrorReply&) const = default;
};

// ---- admin (rescale-coord ctl; `token` is the admin token) ------------------------------------------------------

struct StatusCmd {
    static constexpr std::string_view type = "STATUS";
    std::string token;
    bool operator==(const StatusCmd&) const = default;
};

/// Remove the listed members, or else the `count` highest ranks (fewest ranks move).
struct ShrinkCmd {
    static constexpr std::string_view type = "SHRINK";
    std::string token;
    std::vector<MemberId> members;
    std::uint64_t count = 0;
    std::optional<TimeMs> deadline_in_ms;
    bool operator==(const ShrinkCmd&) const = default;
};

/// Admit waiting joiners now, without waiting for the batch window: the listed workers, or else `count` of them
/// in arrival order (0: all).
struct ExpandCmd {
    static constexpr std::string_view type = "EXPAND";
    std::string token;
    std::uint64_t count = 0;
    std::vector<std::string> worker_ids;
    bool operator==(const ExpandCmd&) const = default;
};

struct DrainHostCmd {
    static constexpr std::string_view type = "DRAIN_HOST";
    std::string token;
    std::string host;
    std::optional<TimeMs> deadline_in_ms;
    bool operator==(const DrainHostCmd&) const = default;
};

struct SetCmd {
    static constexpr std::string_view type = "SET";
    std::string token;
    std::optional<std::uint64_t> min_size;
    std::optional<std::uint64_t> max_size;
    std::optional<TimeMs> batch_window_ms;
    bool operator==(const SetCmd&) const = default;
};

struct CloseCmd {
    static constexpr std::string_view type = "CLOSE";
    std::string token;
    bool operator==(const CloseCmd&) const = default;
};

struct AdminReply {
    static constexpr std::string_view type = "ADMIN_REPLY";
    bool ok = true;
    std::optional<ErrorCode> code;
    std::string msg;
    json_io::Json status;  ///< STATUS: the coordinator's state; otherwise null
    bool operator==(const AdminReply&) const = default;
};

using Message = std::variant<Hello, Heartbeat, SafePoint, Drained, Ack, Ready, Put, Fence, Get, Notice, Leave, Welcome,
                             HbAck, Transition, Prepare, Commit, Abort, Release, FenceDone, GetReply, Evicted,
                             ErrorReply, StatusCmd, ShrinkCmd, ExpandCmd, DrainHostCmd, SetCmd, CloseCmd, AdminReply>;

using AdminCommand = std::variant<StatusCmd, ShrinkCmd, ExpandCmd, DrainHostCmd, SetCmd, CloseCmd>;

/// The "t" of a message.
[[nodiscard]] std::string_view type_of(const Message& message);

}  // namespace gpuops::rescale
