// The coordinator's TCP server, run in-process on an ephemeral port and driven over real sockets: protocol errors
// leave other peers served, oversize lines and slow readers are cut off, admin needs its token, and every
// decision is durable before any peer can see it.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "gpuops/rescale/admin_client.hpp"
#include "gpuops/rescale/server.hpp"

#include "support/line_client.hpp"

using namespace gpuops::rescale;
using gpuops::test::LineClient;
using namespace std::chrono_literals;

namespace {

const std::string job_token = "job-token";
const std::string admin_token = "admin-token";

CoordinatorConfig server_config() {
    CoordinatorConfig c;
    c.job = "job";
    c.token = job_token;
    c.admin_token = admin_token;
    c.self_check = true;
    c.auto_expand = false;  // joiners wait for EXPAND, so no test sees a transition it did not ask for
    c.lease_ms = 60000;     // a loaded test machine must not expire anyone
    c.reconnect_grace_ms = 60000;
    return c;
}

/// A store the test thread can read while the server thread appends. Decisions can be made slow to write, so
/// that a server which sent before persisting would be caught with the message out and the record missing.
class SharedStore final : public RecordStore {
public:
    std::chrono::milliseconds decision_delay{0};

    void append(const Record& record) override {
        if (std::holds_alternative<CommitRecord>(record) || std::holds_alternative<ProposeRecord>(record)) {
            std::this_thread::sleep_for(decision_delay);
        }
        const std::lock_guard lock(mutex_);
        records_.push_back(record);
    }
    [[nodiscard]] std::vector<Record> load() const override {
        const std::lock_guard lock(mutex_);
        return records_;
    }
    template <typename R>
    [[nodiscard]] bool has(Epoch epoch) const {
        const std::lock_guard lock(mutex_);
        return std::any_of(records_.begin(), records_.end(), [&](const Record& r) {
            const auto* rec = std::get_if<R>(&r);
            return rec != nullptr && rec->epoch == epoch;
        });
    }

private:
    mutable std::mutex mutex_;
    std::vector<Record> records_;
};

/// A server on 127.0.0.1:0, run on its own thread until stop() or until it stops by itself.
class RunningServer {
public:
    explicit RunningServer(RecordStore& store, ServerOptions options = {}, CoordinatorConfig config = server_config()) {
        options.listen = {"127.0.0.1", 0};
        server_ = std::make_unique<Server>(std::move(options), std::move(config), store);
        thread_ = std::thread([this] {
            try {
                server_->run();
            } catch (...) {
                error_ = std::current_exception();
            }
            done_ = true;
        });
    }
    RunningServer(const RunningServer&) = delete;
    RunningServer& operator=(const RunningServer&) = delete;
    ~RunningServer() {
        server_->stop();
        thread_.join();
    }
    [[nodiscard]] std::uint16_t port() const { return server_->port(); }
    [[nodiscard]] HostPort address() const { return {"127.0.0.1", port()}; }
    /// Whether run() returned by itself within `timeout`, without an exception.
    bool stopped_by_itself(std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!done_ && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(5ms);
        return done_ && !error_;
    }

private:
    std::unique_ptr<Server> server_;
    std::thread thread_;
    std::atomic<bool> done_{false};
    std::exception_ptr error_;
};

std::string line(std::uint64_t seq, Message m) { return encode(Envelope{seq, std::move(m)}); }

Hello hello(const std::string& worker, const std::string& incarnation = "inc-1") {
    return Hello{"job", job_token, worker, incarnation, "host-a", "YWRkcg==", {}, std::nullopt};
}

/// The next message on `client`, which must be an M.
template <typename M>
M next(LineClient& client) {
    const auto text = client.read_line();
    REQUIRE(text.has_value());
    INFO("received: " << *text);
    Decoded decoded = decode(*text);
    const auto* envelope = std::get_if<Envelope>(&decoded);
    REQUIRE(envelope != nullptr);
    const auto* message = std::get_if<M>(&envelope->body);
    REQUIRE(message != nullptr);
    return *message;
}

/// A worker that has said HELLO and got its WELCOME.
struct Worker {
    std::string name;
    LineClient conn;
    Welcome welcome;
    std::uint64_t seq = 1;

    Worker(std::uint16_t port, const std::string& worker_id, int receive_buffer = 0)
        : name(worker_id), conn(port, receive_buffer) {
        send(hello(worker_id));
        if (receive_buffer == 0) welcome = next<Welcome>(conn);
    }
    void send(Message m) { conn.send_line(line(seq++, std::move(m))); }
};

/// A peer that was connected before something went wrong elsewhere must still get its answers.
void check_still_served(Worker& w) {
    w.send(Heartbeat{0});
    (void)next<HbAck>(w.conn);
}

AdminReply admin(const RunningServer& server, AdminCommand command) {
    return request_admin(server.address(), command, 5s);
}

/// Admits the listed workers (nobody else) into the first view and runs the two phases; returns the epoch.
Epoch form_view(const RunningServer& server, const std::vector<Worker*>& workers) {
    ExpandCmd expand{admin_token, 0, {}};
    for (const Worker* w : workers)
        expand.worker_ids.push_back(w->name);
    REQUIRE(admin(server, expand).ok);
    Epoch epoch = 0;
    for (Worker* w : workers) {
        const auto prepare = next<Prepare>(w->conn);
        epoch = prepare.epoch;
        w->send(Ack{prepare.epoch, prepare.view_hash, true, ""});
    }
    for (Worker* w : workers)
        CHECK(next<Commit>(w->conn).epoch == epoch);
    return epoch;
}

ErrorCode error_code_of(LineClient& client) { return next<ErrorReply>(client).code; }

}  // namespace

TEST_CASE("server: HELLO over TCP gets WELCOME and a heartbeat gets HB_ACK") {
    SharedStore store;
    RunningServer server(store);
    REQUIRE(server.port() != 0);
    Worker w(server.port(), "w1");
    CHECK(w.welcome.member_id == 1);
    CHECK(w.welcome.state == JoinState::joining);
    check_still_served(w);
    // The WELCOME came after the member id it hands out was stored.
    const auto records = store.load();
    REQUIRE_FALSE(records.empty());
    CHECK(std::holds_alternative<StartRecord>(records.front()));
    const auto* registered = std::get_if<RegisterRecord>(&records.back());
    REQUIRE(registered != nullptr);
    CHECK(registered->member_id == w.welcome.member_id);
}

TEST_CASE("server: a malformed line gets ERROR PROTOCOL and the connection stays usable") {
    SharedStore store;
    RunningServer server(store);
    Worker bystander(server.port(), "w2");
    Worker w(server.port(), "w1");
    w.conn.send_line("{not json");
    CHECK(error_code_of(w.conn) == ErrorCode::protocol);
    check_still_served(w);
    check_still_served(bystander);
}

TEST_CASE("server: an oversize line gets ERROR TOO_LARGE and the connection is closed") {
    SharedStore store;
    ServerOptions options;
    options.max_line_bytes = 1024;
    RunningServer server(store, options);
    Worker bystander(server.port(), "w2");
    LineClient c(server.port());
    SECTION("a line that never ends") { REQUIRE(c.try_send(std::string(64 * 1024, 'x'))); }
    SECTION("a complete line") { REQUIRE(c.try_send(std::string(2000, 'x') + "\n")); }
    CHECK(error_code_of(c) == ErrorCode::too_large);
    CHECK(c.closed_by_peer());
    check_still_served(bystander);
}

TEST_CASE("server: a wrong job token gets ERROR BAD_TOKEN and the connection is closed") {
    SharedStore store;
    RunningServer server(store);
    Worker bystander(server.port(), "w2");
    LineClient c(server.port());
    Hello h = hello("w1");
    h.token = "not-the-token";
    c.send_line(line(1, h));
    CHECK(error_code_of(c) == ErrorCode::bad_token);
    CHECK(c.closed_by_peer());
    check_still_served(bystander);
}

TEST_CASE("server: an unknown message type gets ERROR UNKNOWN_TYPE and the connection stays usable") {
    SharedStore store;
    RunningServer server(store);
    Worker bystander(server.port(), "w2");
    Worker w(server.port(), "w1");
    w.conn.send_line(R"({"v":1,"t":"FROBNICATE","seq":7,"epoch":null})");
    CHECK(error_code_of(w.conn) == ErrorCode::unknown_type);
    check_still_served(w);
    check_still_served(bystander);
}

TEST_CASE("server: a request for an epoch before the committed one gets ERROR STALE_EPOCH") {
    SharedStore store;
    RunningServer server(store);
    Worker bystander(server.port(), "w2");
    Worker w(server.port(), "w1");
    const Epoch epoch = form_view(server, {&w});
    REQUIRE(epoch >= 1);
    w.send(Put{epoch - 1, "key", "dmFs", KvScope::epoch});
    CHECK(error_code_of(w.conn) == ErrorCode::stale_epoch);
    check_still_served(w);
    check_still_served(bystander);
}

TEST_CASE("server: a resume from an old incarnation gets EVICTED and the member keeps its connection") {
    SharedStore store;
    RunningServer server(store);
    Worker w(server.port(), "w1");
    LineClient zombie(server.port());
    Hello h = hello("w1", "inc-0");
    h.resume = ResumeInfo{w.welcome.member_id, w.welcome.session, 0};
    zombie.send_line(line(1, h));
    (void)next<Evicted>(zombie);
    CHECK(zombie.closed_by_peer());
    check_still_served(w);
}

TEST_CASE("server: a peer that never reads is dropped and the others are still served") {
    SharedStore store;
    ServerOptions options;
    options.max_queue_bytes = 64 * 1024;
    RunningServer server(store, options);
    Worker bystander(server.port(), "w2");
    Worker slow(server.port(), "w1", 4096);  // never reads, not even its WELCOME
    std::string burst;
    for (std::uint64_t i = 0; i < 500; ++i)
        burst += line(1000 + i, Heartbeat{0}) + "\n";
    // Each heartbeat is answered; the answers pile up until the queue limit cuts the peer off.
    bool dropped = false;
    const auto give_up = std::chrono::steady_clock::now() + 20s;
    while (!dropped && std::chrono::steady_clock::now() < give_up) {
        dropped = !slow.conn.try_send(burst);
        check_still_served(bystander);
    }
    CHECK(dropped);
    const AdminReply status = admin(server, StatusCmd{admin_token});
    REQUIRE(status.ok);
    const auto& members = status.status.at("members");
    REQUIRE(members.size() == 2);
    for (const auto& m : members)
        CHECK(m.at("connected").get<bool>() == (m.at("worker_id") == "w2"));
}

TEST_CASE("server: admin STATUS needs the admin token") {
    SharedStore store;
    RunningServer server(store);
    Worker bystander(server.port(), "w1");
    const AdminReply ok = admin(server, StatusCmd{admin_token});
    REQUIRE(ok.ok);
    CHECK(ok.status.at("epoch") == 0);
    CHECK(ok.status.at("size") == 0);
    CHECK(ok.status.at("members").size() == 1);
    for (const std::string& token : {std::string("wrong"), job_token, std::string()}) {
        const AdminReply refused = admin(server, StatusCmd{token});
        CHECK_FALSE(refused.ok);
        CHECK(refused.code == ErrorCode::bad_token);
    }
    check_still_served(bystander);
}

TEST_CASE("server: every PROPOSE and COMMIT is durable before a peer sees its PREPARE or COMMIT") {
    SharedStore store;
    store.decision_delay = 50ms;  // a slow fsync: an early send would arrive before the record exists
    RunningServer server(store);
    Worker w1(server.port(), "w1");
    Worker w2(server.port(), "w2");

    REQUIRE(admin(server, ExpandCmd{admin_token, 0, {}}).ok);
    Epoch epoch = 0;
    for (Worker* w : {&w1, &w2}) {
        const auto prepare = next<Prepare>(w->conn);
        CHECK(store.has<ProposeRecord>(prepare.epoch));
        epoch = prepare.epoch;
        w->send(Ack{prepare.epoch, prepare.view_hash, true, ""});
    }
    for (Worker* w : {&w1, &w2}) {
        CHECK(next<Commit>(w->conn).epoch == epoch);
        CHECK(store.has<CommitRecord>(epoch));
    }

    // A planned shrink: the highest rank (w2) drains and is released after the survivor commits.
    REQUIRE(admin(server, ShrinkCmd{admin_token, {}, 1, std::nullopt}).ok);
    const auto t1 = next<Transition>(w1.conn);
    const auto t2 = next<Transition>(w2.conn);
    CHECK(t2.victims == std::vector<MemberId>{w2.welcome.member_id});
    w1.send(SafePoint{epoch, t1.transition_id});
    w2.send(Drained{epoch, t2.transition_id});
    const auto prepare = next<Prepare>(w1.conn);
    CHECK(store.has<ProposeRecord>(prepare.epoch));
    w1.send(Ack{prepare.epoch, prepare.view_hash, true, ""});
    CHECK(next<Commit>(w1.conn).epoch == prepare.epoch);
    CHECK(store.has<CommitRecord>(prepare.epoch));
    CHECK(next<Release>(w2.conn).epoch == prepare.epoch);
}

TEST_CASE("server: CLOSE releases the members and stops the server once the reply is out") {
    SharedStore store;
    RunningServer server(store);
    Worker w(server.port(), "w1");
    const AdminReply reply = admin(server, CloseCmd{admin_token});
    REQUIRE(reply.ok);
    CHECK(reply.status.at("closed") == true);
    (void)next<Release>(w.conn);
    CHECK(w.conn.closed_by_peer());
    CHECK(server.stopped_by_itself(5s));
}

TEST_CASE("server: restarted over a closed job, it tells resuming workers CLOSED, then stops by itself") {
    SharedStore store;
    {
        RunningServer server(store);
        Worker w(server.port(), "w1");
        REQUIRE(admin(server, CloseCmd{admin_token}).ok);
        CHECK(server.stopped_by_itself(5s));
    }
    // A crash right after the CLOSE record would have swallowed the RELEASEs: the members are still reconnecting.
    CoordinatorConfig config = server_config();
    config.lease_ms = 300;
    config.reconnect_grace_ms = 200;
    const auto started = std::chrono::steady_clock::now();
    RunningServer restarted(store, {}, config);
    LineClient late(restarted.port());
    late.send_line(line(1, hello("w1", "inc-2")));
    CHECK(error_code_of(late) == ErrorCode::closed);
    const AdminReply status = admin(restarted, StatusCmd{admin_token});
    REQUIRE(status.ok);
    CHECK(status.status.at("closed") == true);
    // Served for max(lease, grace), the window a restart gives members to resume; then it stops.
    CHECK(restarted.stopped_by_itself(5s));
    CHECK(std::chrono::steady_clock::now() - started >= 300ms);
}

TEST_CASE("admin client: a port nobody listens on is unavailable (exit 69)") {
    SharedStore store;
    std::uint16_t port = 0;
    {
        RunningServer server(store);  // a port that was just free and is free again
        port = server.port();
    }
    try {
        (void)request_admin({"127.0.0.1", port}, StatusCmd{admin_token}, 2s);
        FAIL("no error");
    } catch (const gpuops::Error& e) {
        CHECK(e.code() == gpuops::ExitCode::unavailable);
    }
}
