// The reference worker: a work loop that stops at safe points only between steps, as a runtime's load
// balancing step would, with the client's callbacks handing events to that loop.
#include "gpuops/rescale/reference_worker.hpp"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"

namespace gpuops::rescale {

namespace {

using Clock = std::chrono::steady_clock;

/// The byte at `i` of a worker's buffer: a function of its id, so a corrupted or swapped buffer shows.
std::uint8_t pattern(std::size_t seed, std::size_t i) { return static_cast<std::uint8_t>((seed + i * 131) >> 3); }

class ReferenceWorker {
public:
    ReferenceWorker(const ReferenceWorkerOptions& options, const WorkerEventSink& sink)
        : options_(options), sink_(sink), seed_(std::hash<std::string>{}(options.client.worker_id)) {
        buffer_.resize(options_.buffer_bytes);
        for (std::size_t i = 0; i < buffer_.size(); ++i)
            buffer_[i] = pattern(seed_, i);
        client_ = std::make_unique<Client>(options_.client, callbacks());
    }

    int run(const std::atomic<bool>& stop) {
        {
            const std::lock_guard lock(mutex_);
            transition_started_ = Clock::now();
        }
        client_->start();
        for (;;) {
            Event next = wait_for_event(stop);
            if (stop) {
                client_->stop("stopped");
                report_exit(ClientState::stopped, "stopped");
                return buffer_ok() ? 0 : 1;
            }
            if (next.exit) {
                report_exit(next.exit->first, next.exit->second);
                client_->stop(next.exit->second);
                return next.exit->first == ClientState::evicted || !buffer_ok() ? 1 : 0;
            }
            if (next.transition) reach_safe_point(*next.transition);
            for (const MemberView& view : next.commits)
                report_commit(view, next.since);
            ++counter_;  // one step of work
        }
    }

private:
    struct Event {
        std::optional<std::pair<Transition, bool>> transition;
        std::vector<MemberView> commits;
        std::optional<std::pair<ClientState, std::string>> exit;
        Clock::time_point since;  ///< when the transition behind these commits started
    };

    ClientCallbacks callbacks() {
        ClientCallbacks cb;
        cb.on_transition = [this](const Transition& t, bool victim) {
            const std::lock_guard lock(mutex_);
            transition_ = {t, victim};
            transition_started_ = Clock::now();
            changed_.notify_all();
        };
        // Endpoint reconciliation stands in for UCX: the state the new view will run on must be intact.
        cb.on_prepare = [this](const MemberView&, const Prepare&) -> std::string {
            if (options_.prepare_delay.count() > 0) std::this_thread::sleep_for(options_.prepare_delay);
            return buffer_ok() ? std::string() : "the worker's buffer is corrupted";
        };
        cb.on_commit = [this](const MemberView& view) {
            const std::lock_guard lock(mutex_);
            commits_.push_back(view);
            changed_.notify_all();
        };
        cb.on_exit = [this](ClientState state, const std::string& reason) {
            const std::lock_guard lock(mutex_);
            exit_ = {state, reason};
            changed_.notify_all();
        };
        return cb;
    }

    /// The next step: at once when something happened, else after one step of work.
    Event wait_for_event(const std::atomic<bool>& stop) {
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, options_.step, [&] { return stop || transition_ || !commits_.empty() || exit_; });
        Event e;
        e.transition = std::exchange(transition_, std::nullopt);
        e.commits.assign(commits_.begin(), commits_.end());
        commits_.clear();
        if (e.commits.empty()) e.exit = exit_;  // report the last commit before leaving
        e.since = transition_started_;
        return e;
    }

    void reach_safe_point(const std::pair<Transition, bool>& t) {
        if (t.second) {
            client_->drained();  // a victim: its work has moved away (nothing to move in the reference worker)
        } else {
            client_->safe_point();
        }
    }

    [[nodiscard]] bool buffer_ok() const {
        for (std::size_t i = 0; i < buffer_.size(); ++i)
            if (buffer_[i] != pattern(seed_, i)) return false;
        return true;
    }

    void report_commit(const MemberView& view, Clock::time_point since) {
        const auto ms = std::chrono::duration<double, std::milli>(Clock::now() - since).count();
        const auto member = client_->member_id();
        json_io::Json e;
        e["event"] = "commit";
        e["worker"] = options_.client.worker_id;
        e["member"] = member ? json_io::Json(*member) : json_io::Json();
        e["epoch"] = view.epoch;
        e["hash"] = view.hash;
        const auto rank = member ? view.rank_of(*member) : std::nullopt;
        e["rank"] = rank ? json_io::Json(*rank) : json_io::Json();
        e["size"] = view.size();
        e["counter"] = counter_;
        e["buffer_ok"] = buffer_ok();
        if (options_.exchange) {
            const std::string error = exchange(view);
            e["exchange_ok"] = error.empty();
            if (!error.empty()) e["exchange_error"] = error;
        }
        e["ms"] = std::round(ms * 1000) / 1000;
        sink_(e);
    }

    /// The bootstrap a runtime runs in each new epoch: publish, fence with collect, find every member's entry.
    std::string exchange(const MemberView& view) {
        try {
            client_->put("addr", base64_encode(options_.client.worker_id));
            const auto kv = client_->fence(fmt::format("exchange-{}", view.epoch), true, options_.fence_timeout);
            for (const MemberId id : view.members) {
                const bool found = std::ranges::any_of(
                    kv, [&](const KvEntry& entry) { return entry.member_id == id && entry.key == "addr"; });
                if (!found) return fmt::format("no address from member {} after the fence", id);
            }
            return {};
        } catch (const Error& e) {
            return e.what();
        }
    }

    void report_exit(ClientState state, const std::string& reason) {
        json_io::Json e;
        e["event"] = "exit";
        e["worker"] = options_.client.worker_id;
        e["state"] = std::string(to_string(state));
        e["reason"] = reason;
        e["counter"] = counter_;
        e["buffer_ok"] = buffer_ok();
        sink_(e);
    }

    const ReferenceWorkerOptions& options_;
    const WorkerEventSink& sink_;
    std::size_t seed_;
    std::vector<std::uint8_t> buffer_;
    std::uint64_t counter_ = 0;
    std::unique_ptr<Client> client_;

    std::mutex mutex_;
    std::condition_variable changed_;
    std::optional<std::pair<Transition, bool>> transition_;
    std::deque<MemberView> commits_;
    std::optional<std::pair<ClientState, std::string>> exit_;
    Clock::time_point transition_started_;
};

}  // namespace

int run_reference_worker(const ReferenceWorkerOptions& options, const std::atomic<bool>& stop,
                         const WorkerEventSink& sink) {
    ReferenceWorker worker(options, sink);
    return worker.run(stop);
}

}  // namespace gpuops::rescale
