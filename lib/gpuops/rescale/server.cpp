// The coordinator's event loop: accepts peers, feeds their lines to the core, runs the core's actions in order
// (persist before anything later, with group commit), and wakes the core at its next deadline.
#include "gpuops/rescale/server.hpp"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <ctime>
#include <map>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <asio.hpp>
#include <fmt/format.h>

#include "gpuops/core/error.hpp"
#include "gpuops/core/output.hpp"
#include "gpuops/rescale/crash_hook.hpp"
#include "gpuops/rescale/server_connection.hpp"
#include "gpuops/rescale/sqlite_store.hpp"

namespace gpuops::rescale {

namespace {
/// CPU time of the calling thread: the coordinator's own work, not the time other processes on the same cores
/// (workers, on a test machine) kept it waiting.
std::uint64_t thread_cpu_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000U + static_cast<std::uint64_t>(ts.tv_nsec);
}
}  // namespace
namespace {

using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

/// The core's clock: steady milliseconds. Nothing persisted holds a time, so a restart may start anywhere.
TimeMs now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
}

Clock::time_point at_ms(TimeMs ms) { return Clock::time_point(std::chrono::milliseconds(ms)); }

/// A failed accept (out of descriptors, say) is retried after this pause rather than in a busy loop.
constexpr std::chrono::milliseconds accept_retry{100};

tcp::endpoint resolve_listen(asio::io_context& io, const HostPort& listen) {
    std::error_code error;
    tcp::resolver resolver(io);
    const auto results = resolver.resolve(listen.host, std::to_string(listen.port),
                                          tcp::resolver::passive | tcp::resolver::numeric_service, error);
    if (error || results.empty()) {
        throw UnavailableError(fmt::format("cannot listen on {}: {}", quote(to_string(listen)),
                                           error ? error.message() : "no such address"));
    }
    return results.begin()->endpoint();
}

}  // namespace

struct Server::Impl final : detail::ConnectionEvents {
    Impl(ServerOptions options, CoordinatorConfig config, RecordStore& store);

    void listen();
    void accept();
    void adopt(tcp::socket socket);
    [[nodiscard]] std::shared_ptr<detail::Connection> find(ConnId id) const;

    void on_line(ConnId id, std::string_view line) override;
    void on_lost(ConnId id, std::string_view why) override;
    void on_released(ConnId id) override;
    void on_flushed() override;

    void execute(const Actions& actions);
    void sync();
    void account(std::uint64_t cpu_started_ns);
    std::atomic<std::uint64_t> events{0};
    std::atomic<std::uint64_t> busy_ns{0};
    std::atomic<std::uint64_t> persist_ns{0};
    std::atomic<std::uint64_t> persist_wait_ns{0};
    std::atomic<std::uint64_t> persists{0};
    std::atomic<std::uint64_t> writes{0};
    void run_action(const SendAction& action);
    void run_action(const CloseAction& action);
    void arm_timer();
    void on_timer();
    void serve_closed_job(std::chrono::milliseconds window);
    void begin_close();
    void finish_if_flushed();
    void stop_now();
    void note(std::string_view message) const;

    asio::io_context io;
    tcp::acceptor acceptor{io};
    asio::steady_timer tick_timer{io};
    asio::steady_timer accept_timer{io};
    asio::steady_timer close_timer{io};
    std::optional<asio::signal_set> signals;
    ServerOptions options;
    RecordStore& store;
    CrashHook crash_hook;
    std::optional<Coordinator> core;
    std::map<ConnId, std::shared_ptr<detail::Connection>> connections;
    ConnId next_conn = 1;  ///< never reused: a late action for a closed connection must not reach a new peer
    HostPort bound;        ///< the listening address, with the real port
    // Group commit: records the core persisted wait here for one store write, and every send or close after the
    // first of them waits for that write. Events already queued run first and join the same write.
    std::vector<Record> unsynced;
    std::vector<std::variant<SendAction, CloseAction>> held;
    bool sync_posted = false;
    std::shared_ptr<const Message> encoded_for;  ///< the message `encoded` holds
    std::optional<EncodedMessage> encoded;
    std::optional<TimeMs> armed_for;
    TimeMs last_tick = 0;
    bool closing = false;    ///< the job is closed: no new peers; stop once the replies are out
    bool lingering = false;  ///< the job was closed before this start: serve resuming members until the timer
    bool stopped = false;
};

Server::Impl::Impl(ServerOptions options_in, CoordinatorConfig config, RecordStore& store_in)
    : options(std::move(options_in)), store(store_in), crash_hook(crash_point_from_env()) {
    listen();
    const std::chrono::milliseconds resume_window{std::max(config.reconnect_grace_ms, config.lease_ms)};
    auto started = Coordinator::start(std::move(config), store.load(), now_ms());
    core.emplace(std::move(started.coordinator));
    if (core->closed()) serve_closed_job(resume_window);
    execute(started.actions);
    sync();  // START is durable before the port is announced
    if (options.handle_signals) {
        signals.emplace(io, SIGINT, SIGTERM);
        signals->async_wait([this](const std::error_code& error, int) {
            if (!error) stop_now();
        });
    }
    accept();
}

void Server::Impl::listen() {
    const tcp::endpoint endpoint = resolve_listen(io, options.listen);
    std::error_code error;
    acceptor.open(endpoint.protocol(), error);
    // A restarted coordinator must get its port back while the old connections sit in TIME_WAIT.
    if (!error) acceptor.set_option(tcp::acceptor::reuse_address(true), error);
    if (!error) acceptor.bind(endpoint, error);
    if (!error) acceptor.listen(asio::socket_base::max_listen_connections, error);
    if (!error) acceptor.non_blocking(true, error);  // accept() in the drain loop must not block
    if (error) {
        throw UnavailableError(
            fmt::format("cannot listen on {}: {}", quote(to_string(options.listen)), error.message()));
    }
    const tcp::endpoint local = acceptor.local_endpoint();
    bound = HostPort{local.address().to_string(), local.port()};
}

void Server::Impl::accept() {
    acceptor.async_accept([this](const std::error_code& error, tcp::socket socket) {
        if (error == asio::error::operation_aborted || closing || stopped) return;
        if (!error) {
            adopt(std::move(socket));
            // Drain the backlog: a thousand workers connecting at once must not be taken one per loop turn.
            std::error_code more;
            while (!closing && !stopped) {
                tcp::socket next = acceptor.accept(more);
                if (more) break;
                adopt(std::move(next));
            }
            accept();
            return;
        }
        note(fmt::format("accept failed: {}; retrying", error.message()));
        accept_timer.expires_after(accept_retry);
        accept_timer.async_wait([this](const std::error_code& timer_error) {
            if (!timer_error) accept();
        });
    });
}

void Server::Impl::adopt(tcp::socket socket) {
    std::error_code ignored;
    // Replies are single lines that a peer waits for: Nagle's delay would add up to 40 ms per round trip.
    socket.set_option(tcp::no_delay(true), ignored);
    // Only a backstop: leases detect dead peers long before keepalive would.
    socket.set_option(asio::socket_base::keep_alive(true), ignored);
    const ConnId id = next_conn++;
    auto connection = std::make_shared<detail::Connection>(
        std::move(socket), id,
        detail::ConnectionLimits{options.max_line_bytes, options.max_queue_bytes, options.close_grace}, *this);
    connections.emplace(id, connection);
    connection->start();
}

std::shared_ptr<detail::Connection> Server::Impl::find(ConnId id) const {
    const auto it = connections.find(id);
    return it == connections.end() ? nullptr : it->second;
}

// ---- events from connections ----------------------------------------------------------------------------------

void Server::Impl::on_line(ConnId id, std::string_view line) {
    if (stopped) return;
    const std::uint64_t started = thread_cpu_ns();
    execute(core->on_line(now_ms(), id, line, options.max_line_bytes));
    account(started);
}

void Server::Impl::account(std::uint64_t cpu_started_ns) {
    busy_ns += thread_cpu_ns() - cpu_started_ns;
    ++events;
}

void Server::Impl::on_lost(ConnId id, std::string_view why) {
    note(fmt::format("connection {} lost: {}", id, why));
    // Posted: a connection can be lost in the middle of running an action list, and the core must finish one
    // event before it hears the next.
    asio::post(io, [this, id] {
        if (stopped) return;
        const std::uint64_t started = thread_cpu_ns();
        execute(core->on_closed(now_ms(), id));
        account(started);
    });
}

void Server::Impl::on_released(ConnId id) {
    connections.erase(id);
    finish_if_flushed();
}

void Server::Impl::on_flushed() { finish_if_flushed(); }

// ---- the action executor --------------------------------------------------------------------------------------

void Server::Impl::execute(const Actions& actions) {
    for (const Action& action : actions) {
        std::visit(
            [this](const auto& a) {
                using A = std::decay_t<decltype(a)>;
                if constexpr (std::is_same_v<A, PersistAction>) {
                    unsynced.push_back(a.record);
                } else if (unsynced.empty() && held.empty()) {
                    run_action(a);  // nothing before it waits for the disk
                } else {
                    held.emplace_back(a);
                }
            },
            action);
    }
    if (!unsynced.empty() && !sync_posted) {
        sync_posted = true;
        // Two hops: the first lets the reactor poll once more, so lines that arrived meanwhile (while the last
        // write waited for the disk, say) are handled before the write and join it.
        asio::post(io, [this] {
            asio::post(io, [this] {
                sync_posted = false;
                if (stopped) return;
                const std::uint64_t started = thread_cpu_ns();
                sync();
                busy_ns += thread_cpu_ns() - started;
            });
        });
    }
    arm_timer();
    if (core->closed() && !lingering) begin_close();
}

void Server::Impl::sync() {
    if (!unsynced.empty()) {
        const auto started = std::chrono::steady_clock::now();
        const std::uint64_t cpu_started = thread_cpu_ns();
        if (crash_hook.armed()) {
            // A test kills the process right after one record: nothing after it may be durable yet.
            for (const Record& record : unsynced) {
                store.append(record);
                crash_hook.after_append(record);
            }
        } else {
            store.append_batch(unsynced);  // durable when it returns; a failure propagates before anything is sent
        }
        const auto wall = static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count());
        const std::uint64_t cpu = thread_cpu_ns() - cpu_started;
        persist_ns += wall;
        persist_wait_ns += wall > cpu ? wall - cpu : 0;
        persists += unsynced.size();
        ++writes;
        unsynced.clear();
    }
    for (const auto& action : std::exchange(held, {}))
        std::visit([this](const auto& a) { run_action(a); }, action);
    finish_if_flushed();
}

void Server::Impl::run_action(const SendAction& action) {
    const auto connection = find(action.conn);
    if (!connection) return;
    // The core shares one message among its recipients (a PREPARE to every joiner): encode it once.
    if (encoded_for != action.message) {
        encoded.emplace(*action.message);
        encoded_for = action.message;
    }
    connection->send(encoded->line(connection->next_seq()));
}

void Server::Impl::run_action(const CloseAction& action) {
    if (const auto connection = find(action.conn)) connection->close_after_flush();
}

// ---- time -----------------------------------------------------------------------------------------------------

void Server::Impl::arm_timer() {
    const std::optional<TimeMs> next = core->next_deadline();
    if (next == armed_for || stopped) return;
    armed_for = next;
    if (!next) {
        tick_timer.cancel();
        return;
    }
    // Never at or before the last tick: a deadline the core failed to clear would otherwise spin the loop.
    tick_timer.expires_at(at_ms(std::max(*next, last_tick + 1)));
    tick_timer.async_wait([this](const std::error_code& error) {
        if (!error) on_timer();
    });
}

void Server::Impl::on_timer() {
    if (stopped) return;
    armed_for.reset();
    last_tick = now_ms();
    const std::uint64_t started = thread_cpu_ns();
    execute(core->on_tick(last_tick));
    account(started);
}

// ---- stopping -------------------------------------------------------------------------------------------------

/// A job closed before this start, maybe by a close whose RELEASEs a crash swallowed: its members are still
/// reconnecting. Serve for the window a restart gives members to resume, so that they hear ERROR{CLOSED} and stop
/// instead of retrying forever; then close as usual.
void Server::Impl::serve_closed_job(std::chrono::milliseconds window) {
    lingering = true;
    close_timer.expires_after(window);
    close_timer.async_wait([this](const std::error_code& error) {
        if (error) return;
        lingering = false;
        begin_close();
    });
}

void Server::Impl::begin_close() {
    if (closing) return;
    closing = true;
    std::error_code ignored;
    acceptor.close(ignored);
    close_timer.expires_after(options.close_grace);
    close_timer.async_wait([this](const std::error_code& error) {
        if (!error) stop_now();
    });
    // Deferred: this runs inside an action list whose replies are queued but not yet written.
    asio::post(io, [this] { finish_if_flushed(); });
}

void Server::Impl::finish_if_flushed() {
    if (!closing || stopped || !unsynced.empty() || !held.empty()) return;
    const bool flushed =
        std::all_of(connections.begin(), connections.end(), [](const auto& entry) { return entry.second->flushed(); });
    if (flushed) stop_now();
}

void Server::Impl::stop_now() {
    if (stopped) return;
    stopped = true;
    std::error_code ignored;
    acceptor.close(ignored);
    tick_timer.cancel();
    accept_timer.cancel();
    close_timer.cancel();
    if (signals) signals->cancel(ignored);
    // Copied first: closing a connection removes it from the map.
    const auto open = connections;
    for (const auto& [id, connection] : open)
        connection->close_now();
    io.stop();
}

void Server::Impl::note(std::string_view message) const {
    if (options.note) options.note(message);
}

// ---- the public face ------------------------------------------------------------------------------------------

Server::Server(ServerOptions options, CoordinatorConfig config, RecordStore& store)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(config), store)) {}

Server::~Server() = default;

HostPort Server::address() const { return impl_->bound; }

std::uint16_t Server::port() const { return impl_->bound.port; }

ServerStats Server::stats() const {
    return {impl_->events.load(),          impl_->busy_ns.load(),  impl_->persist_ns.load(),
            impl_->persist_wait_ns.load(), impl_->persists.load(), impl_->writes.load()};
}

void Server::run() {
    if (impl_->stopped) return;
    impl_->io.run();
}

void Server::stop() {
    asio::post(impl_->io, [impl = impl_.get()] { impl->stop_now(); });
}

void serve_job(const ServerOptions& options, const CoordinatorConfig& config, const std::string& db,
               const std::string& port_file, const std::function<void(const HostPort&)>& listening) {
    SqliteRecordStore store(db, config.job);
    Server server(options, config, store);
    if (!port_file.empty()) {
        Output out(port_file);
        out.stream() << server.port() << '\n';
        out.commit();
    }
    if (listening) listening(server.address());
    server.run();
}

}  // namespace gpuops::rescale
