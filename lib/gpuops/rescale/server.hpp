// The rescale coordinator's network shell: a single-threaded Asio event loop that feeds socket lines, closes and
// timer ticks to the pure Coordinator and runs the actions it returns, in order (research/rescale.md §6.1).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "gpuops/rescale/address.hpp"
#include "gpuops/rescale/codec.hpp"
#include "gpuops/rescale/coordinator.hpp"
#include "gpuops/rescale/records.hpp"

namespace gpuops::rescale {

struct ServerOptions {
    HostPort listen;  ///< port 0: an ephemeral port, see Server::port()
    /// Longest line a peer may send; a longer one is answered ERROR TOO_LARGE and the connection closed.
    std::size_t max_line_bytes = default_max_line_bytes;
    /// Bytes that may wait to be written to one peer. A peer that lets more pile up is disconnected (the core sees
    /// the close), so that one slow reader never holds up the others. A single line is always accepted into an
    /// empty queue, so the limit may be below the largest message.
    std::size_t max_queue_bytes = std::size_t{16} << 20;
    /// How long a closed job waits for its last replies to drain before the server stops anyway.
    std::chrono::milliseconds close_grace{2000};
    /// Stop on SIGINT and SIGTERM (the tool sets this; an in-process test must not take the signals).
    bool handle_signals = false;
    /// Diagnostics the tool shows with -v (a dropped slow peer, a failed accept). Called on the server's thread.
    std::function<void(std::string_view)> note;
};

/// What the coordinator itself spent, for the benchmarks.
struct ServerStats {
    std::uint64_t events = 0;           ///< lines, ticks and closed connections handled
    std::uint64_t busy_ns = 0;          ///< CPU time handling them: decoding, the core, persisting, encoding the sends
    std::uint64_t persist_ns = 0;       ///< wall time in store appends (waiting for fsync included)
    std::uint64_t persist_wait_ns = 0;  ///< of which not on the CPU: waiting for the disk. busy + this = own time
    std::uint64_t persists = 0;         ///< records appended
    std::uint64_t writes = 0;           ///< store writes (group commit: one per batch of records)
};

/// One coordinator serving one job on one port; workers and admin clients share the port.
///
/// Persistence: every record the core emits is appended to the store (which returns once the record is
/// durable) before any later action runs, so no message ever reveals a decision a crash could lose. An
/// exception from the store propagates out of run(): the server cannot keep its promise and stops.
///
/// Testing hook: when GPUOPS_RESCALE_CRASH_AFTER=<KIND>[:<n>] is set (crash_hook.hpp), the process raises
/// SIGKILL right after the n-th durable append of that record kind. It exists for crash-restart tests only.
class Server {
public:
    /// Binds and listens at once (UnavailableError, 69, when the address cannot be bound), so the port is known
    /// before run(); then starts the coordinator over what `store` holds and appends the START record.
    /// `store` must outlive the server.
    Server(ServerOptions options, CoordinatorConfig config, RecordStore& store);
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;
    ~Server();

    /// The address actually bound, with the real port when 0 was asked for.
    [[nodiscard]] HostPort address() const;
    [[nodiscard]] std::uint16_t port() const;

    /// Serves until stop(), SIGINT/SIGTERM (with handle_signals), or the job is closed and the last replies
    /// have been written (or close_grace passed). A job that was already closed when the server started is
    /// served for max(reconnect_grace_ms, lease_ms) first, so that members that missed their RELEASE hear
    /// ERROR CLOSED when they resume. Call once, from one thread.
    void run();
    /// Makes run() return soon; callable from any thread, also before run().
    void stop();
    /// Counters since start; callable from any thread.
    [[nodiscard]] ServerStats stats() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// `rescale-coord serve`: the job's records in the SQLite database at `db` (created when missing, resumed when
/// not), the server bound, its port written atomically to `port_file` (unless empty) and announced through
/// `listening`, then served until stopped or closed.
void serve_job(const ServerOptions& options, const CoordinatorConfig& config, const std::string& db,
               const std::string& port_file, const std::function<void(const HostPort&)>& listening);

}  // namespace gpuops::rescale
