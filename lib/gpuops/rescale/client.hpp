// The worker side of the rescale protocol (research/rescale.md §6.4): gpuops::rescale::Client keeps one
// connection to the coordinator, heartbeats, follows transitions (safe point, drain, PREPARE → ACK → COMMIT),
// reconnects with capped, fully jittered backoff and resumes with the same member id, and offers the
// put/fence/get bootstrap calls a runtime's PMI shim needs.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuops/core/json_io.hpp"
#include "gpuops/rescale/base64.hpp"
#include "gpuops/rescale/member_view.hpp"
#include "gpuops/rescale/protocol.hpp"

namespace gpuops::rescale {

/// Where the worker stands (§6.4). `prepared` and `at_safe_point` are inside a transition; `released`,
/// `evicted` and `stopped` are final.
enum class ClientState {
    connecting,     ///< first connection and HELLO not answered yet
    joining,        ///< registered, waiting to be admitted into a view
    active,         ///< a member of the committed view
    at_safe_point,  ///< told the coordinator it reached a safe point (or drained) and waits for PREPARE
    prepared,       ///< acknowledged a proposed view, waits for COMMIT or ABORT
    reconnecting,   ///< lost the connection; keeps its view and retries with backoff
    released,       ///< removed by a committed shrink: must stop using the group
    evicted,        ///< declared dead or superseded: must stop using the group
    stopped,        ///< stop() was called, or the job closed
};
[[nodiscard]] std::string_view to_string(ClientState state);

struct ClientOptions {
    std::string coord;  ///< host:port of the coordinator
    std::string job;
    std::string token;
    std::string worker_id;  ///< stable across process restarts
    std::string host;       ///< empty: gethostname()
    std::string addr_b64;   ///< this process's endpoint address (e.g. a UCX worker address), base64
    json_io::Json meta = json_io::Json::object();
    std::chrono::milliseconds heartbeat{1000};
    std::chrono::milliseconds backoff_min{10};  ///< §6.8: 10 ms → 1 s, full jitter
    std::chrono::milliseconds backoff_max{1000};
    /// Give up reconnecting after this long without a connection (then evicted); 0: keep trying.
    std::chrono::milliseconds give_up_after{0};
    std::uint64_t seed = 0;  ///< jitter; 0: from the clock
};

/// What a runtime does at each step of a transition. Called on the client's own thread, one at a time; they
/// may call safe_point(), drained() and leave() but must not call the blocking put/fence/get/wait_* calls.
struct ClientCallbacks {
    /// A transition started. The runtime reaches a safe point (and, when `victim`, migrates its work away) and
    /// then calls safe_point() or drained(). Unset: the client declares the safe point (or drained) at once.
    std::function<void(const Transition& transition, bool victim)> on_transition;
    /// A proposed view: reconcile endpoints (connect to `added`, close `removed`). Return an empty string on
    /// success, else why it failed (sent as a NACK). Unset: success.
    std::function<std::string(const MemberView& proposed, const Prepare& prepare)> on_prepare;
    /// The proposed view is committed: switch to it. Also called when WELCOME admits a resumed member.
    std::function<void(const MemberView& view)> on_commit;
    /// The proposal was abandoned: undo what on_prepare did; the committed view still holds.
    std::function<void(const Abort& abort)> on_abort;
    /// This member is out of the group (released, evicted or the job closed): stop using the view. Must not call
    /// stop() (it waits for this thread).
    std::function<void(ClientState final_state, const std::string& reason)> on_exit;
};

/// One worker's membership. Thread-safe; its I/O runs on a thread of its own.
class Client {
public:
    Client(ClientOptions options, ClientCallbacks callbacks);
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;
    ~Client();

    /// Connects and registers in the background; see wait_active().
    void start();
    /// Sends LEAVE when a member (best effort), then closes and joins the thread. Idempotent.
    void stop(std::string_view reason = "stopped");

    /// Blocks until the worker is a member of a committed view (or the timeout passes, or it is out):
    /// the view, or nullopt.
    [[nodiscard]] std::optional<MemberView> wait_active(std::chrono::milliseconds timeout);
    /// Blocks until the worker is active in a committed epoch greater than `epoch` (or is out, or the timeout passes).
    [[nodiscard]] std::optional<MemberView> wait_epoch_after(Epoch epoch, std::chrono::milliseconds timeout);
    /// The same wait, answering only the epoch: no copy of a view of a thousand addresses.
    [[nodiscard]] std::optional<Epoch> wait_epoch_number_after(Epoch epoch, std::chrono::milliseconds timeout);
    /// Blocks until the state is final (released, evicted, stopped) or the timeout passes.
    [[nodiscard]] std::optional<ClientState> wait_exit(std::chrono::milliseconds timeout);

    /// The runtime reached its safe point for the transition in progress.
    void safe_point();
    /// This victim's work has moved away: it can be removed.
    void drained();
    /// Forwards an interruption notice for this worker (as the spot agent would).
    void notice(std::string source, std::string deadline_utc, std::optional<TimeMs> deadline_in_ms);

    /// Bootstrap calls of the committed epoch (§6.5). put() is asynchronous: a PUT the coordinator refuses
    /// (a stale epoch) shows as a missing entry at the next fence. fence() and get() throw gpuops::Error when they
    /// fail (stale epoch, the fence failed, the timeout passed, the connection dropped, the worker is out); while
    /// the coordinator is unreachable they fail at once.
    void put(const std::string& key, const std::string& val_b64, KvScope scope = KvScope::epoch);
    /// A barrier of the committed epoch's members; with `collect`, every PUT of the epoch.
    [[nodiscard]] std::vector<KvEntry> fence(const std::string& fence_id, bool collect,
                                             std::chrono::milliseconds timeout);
    [[nodiscard]] std::string get(const std::string& key, MemberId member, std::chrono::milliseconds timeout,
                                  KvScope scope = KvScope::epoch);

    [[nodiscard]] ClientState state() const;
    [[nodiscard]] MemberView view() const;  ///< the committed view (epoch 0 before the first)
    [[nodiscard]] std::optional<MemberId> member_id() const;
    /// Connections made, for tests and metrics (1 without reconnects).
    [[nodiscard]] std::uint64_t connections() const;

    class Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace gpuops::rescale
