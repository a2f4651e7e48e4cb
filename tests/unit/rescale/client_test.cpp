// gpuops::rescale::Client against a scripted coordinator on 127.0.0.1: the worker state machine of §6.4 (HELLO,
// safe point, drain, PREPARE checks, ACK/NACK, COMMIT, ABORT, RELEASE, EVICTED), fences and gets, and reconnects
// that resume with the same member id and session.
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <asio.hpp>
#include <fmt/format.h>

#include "gpuops/core/error.hpp"
#include "gpuops/rescale/c_api.h"
#include "gpuops/rescale/client.hpp"
#include "gpuops/rescale/codec.hpp"
#include "gpuops/rescale/view.hpp"

using namespace gpuops;
using namespace gpuops::rescale;
using namespace std::chrono_literals;

namespace {

/// A coordinator played by the test: accepts connections on an ephemeral port, keeps the lines each sent, and
/// writes whatever the test scripts. Blocking sockets on a thread of its own keep it simple.
class ScriptedCoordinator {
public:
    ScriptedCoordinator() : acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
        thread_ = std::thread([this] { accept_loop(); });
    }
    ~ScriptedCoordinator() {
        {
            const std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        // A blocking accept() is not woken by closing the acceptor from another thread: connect to it instead.
        asio::error_code ignored;
        asio::ip::tcp::socket wake(io_);
        wake.connect(acceptor_.local_endpoint(), ignored);
        thread_.join();
        wake.close(ignored);
        acceptor_.close(ignored);
        drop();
        for (auto& t : readers_)
            t.join();
    }

    [[nodiscard]] std::string address() const { return fmt::format("127.0.0.1:{}", acceptor_.local_endpoint().port()); }

    /// The next message a worker sent (any connection), waiting up to `timeout`.
    Envelope next(std::chrono::milliseconds timeout = 3s) {
        std::unique_lock lock(mutex_);
        if (!cv_.wait_for(lock, timeout, [&] { return !received_.empty(); }))
            FAIL("the worker sent nothing within the timeout");
        Envelope e = std::move(received_.front());
        received_.pop_front();
        return e;
    }
    /// The next message, which must be a T, skipping heartbeats.
    template <typename T>
    Envelope expect_envelope(std::chrono::milliseconds timeout = 3s) {
        for (;;) {
            Envelope e = next(timeout);
            if (std::holds_alternative<Heartbeat>(e.body)) continue;
            INFO("got " << type_of(e.body) << " instead of " << T::type);
            REQUIRE(std::holds_alternative<T>(e.body));
            return e;
        }
    }
    template <typename T>
    T expect(std::chrono::milliseconds timeout = 3s) {
        return std::get<T>(expect_envelope<T>(timeout).body);
    }

    void send(const Message& m) {
        const std::lock_guard lock(mutex_);
        REQUIRE(socket_ != nullptr);
        const std::string line = encode(Envelope{++seq_, m}) + '\n';
        asio::error_code ec;
        asio::write(*socket_, asio::buffer(line), ec);
    }
    /// Closes the current connection, as a crashed coordinator would.
    void drop() {
        const std::lock_guard lock(mutex_);
        if (socket_) {
            asio::error_code ignored;
            socket_->shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
            socket_->close(ignored);
        }
    }
    [[nodiscard]] int accepted() const {
        const std::lock_guard lock(mutex_);
        return accepted_;
    }

private:
    void accept_loop() {
        for (;;) {
            auto socket = std::make_shared<asio::ip::tcp::socket>(io_);
            asio::error_code ec;
            acceptor_.accept(*socket, ec);
            if (ec) return;
            {
                const std::lock_guard lock(mutex_);
                if (stopping_) return;
                socket_ = socket;
                ++accepted_;
            }
            readers_.emplace_back([this, socket] { read_loop(socket); });
        }
    }
    void read_loop(const std::shared_ptr<asio::ip::tcp::socket>& socket) {
        asio::streambuf buffer;
        for (;;) {
            asio::error_code ec;
            const std::size_t n = asio::read_until(*socket, buffer, '\n', ec);
            if (ec) return;
            std::string line(asio::buffers_begin(buffer.data()),
                             asio::buffers_begin(buffer.data()) + static_cast<std::ptrdiff_t>(n - 1));
            buffer.consume(n);
            const Decoded d = decode(line);
            REQUIRE(std::holds_alternative<Envelope>(d));
            {
                const std::lock_guard lock(mutex_);
                received_.push_back(std::get<Envelope>(d));
            }
            cv_.notify_all();
        }
    }

    asio::io_context io_;
    asio::ip::tcp::acceptor acceptor_;
    std::thread thread_;
    std::vector<std::thread> readers_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<Envelope> received_;
    std::shared_ptr<asio::ip::tcp::socket> socket_;
    std::uint64_t seq_ = 0;
    int accepted_ = 0;
    bool stopping_ = false;
};

ClientOptions options_for(const ScriptedCoordinator& coord, std::string worker = "w0") {
    ClientOptions o;
    o.coord = coord.address();
    o.job = "job";
    o.token = "secret";
    o.worker_id = std::move(worker);
    o.addr_b64 = base64_encode("ucx-address");
    o.heartbeat = 50ms;
    o.seed = 7;
    return o;
}

Prepare prepare_for(Epoch epoch, Epoch from, std::vector<MemberId> members, std::vector<Peer> added,
                    std::vector<MemberId> removed, bool full) {
    Prepare p;
    p.epoch = epoch;
    p.from_epoch = from;
    p.members = std::move(members);
    p.view_hash = view_hash(epoch, p.members);
    p.added = std::move(added);
    p.removed = std::move(removed);
    p.full_table = full;
    return p;
}

/// Brings a fresh client into epoch 1 as member 1 of {1, 2}.
void join_epoch_one(ScriptedCoordinator& coord, Client& client) {
    const Hello hello = coord.expect<Hello>();
    CHECK(hello.job == "job");
    CHECK(hello.token == "secret");
    CHECK_FALSE(hello.resume.has_value());
    coord.send(Welcome{1, "sess-1", 1, JoinState::joining, std::nullopt});
    coord.send(prepare_for(1, 0, {1, 2}, {{1, 0, "YQ=="}, {2, 1, "Yg=="}}, {}, true));
    const Ack ack = coord.expect<Ack>();
    CHECK(ack.ok);
    CHECK(ack.epoch == 1);
    coord.send(Commit{1, view_hash(1, std::vector<MemberId>{1, 2})});
    CHECK(coord.expect<Ready>().epoch == 1);
    const auto view = client.wait_active(2s);
    REQUIRE(view.has_value());
    CHECK(view->epoch == 1);
    CHECK(view->rank_of(1) == 0);
}

}  // namespace

TEST_CASE("client joins the first epoch and follows a shrink through safe point and commit", "[client]") {
    ScriptedCoordinator coord;
    std::vector<Epoch> commits;
    std::mutex m;
    ClientCallbacks cb;
    cb.on_commit = [&](const MemberView& v) {
        const std::lock_guard lock(m);
        commits.push_back(v.epoch);
    };
    Client client(options_for(coord), cb);
    client.start();
    join_epoch_one(coord, client);

    // Member 2 is the victim: member 1 only reaches its safe point.
    coord.send(Transition{7, 1, TransitionKind::shrink, {2}, {}, 5000});
    const SafePoint sp = coord.expect<SafePoint>();
    CHECK(sp.transition_id == 7);
    CHECK(sp.epoch == 1);
    coord.send(prepare_for(2, 1, {1}, {}, {2}, false));
    CHECK(coord.expect<Ack>().ok);
    CHECK(client.state() == ClientState::prepared);
    coord.send(Commit{2, view_hash(2, std::vector<MemberId>{1})});
    CHECK(coord.expect<Ready>().epoch == 2);
    const auto view = client.wait_epoch_after(1, 2s);
    REQUIRE(view.has_value());
    CHECK(view->members == std::vector<MemberId>{1});
    CHECK(view->addr_b64.size() == 1);  // member 2's address is gone
    CHECK(client.wait_epoch_number_after(1, 2s) == std::optional<Epoch>(2));
    CHECK_FALSE(client.wait_epoch_number_after(2, 50ms).has_value());  // no epoch 3 yet
    const std::lock_guard lock(m);
    CHECK(commits == std::vector<Epoch>{1, 2});
}

TEST_CASE("client refuses a proposal whose hash or ranks are wrong", "[client]") {
    ScriptedCoordinator coord;
    Client client(options_for(coord), {});
    client.start();
    join_epoch_one(coord, client);

    Prepare bad_hash = prepare_for(2, 1, {1, 2, 3}, {{3, 2, "Yw=="}}, {}, false);
    bad_hash.view_hash = "0000000000000000";
    coord.send(bad_hash);
    Ack ack = coord.expect<Ack>();
    CHECK_FALSE(ack.ok);
    CHECK(ack.err.find("hash") != std::string::npos);

    // Survivors swapped: the rank rule is broken even though the hash matches the (wrong) order.
    coord.send(prepare_for(3, 1, {2, 1}, {}, {}, false));
    ack = coord.expect<Ack>();
    CHECK_FALSE(ack.ok);
    CHECK(ack.err.find("rule") != std::string::npos);

    // A joiner without an address.
    coord.send(prepare_for(4, 1, {1, 2, 5}, {}, {}, false));
    ack = coord.expect<Ack>();
    CHECK_FALSE(ack.ok);
    CHECK(ack.err.find("address") != std::string::npos);
}

TEST_CASE("client rolls back on ABORT and stays in the committed view", "[client]") {
    ScriptedCoordinator coord;
    std::atomic<int> aborts{0};
    ClientCallbacks cb;
    cb.on_prepare = [](const MemberView&, const Prepare&) { return std::string(); };
    cb.on_abort = [&](const Abort&) { ++aborts; };
    Client client(options_for(coord), cb);
    client.start();
    join_epoch_one(coord, client);
    coord.send(prepare_for(2, 1, {1, 2, 3}, {{3, 2, "Yw=="}}, {}, false));
    CHECK(coord.expect<Ack>().ok);
    coord.send(Abort{2, 9, "a member died"});
    // A COMMIT of the aborted epoch afterwards is ignored: the client is back in epoch 1.
    coord.send(Commit{2, view_hash(2, std::vector<MemberId>{1, 2, 3})});
    coord.send(HbAck{1, std::nullopt});
    std::this_thread::sleep_for(100ms);
    CHECK(aborts == 1);
    CHECK(client.state() == ClientState::active);
    CHECK(client.view().epoch == 1);
}

TEST_CASE("a victim drains, and RELEASE ends its membership", "[client]") {
    ScriptedCoordinator coord;
    std::atomic<bool> was_victim{false};
    std::atomic<ClientState> final_state{ClientState::active};
    ClientCallbacks cb;
    Client* self = nullptr;
    cb.on_transition = [&](const Transition&, bool victim) {
        was_victim = victim;
        self->drained();  // the runtime migrated its work away
    };
    cb.on_exit = [&](ClientState s, const std::string&) { final_state = s; };
    Client client(options_for(coord), cb);
    self = &client;
    client.start();
    join_epoch_one(coord, client);
    coord.send(Transition{3, 1, TransitionKind::shrink, {1}, {}, 5000});
    CHECK(coord.expect<Drained>().transition_id == 3);
    CHECK(was_victim);
    coord.send(Release{2});
    CHECK(client.wait_exit(2s) == ClientState::released);
    CHECK(final_state == ClientState::released);
}

TEST_CASE("client reconnects after the coordinator drops it and resumes with its member id", "[client]") {
    ScriptedCoordinator coord;
    ClientOptions o = options_for(coord);
    o.backoff_min = 5ms;
    o.backoff_max = 40ms;
    Client client(o, {});
    client.start();
    join_epoch_one(coord, client);
    coord.drop();
    const Hello again = coord.expect<Hello>();
    REQUIRE(again.resume.has_value());
    CHECK(again.resume->member_id == 1);
    CHECK(again.resume->session == "sess-1");
    CHECK(again.resume->last_epoch == 1);
    CHECK(coord.accepted() == 2);
    // While it was away epoch 2 committed: WELCOME carries it and the client switches.
    ViewInfo info{2, view_hash(2, std::vector<MemberId>{1, 3}), {{1, 0, "YQ=="}, {3, 1, "Yw=="}}};
    coord.send(Welcome{1, "sess-1", 2, JoinState::active, info});
    const auto view = client.wait_epoch_after(1, 2s);
    REQUIRE(view.has_value());
    CHECK(view->members == std::vector<MemberId>{1, 3});
    CHECK(client.connections() == 2);
}

TEST_CASE("EVICTED and a closed job end the client, and fences fail instead of hanging", "[client]") {
    ScriptedCoordinator coord;
    Client client(options_for(coord), {});
    client.start();
    join_epoch_one(coord, client);
    std::thread waiter([&] { CHECK_THROWS_AS(client.fence("f1", true, 3s), UnavailableError); });
    const Fence f = coord.expect<Fence>();
    CHECK(f.fence_id == "f1");
    CHECK(f.epoch == 1);
    coord.send(Evicted{1, "lease expired"});
    waiter.join();
    CHECK(client.wait_exit(2s) == ClientState::evicted);
}

TEST_CASE("a fence or get while the coordinator is unreachable fails at once", "[client]") {
    auto coord = std::make_unique<ScriptedCoordinator>();
    ClientOptions o = options_for(*coord);
    o.backoff_min = 5ms;
    o.backoff_max = 40ms;
    Client client(o, {});
    client.start();
    join_epoch_one(*coord, client);
    coord.reset();  // the coordinator is gone and its port refuses: reconnects keep failing
    const auto deadline = std::chrono::steady_clock::now() + 3s;
    while (client.state() != ClientState::reconnecting && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(5ms);
    REQUIRE(client.state() == ClientState::reconnecting);
    // Not a TimeoutError after 10 s: the request could never have been sent.
    CHECK_THROWS_AS(client.fence("f-away", true, 10s), UnavailableError);
    CHECK_THROWS_AS(client.get("k", 1, 10s), UnavailableError);
}

TEST_CASE("fence collects the epoch's PUTs and get returns a member's value", "[client]") {
    ScriptedCoordinator coord;
    Client client(options_for(coord), {});
    client.start();
    join_epoch_one(coord, client);
    client.put("rkey", base64_encode("r1"));
    const Put put = coord.expect<Put>();
    CHECK(put.key == "rkey");
    CHECK(put.epoch == 1);
    std::vector<KvEntry> kv;
    std::thread waiter([&] { kv = client.fence("boot", true, 3s); });
    CHECK(coord.expect<Fence>().collect);
    coord.send(FenceDone{1, "boot", true, "", {{1, "rkey", put.val_b64}, {2, "rkey", base64_encode("r2")}}});
    waiter.join();
    REQUIRE(kv.size() == 2);
    CHECK(base64_decode(kv[1].val_b64) == "r2");

    std::string value;
    std::thread getter([&] { value = client.get("rkey", 2, 3s); });
    const Get g = coord.expect<Get>();
    CHECK(g.member_id == 2);
    coord.send(GetReply{1, "rkey", 2, true, base64_encode("r2"), ""});
    getter.join();
    CHECK(base64_decode(value) == "r2");

    // A stale GET answered with ERROR fails the call at once.
    std::thread failing([&] { CHECK_THROWS_AS(client.get("other", 2, 3s), UnavailableError); });
    const auto seq = coord.expect_envelope<Get>().seq;
    coord.send(ErrorReply{ErrorCode::stale_epoch, "epoch 1 is over", seq});
    failing.join();
}

TEST_CASE("base64 round-trips and rejects what is not base64", "[client]") {
    const std::vector<std::string> samples = {"", "a", "ab", "abc", "abcd", std::string("\x00\xff\x10 binary", 10)};
    for (const std::string& s : samples) {
        const auto back = base64_decode(base64_encode(s));
        REQUIRE(back.has_value());
        CHECK(*back == s);
    }
    CHECK(base64_encode("foobar") == "Zm9vYmFy");
    CHECK(base64_encode("fo") == "Zm8=");
    CHECK_FALSE(base64_decode("Zm9").has_value());
    CHECK_FALSE(base64_decode("Zm=v").has_value());
    CHECK_FALSE(base64_decode("Z!9v").has_value());
}

TEST_CASE("the C API joins, reports rank and peers, and runs put, barrier and get", "[client]") {
    ScriptedCoordinator coord;
    struct Seen {
        std::atomic<int> commits{0};
        std::atomic<int> last_size{0};
    } seen;
    gpuops_rescale_callbacks_t callbacks{};
    callbacks.user = &seen;
    callbacks.on_commit = [](void* user, uint64_t, int, int size) {
        auto* s = static_cast<Seen*>(user);
        ++s->commits;
        s->last_size = size;
    };
    gpuops_rescale_t* handle = nullptr;
    int rc = 1;
    const std::string address = coord.address();
    std::thread init([&] {
        rc = gpuops_rescale_init(address.c_str(), "job", "secret", "c0", "addr-c0", 7, &callbacks, 3000, &handle);
    });
    CHECK(base64_decode(coord.expect<Hello>().addr_b64) == "addr-c0");
    coord.send(Welcome{4, "s4", 1, JoinState::joining, std::nullopt});
    coord.send(
        prepare_for(1, 0, {9, 4}, {{9, 0, base64_encode("addr-x")}, {4, 1, base64_encode("addr-c0")}}, {}, true));
    CHECK(coord.expect<Ack>().ok);
    coord.send(Commit{1, view_hash(1, std::vector<MemberId>{9, 4})});
    CHECK(coord.expect<Ready>().epoch == 1);
    init.join();
    REQUIRE(rc == GPUOPS_RESCALE_OK);
    REQUIRE(handle != nullptr);
    CHECK(gpuops_rescale_rank(handle) == 1);
    CHECK(gpuops_rescale_size(handle) == 2);
    CHECK(gpuops_rescale_epoch(handle) == 1);
    CHECK(seen.commits == 1);
    CHECK(seen.last_size == 2);

    std::array<char, 16> buf{};
    size_t len = 0;
    CHECK(gpuops_rescale_peer_addr(handle, 0, buf.data(), buf.size(), &len) == GPUOPS_RESCALE_OK);
    CHECK(std::string(buf.data(), len) == "addr-x");
    CHECK(gpuops_rescale_peer_addr(handle, 2, buf.data(), buf.size(), &len) == GPUOPS_RESCALE_EINVAL);
    CHECK(std::string(gpuops_rescale_last_error()).find("rank 2") != std::string::npos);

    CHECK(gpuops_rescale_put(handle, "UCX-1", "bytes", 5) == GPUOPS_RESCALE_OK);
    CHECK(base64_decode(coord.expect<Put>().val_b64) == "bytes");

    std::thread barrier([&] { rc = gpuops_rescale_barrier(handle, 3000); });
    const Fence f = coord.expect<Fence>();
    CHECK(f.fence_id == "barrier-1-1");
    coord.send(FenceDone{1, f.fence_id, true, "", {}});
    barrier.join();
    CHECK(rc == GPUOPS_RESCALE_OK);

    std::thread get([&] { rc = gpuops_rescale_get(handle, "UCX-0", 0, buf.data(), buf.size(), &len, 3000); });
    const Get g = coord.expect<Get>();
    CHECK(g.member_id == 9);  // rank 0 of the view
    coord.send(GetReply{1, "UCX-0", 9, true, base64_encode("peer-0"), ""});
    get.join();
    CHECK(rc == GPUOPS_RESCALE_OK);
    CHECK(std::string(buf.data(), len) == "peer-0");

    // A value larger than the buffer: refused, with the size it needs.
    std::thread small([&] { rc = gpuops_rescale_get(handle, "big", 0, buf.data(), 2, &len, 3000); });
    coord.expect<Get>();
    coord.send(GetReply{1, "big", 9, true, base64_encode("0123456789"), ""});
    small.join();
    CHECK(rc == GPUOPS_RESCALE_EINVAL);
    CHECK(len == 10);

    gpuops_rescale_fini(handle);
    CHECK(coord.expect<Leave>().reason == "finished");
}

TEST_CASE("the C API reports a coordinator that is not there", "[client]") {
    gpuops_rescale_t* handle = nullptr;
    // Port 1 on loopback: nothing listens, the client keeps retrying until the timeout.
    CHECK(gpuops_rescale_init("127.0.0.1:1", "job", "t", "w", nullptr, 0, nullptr, 200, &handle) ==
          GPUOPS_RESCALE_ETIMEOUT);
    CHECK(handle == nullptr);
    CHECK(gpuops_rescale_init("no-port", "job", "t", "w", nullptr, 0, nullptr, 200, &handle) == GPUOPS_RESCALE_EINVAL);
    CHECK(std::string(gpuops_rescale_last_error()).find("HOST:PORT") != std::string::npos);
    CHECK(gpuops_rescale_init(nullptr, "job", "t", "w", nullptr, 0, nullptr, 200, &handle) == GPUOPS_RESCALE_EINVAL);
}

TEST_CASE("a worker that ACKed and lost its connection still takes the COMMIT after resuming", "[client]") {
    ScriptedCoordinator coord;
    ClientOptions o = options_for(coord);
    o.backoff_min = 5ms;
    o.backoff_max = 20ms;
    Client client(o, {});
    client.start();
    join_epoch_one(coord, client);
    coord.send(prepare_for(2, 1, {1, 2, 3}, {{3, 2, "Yw=="}}, {}, false));
    CHECK(coord.expect<Ack>().ok);
    coord.drop();
    REQUIRE(coord.expect<Hello>().resume.has_value());
    // The coordinator has not decided yet: WELCOME names epoch 1, then the decision arrives.
    ViewInfo one{1, view_hash(1, std::vector<MemberId>{1, 2}), {{1, 0, "YQ=="}, {2, 1, "Yg=="}}};
    coord.send(Welcome{1, "sess-1", 1, JoinState::active, one});
    coord.send(Commit{2, view_hash(2, std::vector<MemberId>{1, 2, 3})});
    CHECK(coord.expect<Ready>().epoch == 2);
    const auto view = client.wait_epoch_after(1, 2s);
    REQUIRE(view.has_value());
    CHECK(view->members == std::vector<MemberId>{1, 2, 3});
}

TEST_CASE("a resume the coordinator cannot place ends the worker instead of retrying forever", "[client]") {
    ScriptedCoordinator coord;
    ClientOptions o = options_for(coord);
    o.backoff_min = 5ms;
    o.backoff_max = 20ms;
    Client client(o, {});
    client.start();
    join_epoch_one(coord, client);
    coord.drop();
    const Envelope hello = coord.expect_envelope<Hello>();
    coord.send(ErrorReply{ErrorCode::unknown_member, "no member 1", hello.seq});
    CHECK(client.wait_exit(2s) == ClientState::evicted);
}
