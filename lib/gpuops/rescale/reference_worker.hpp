// The reference worker of `rescale-coord worker`: a process that keeps live state across rescales (a counter
// that only grows and a buffer whose contents it checks) while it follows every view change through the
// client library, and exchanges addresses with put/fence after each commit, as a runtime's bootstrap would.
// Tests, the demo and the benchmarks run it; its events are JSON lines.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "gpuops/core/json_io.hpp"
#include "gpuops/rescale/client.hpp"

namespace gpuops::rescale {

struct ReferenceWorkerOptions {
    ClientOptions client;
    std::size_t buffer_bytes = std::size_t{1} << 20;  ///< live state that must survive every rescale intact
    std::chrono::milliseconds step{5};                ///< one unit of "work" between safe points
    std::chrono::milliseconds fence_timeout{10'000};
    bool exchange = true;  ///< after each commit: PUT this worker's key, FENCE with collect, check every member's
    /// Time endpoint reconciliation takes before the ACK (a runtime opening UCX endpoints to many peers); tests
    /// use it to kill a worker while a proposal is open.
    std::chrono::milliseconds prepare_delay{0};
};

/// Events, one JSON object each:
///   {"event":"commit","worker","member","epoch","hash","rank","size","counter","buffer_ok","exchange_ok","ms"}
///   {"event":"exit","worker","state","reason","counter","buffer_ok"}
/// `ms` is the time from the transition's start (or from start-up, for the first view) to the commit.
using WorkerEventSink = std::function<void(const json_io::Json& event)>;

/// Runs until the worker is released or evicted, the job closes, or `stop` becomes true (then it leaves).
/// Returns 0 when it ended released, stopped or closed with its state intact; 1 when evicted or its state was
/// found corrupted.
int run_reference_worker(const ReferenceWorkerOptions& options, const std::atomic<bool>& stop,
                         const WorkerEventSink& sink);

}  // namespace gpuops::rescale
