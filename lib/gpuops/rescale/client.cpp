// The client's state machine runs on one Asio thread: the socket, the timers and every callback. Public calls
// post to it; the blocking ones wait on a promise the thread fulfils.
#include "gpuops/rescale/client.hpp"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <random>
#include <string_view>
#include <thread>

#include <asio.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include "gpuops/core/error.hpp"
#include "gpuops/rescale/address.hpp"
#include "gpuops/rescale/codec.hpp"
#include "gpuops/rescale/line_buffer.hpp"
#include "gpuops/rescale/pending_requests.hpp"

namespace gpuops::rescale {

namespace {

bool final_state(ClientState s) {
    return s == ClientState::released || s == ClientState::evicted || s == ClientState::stopped;
}

std::string hostname() {
    std::array<char, 256> name{};
    if (::gethostname(name.data(), name.size() - 1) != 0) return "localhost";
    return name.data();
}

/// Lines from the coordinator may carry a peer table of many addresses; bound them all the same.
constexpr std::size_t max_reply_bytes = 4 * default_max_line_bytes;

}  // namespace

std::string_view to_string(ClientState state) {
    switch (state) {
        case ClientState::connecting: return "connecting";
        case ClientState::joining: return "joining";
        case ClientState::active: return "active";
        case ClientState::at_safe_point: return "at-safe-point";
        case ClientState::prepared: return "prepared";
        case ClientState::reconnecting: return "reconnecting";
        case ClientState::released: return "released";
        case ClientState::evicted: return "evicted";
        case ClientState::stopped: return "stopped";
    }
    return "unknown";
}

class Client::Impl {
public:
    Impl(ClientOptions options, ClientCallbacks callbacks)
        : options_(std::move(options)),
          callbacks_(std::move(callbacks)),
          socket_(io_),
          heartbeat_timer_(io_),
          retry_timer_(io_),
          rng_(options_.seed != 0
                   ? options_.seed
                   : static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())) {
        if (options_.host.empty()) options_.host = hostname();
        // A nonce per process start: a resume from an older incarnation is a zombie and gets EVICTED.
        incarnation_ = fmt::format("{:016x}", rng_());
        try {
            coord_ = parse_host_port(options_.coord);
        } catch (const DataError& e) {
            throw UsageError(fmt::format("coordinator address: {}", e.reason()));
        }
    }

    ~Impl() { stop("destroyed"); }

    void start() {
        thread_ = std::thread([this] {
            connect();
            schedule_heartbeat();
            io_.run();
        });
    }

    void stop(std::string_view reason) {
        if (!thread_.joinable()) return;
        std::promise<void> done;
        asio::post(io_, [this, &done, why = std::string(reason)] {
            if (registered_ && !final_state(state_)) send(Leave{why});
            finish(ClientState::stopped, why, false);
            flush_then_close([&done] { done.set_value(); });
        });
        // The work guard keeps the I/O thread running (even when a released or evicted worker has nothing left to
        // do), so the handler runs. The bound is for a peer that never reads the LEAVE.
        (void)done.get_future().wait_for(std::chrono::seconds(2));
        work_.reset();
        io_.stop();
        thread_.join();
    }

    /// Waits until the worker is active in an epoch after `epoch` (0: any committed view).
    std::optional<MemberView> wait_active_after(Epoch epoch, std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex_);
        if (!wait_ready(lock, epoch, timeout)) return std::nullopt;
        return view_;
    }

    std::optional<Epoch> wait_epoch_number_after(Epoch epoch, std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex_);
        if (!wait_ready(lock, epoch, timeout)) return std::nullopt;
        return view_.epoch;
    }

    /// Waits (holding `lock` on mutex_ between wakeups) until active in an epoch after `epoch`; false when out or
    /// timed out.
    bool wait_ready(std::unique_lock<std::mutex>& lock, Epoch epoch, std::chrono::milliseconds timeout) {
        const auto ready = [&] { return state_ == ClientState::active && view_.epoch > epoch; };
        changed_.wait_for(lock, timeout, [&] { return ready() || final_state(state_); });
        return ready();
    }

    std::optional<ClientState> wait_exit(std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex_);
        if (!changed_.wait_for(lock, timeout, [&] { return final_state(state_); })) return std::nullopt;
        return state_;
    }

    void safe_point() {
        asio::post(io_, [this] {
            if (!transition_ || !set_state_if(ClientState::active, ClientState::at_safe_point)) return;
            send(SafePoint{view_.epoch, transition_->transition_id});
        });
    }

    void drained() {
        asio::post(io_, [this] {
            if (!transition_ || !set_state_if(ClientState::active, ClientState::at_safe_point)) return;
            send(Drained{view_.epoch, transition_->transition_id});
        });
    }

    void notice(std::string source, std::string deadline_utc, std::optional<TimeMs> deadline_in_ms) {
        asio::post(io_, [this, source = std::move(source), deadline_utc = std::move(deadline_utc), deadline_in_ms] {
            send(Notice{options_.worker_id, source, deadline_utc, deadline_in_ms, options_.token});
        });
    }

    void put(const std::string& key, const std::string& val_b64, KvScope scope) {
        asio::post(io_, [this, key, val_b64, scope] { send(Put{view_.epoch, key, val_b64, scope}); });
    }

    std::vector<KvEntry> fence(const std::string& fence_id, bool collect, std::chrono::milliseconds timeout) {
        auto promise = std::make_shared<std::promise<std::vector<KvEntry>>>();
        auto future = promise->get_future();
        asio::post(io_, [this, fence_id, collect, promise] {
            if (final_state(state_)) {
                promise->set_exception(std::make_exception_ptr(UnavailableError("the worker is out of the group")));
                return;
            }
            if (const auto why = unreachable()) {
                promise->set_exception(std::make_exception_ptr(UnavailableError(*why)));
                return;
            }
            pending_.add_fence(fence_id, send(Fence{view_.epoch, fence_id, collect}), promise);
        });
        if (future.wait_for(timeout) != std::future_status::ready) {
            asio::post(io_, [this, fence_id] { pending_.forget_fence(fence_id); });
            throw TimeoutError(fmt::format("fence {} did not complete in {} ms", quote(fence_id), timeout.count()));
        }
        return future.get();
    }

    std::string get(const std::string& key, MemberId member, std::chrono::milliseconds timeout, KvScope scope) {
        auto promise = std::make_shared<std::promise<std::string>>();
        auto future = promise->get_future();
        const std::string name = detail::PendingRequests::get_name(key, member);
        asio::post(io_, [this, key, member, scope, promise, name] {
            if (const auto why = unreachable()) {
                promise->set_exception(std::make_exception_ptr(UnavailableError(*why)));
                return;
            }
            pending_.add_get(name, send(Get{view_.epoch, key, member, scope}), promise);
        });
        if (future.wait_for(timeout) != std::future_status::ready) {
            asio::post(io_, [this, name] { pending_.forget_get(name); });
            throw TimeoutError(
                fmt::format("get {} of member {} did not complete in {} ms", quote(key), member, timeout.count()));
        }
        return future.get();
    }

    ClientState state() const {
        const std::lock_guard lock(mutex_);
        return state_;
    }
    MemberView view() const {
        const std::lock_guard lock(mutex_);
        return view_;
    }
    std::optional<MemberId> member_id() const {
        const std::lock_guard lock(mutex_);
        return member_;
    }
    std::uint64_t connections() const {
        const std::lock_guard lock(mutex_);
        return connections_;
    }

private:
    // ---- state, shared with the public getters ------------------------------------------------------------------

    void set_state(ClientState s) {
        {
            const std::lock_guard lock(mutex_);
            state_ = s;
        }
        changed_.notify_all();
    }
    bool set_state_if(ClientState from, ClientState to) {
        {
            const std::lock_guard lock(mutex_);
            if (state_ != from) return false;
            state_ = to;
        }
        changed_.notify_all();
        return true;
    }
    void set_view(MemberView v) {
        {
            const std::lock_guard lock(mutex_);
            view_ = std::move(v);
            state_ = ClientState::active;
        }
        changed_.notify_all();
    }

    /// Final: tells the runtime once, fails what waits, and (unless `keep_socket`) closes.
    void finish(ClientState s, const std::string& reason, bool notify = true) {
        if (final_state(state_) || finishing_) return;
        finishing_ = true;
        pending_.fail_all(fmt::format("the worker is {}: {}", to_string(s), reason));
        heartbeat_timer_.cancel();
        retry_timer_.cancel();
        // The runtime hears it before wait_exit() returns to anyone.
        if (notify && callbacks_.on_exit) callbacks_.on_exit(s, reason);
        set_state(s);
    }

    // ---- connection -----------------------------------------------------------------------------------------------

    void connect() {
        asio::ip::tcp::resolver resolver(io_);
        asio::error_code ec;
        const auto endpoints = resolver.resolve(coord_.host, std::to_string(coord_.port), ec);
        if (ec) return lost(fmt::format("cannot resolve {}: {}", options_.coord, ec.message()));
        asio::async_connect(socket_, endpoints, [this](const asio::error_code& error, const auto& /*endpoint*/) {
            if (error) return lost(fmt::format("cannot connect to {}: {}", options_.coord, error.message()));
            socket_.set_option(asio::ip::tcp::no_delay(true));
            {
                const std::lock_guard lock(mutex_);
                ++connections_;
            }
            down_since_.reset();
            read_next();
            hello();
        });
    }

    void hello() {
        Hello h{options_.job,  options_.token,    options_.worker_id, incarnation_,
                options_.host, options_.addr_b64, options_.meta,      std::nullopt};
        if (member_) h.resume = ResumeInfo{*member_, session_, view_.epoch};
        hello_seq_ = send(std::move(h));
    }

    /// The connection dropped: keep the view and retry with full-jitter backoff (§6.4, 10 ms → 1 s).
    void lost(const std::string& why) {
        if (final_state(state_)) return;
        asio::error_code ignored;
        socket_.close(ignored);
        outbox_.clear();
        writing_ = false;
        inbox_.clear();
        pending_.fail_all(fmt::format("connection lost: {}", why));
        const auto now = std::chrono::steady_clock::now();
        if (!down_since_) down_since_ = now;
        if (options_.give_up_after.count() > 0 && now - *down_since_ > options_.give_up_after)
            return finish(ClientState::evicted,
                          fmt::format("no coordinator for {} ms: {}", options_.give_up_after.count(), why));
        if (registered_) set_state(ClientState::reconnecting);
        const auto cap =
            std::min(options_.backoff_max, options_.backoff_min * (std::int64_t{1} << std::min(attempt_, 16)));
        ++attempt_;
        std::uniform_int_distribution<std::int64_t> jitter(0, std::max<std::int64_t>(cap.count(), 1));
        retry_timer_.expires_after(std::chrono::milliseconds(jitter(rng_)));
        retry_timer_.async_wait([this](const asio::error_code& error) {
            if (!error && !final_state(state_)) connect();
        });
    }

    void read_next() {
        socket_.async_read_some(asio::buffer(chunk_.get(), detail::read_chunk_bytes),
                                [this](const asio::error_code& error, std::size_t bytes) { on_read(error, bytes); });
    }

    void on_read(const asio::error_code& error, std::size_t bytes) {
        if (error) return lost(error.message());
        inbox_.append(std::string_view(chunk_.get(), bytes));
        while (const auto line = inbox_.next()) {
            receive(*line);
            if (!socket_.is_open()) return;  // lost, evicted or released: nothing more to read
        }
        inbox_.compact();
        if (inbox_.rest().size() > max_reply_bytes) return lost("a line over the size limit");
        read_next();
    }

    /// Why a request cannot reach the coordinator now (it would be dropped, and its caller wait out its whole
    /// timeout); nullopt when it can. A connection lost later fails the pending requests.
    std::optional<std::string> unreachable() const {
        if (state_ == ClientState::reconnecting || !socket_.is_open()) return "not connected to the coordinator";
        return std::nullopt;
    }

    std::uint64_t send(Message message) {
        const std::uint64_t seq = ++seq_;
        if (!socket_.is_open()) return seq;
        outbox_.push_back(encode(Envelope{seq, std::move(message)}) + '\n');
        if (!writing_) write_next();
        return seq;
    }

    void write_next() {
        if (outbox_.empty()) {
            writing_ = false;
            if (after_flush_) std::exchange(after_flush_, nullptr)();
            return;
        }
        writing_ = true;
        asio::async_write(socket_, asio::buffer(outbox_.front()), [this](const asio::error_code& error, std::size_t) {
            if (error) return lost(error.message());
            outbox_.pop_front();
            write_next();
        });
    }

    void flush_then_close(std::function<void()> done) {
        auto close = [this, done = std::move(done)] {
            asio::error_code ignored;
            socket_.close(ignored);
            done();
        };
        if (!writing_ || !socket_.is_open()) return close();
        after_flush_ = std::move(close);
    }

    void schedule_heartbeat() {
        heartbeat_timer_.expires_after(options_.heartbeat);
        heartbeat_timer_.async_wait([this](const asio::error_code& error) {
            if (error || final_state(state_)) return;
            if (registered_ && socket_.is_open()) send(Heartbeat{view_.epoch});
            schedule_heartbeat();
        });
    }

    // ---- messages -------------------------------------------------------------------------------------------------

    void receive(std::string_view line) {
        const Decoded decoded = decode(line, max_reply_bytes);
        const auto* envelope = std::get_if<Envelope>(&decoded);
        if (envelope == nullptr) return;  // a coordinator bug or a newer one: nothing safe to do with it
        std::visit([this](const auto& m) { on(m); }, envelope->body);
    }

    void on(const Welcome& w) {
        registered_ = true;
        attempt_ = 0;
        session_ = w.session;
        {
            const std::lock_guard lock(mutex_);
            member_ = w.member_id;
        }
        if (w.state == JoinState::active && w.view) {
            resume_into(view_from(*w.view));
        } else if (!proposed_) {
            set_state(ClientState::joining);
        }
    }

    /// WELCOME after a reconnect names the committed view; a proposal this worker ACKed may still be open.
    void resume_into(MemberView v) {
        if (proposed_ && v.epoch < proposed_->epoch) {
            // ACKed before the connection dropped and not decided yet: the COMMIT or ABORT is still to come.
            if (v.epoch > view_.epoch) set_view(std::move(v));
            set_state(ClientState::prepared);
            return;
        }
        if (proposed_ && v.epoch > proposed_->epoch && callbacks_.on_abort) {
            callbacks_.on_abort(Abort{proposed_->epoch, 0, "superseded while disconnected"});
        }
        const bool newer = v.epoch > view_.epoch;
        proposed_.reset();
        transition_.reset();
        set_view(std::move(v));
        // A commit that happened while disconnected (maybe of the proposal it ACKed): the runtime switches now.
        if (newer && callbacks_.on_commit) callbacks_.on_commit(view_);
    }

    void on(const Transition& t) {
        if (t.from_epoch != view_.epoch || state_ != ClientState::active) return;
        transition_ = t;
        const bool victim = member_ && std::ranges::find(t.victims, *member_) != t.victims.end();
        if (callbacks_.on_transition) return callbacks_.on_transition(t, victim);
        if (set_state_if(ClientState::active, ClientState::at_safe_point)) {
            if (victim) {
                send(Drained{view_.epoch, t.transition_id});
            } else {
                send(SafePoint{view_.epoch, t.transition_id});
            }
        }
    }

    void on(const Prepare& p) {
        if (p.epoch <= view_.epoch) return;  // an old proposal: never go back
        MemberView next = proposed_view(view_, p);
        std::string error = check_proposal(view_, p, next);
        if (error.empty() && callbacks_.on_prepare) error = callbacks_.on_prepare(next, p);
        proposed_ = std::move(next);
        set_state(ClientState::prepared);
        send(Ack{p.epoch, p.view_hash, error.empty(), error});
    }

    void on(const Commit& c) {
        if (!proposed_ || c.epoch != proposed_->epoch) return;
        if (c.view_hash != proposed_->hash)
            return finish(ClientState::evicted, "COMMIT names another view than PREPARE");
        MemberView v = std::move(*proposed_);
        proposed_.reset();
        transition_.reset();
        set_view(std::move(v));
        if (callbacks_.on_commit) callbacks_.on_commit(view_);
        send(Ready{view_.epoch});
    }

    void on(const Abort& a) {
        if (a.epoch && proposed_ && *a.epoch != proposed_->epoch) return;
        const bool undo = proposed_.has_value();
        proposed_.reset();
        transition_.reset();
        if (registered_ && !final_state(state_))
            set_state(view_.epoch > 0 ? ClientState::active : ClientState::joining);
        if (undo && callbacks_.on_abort) callbacks_.on_abort(a);
    }

    void on(const Release& r) {
        finish(ClientState::released, fmt::format("removed from the group at epoch {}", r.epoch));
        flush_then_close([] {});
    }

    void on(const Evicted& e) {
        finish(ClientState::evicted, e.reason);
        flush_then_close([] {});
    }

    void on(const FenceDone& f) { pending_.settle(f); }
    void on(const GetReply& g) { pending_.settle(g); }

    void on(const ErrorReply& e) {
        if (e.code == ErrorCode::closed) return finish(ClientState::stopped, "the job is closed");
        // A refused HELLO never gets better by retrying: a wrong token, or a resume the coordinator cannot place
        // (its database was lost or belongs to another job).
        if (e.re && *e.re == hello_seq_ && (e.code == ErrorCode::bad_token || e.code == ErrorCode::unknown_member))
            return finish(ClientState::evicted, fmt::format("HELLO refused: {}", e.msg));
        if (e.re) pending_.refuse(*e.re, fmt::format("{}: {}", to_string(e.code), e.msg));
    }

    void on(const HbAck& /*ack*/) {}
    template <typename M>
    void on(const M& /*message not for workers*/) {}

    ClientOptions options_;
    ClientCallbacks callbacks_;
    asio::io_context io_;
    asio::ip::tcp::socket socket_;
    asio::steady_timer heartbeat_timer_;
    asio::steady_timer retry_timer_;
    /// Where reads land; not zero-filled: a thousand connections must not touch 64 KiB each up front.
    std::unique_ptr<char[]> chunk_ = std::make_unique_for_overwrite<char[]>(detail::read_chunk_bytes);
    detail::LineBuffer inbox_;
    std::deque<std::string> outbox_;
    bool writing_ = false;
    std::function<void()> after_flush_;
    std::thread thread_;
    /// Keeps io_.run() from returning when nothing is pending, until stop().
    asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
    std::mt19937_64 rng_;
    HostPort coord_;
    std::string incarnation_;

    // Shared with the public getters, under mutex_.
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    ClientState state_ = ClientState::connecting;
    MemberView view_;
    std::optional<MemberId> member_;
    std::uint64_t connections_ = 0;

    // The I/O thread's own.
    bool registered_ = false;
    bool finishing_ = false;
    std::string session_;
    std::uint64_t seq_ = 0;
    std::uint64_t hello_seq_ = 0;
    int attempt_ = 0;
    std::optional<std::chrono::steady_clock::time_point> down_since_;
    std::optional<Transition> transition_;
    std::optional<MemberView> proposed_;
    detail::PendingRequests pending_;
};

Client::Client(ClientOptions options, ClientCallbacks callbacks)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(callbacks))) {}
Client::~Client() = default;
void Client::start() { impl_->start(); }
void Client::stop(std::string_view reason) { impl_->stop(reason); }
std::optional<MemberView> Client::wait_active(std::chrono::milliseconds timeout) {
    return impl_->wait_active_after(0, timeout);
}
std::optional<MemberView> Client::wait_epoch_after(Epoch epoch, std::chrono::milliseconds timeout) {
    return impl_->wait_active_after(epoch, timeout);
}

std::optional<Epoch> Client::wait_epoch_number_after(Epoch epoch, std::chrono::milliseconds timeout) {
    return impl_->wait_epoch_number_after(epoch, timeout);
}
std::optional<ClientState> Client::wait_exit(std::chrono::milliseconds timeout) { return impl_->wait_exit(timeout); }
void Client::safe_point() { impl_->safe_point(); }
void Client::drained() { impl_->drained(); }
void Client::notice(std::string source, std::string deadline_utc, std::optional<TimeMs> deadline_in_ms) {
    impl_->notice(std::move(source), std::move(deadline_utc), deadline_in_ms);
}
void Client::put(const std::string& key, const std::string& val_b64, KvScope scope) { impl_->put(key, val_b64, scope); }
std::vector<KvEntry> Client::fence(const std::string& fence_id, bool collect, std::chrono::milliseconds timeout) {
    return impl_->fence(fence_id, collect, timeout);
}
std::string Client::get(const std::string& key, MemberId member, std::chrono::milliseconds timeout, KvScope scope) {
    return impl_->get(key, member, timeout, scope);
}
ClientState Client::state() const { return impl_->state(); }
MemberView Client::view() const { return impl_->view(); }
std::optional<MemberId> Client::member_id() const { return impl_->member_id(); }
std::uint64_t Client::connections() const { return impl_->connections(); }

}  // namespace gpuops::rescale
