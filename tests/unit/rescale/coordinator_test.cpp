// The coordinator core driven directly: answers to bad input, stale epochs, zombies, the order of persist and
// send, fences, and recovery from records.
#include <catch2/catch.hpp>

#include <algorithm>

#include "gpuops/rescale/coordinator.hpp"

using namespace gpuops::rescale;

namespace {

CoordinatorConfig test_config() {
    CoordinatorConfig c;
    c.token = "t";
    c.admin_token = "a";
    c.batch_window_ms = 10;
    c.self_check = true;
    return c;
}

/// A coordinator with a store; each call returns the actions and keeps the records.
struct Driver {
    MemoryRecordStore store;
    Coordinator coord;
    TimeMs now = 0;

    explicit Driver(CoordinatorConfig config = test_config()) : coord(boot(config, {}, store)) {}

    static Coordinator boot(const CoordinatorConfig& config, const std::vector<Record>& records,
                            MemoryRecordStore& store) {
        auto started = Coordinator::start(config, records, 0);
        for (const auto& a : started.actions)
            if (const auto* p = std::get_if<PersistAction>(&a)) store.append(p->record);
        return std::move(started.coordinator);
    }
    Actions keep(Actions actions) {
        for (const auto& a : actions)
            if (const auto* p = std::get_if<PersistAction>(&a)) store.append(p->record);
        return actions;
    }
    Actions line(ConnId conn, std::string_view text) { return keep(coord.on_line(now, conn, text)); }
    Actions send(ConnId conn, Message m, std::uint64_t seq = 1) { return keep(coord.on_message(now, conn, {seq, m})); }
    Actions tick(TimeMs at) {
        now = at;
        return keep(coord.on_tick(now));
    }
    Actions hello(ConnId conn, const std::string& worker) {
        return send(conn, Hello{"job", "t", worker, worker + "#1", "h", "addr", {}, std::nullopt});
    }
};

template <typename M>
std::vector<M> sent(const Actions& actions, std::optional<ConnId> to = std::nullopt) {
    std::vector<M> out;
    for (const auto& a : actions)
        if (const auto* s = std::get_if<SendAction>(&a); s && (!to || s->conn == *to))
            if (const auto* m = std::get_if<M>(s->message.get())) out.push_back(*m);
    return out;
}

bool closes(const Actions& actions, ConnId conn) {
    return std::any_of(actions.begin(), actions.end(), [&](const Action& a) {
        const auto* c = std::get_if<CloseAction>(&a);
        return c && c->conn == conn;
    });
}

ErrorReply only_error(const Actions& actions) {
    const auto errors = sent<ErrorReply>(actions);
    REQUIRE(errors.size() == 1);
    return errors[0];
}

/// Two workers on connections 1 and 2, committed in epoch 1. Returns their member ids.
std::pair<MemberId, MemberId> form_two(Driver& d) {
    const MemberId a = sent<Welcome>(d.hello(1, "w1")).at(0).member_id;
    const MemberId b = sent<Welcome>(d.hello(2, "w2")).at(0).member_id;
    const Actions prepare = d.tick(10);
    const auto p = sent<Prepare>(prepare, 1).at(0);
    d.send(1, Ack{p.epoch, p.view_hash, true, ""});
    d.send(2, Ack{p.epoch, p.view_hash, true, ""});
    REQUIRE(d.coord.view().epoch == 1);
    return {a, b};
}

}  // namespace

TEST_CASE("bad lines and bad requests get the right ERROR") {
    Driver d;
    CHECK(only_error(d.line(1, "{oops")).code == ErrorCode::protocol);
    const ErrorReply unknown = only_error(d.line(1, R"({"v":1,"t":"TELEPORT","seq":9})"));
    CHECK(unknown.code == ErrorCode::unknown_type);
    CHECK(unknown.re == 9);
    CHECK(only_error(d.line(1, R"({"v":1,"t":"HELLO","seq":2,"job":"job"})")).code == ErrorCode::protocol);

    const Actions big = d.coord.on_line(0, 1, std::string(300, ' '), 100);
    CHECK(only_error(big).code == ErrorCode::too_large);
    CHECK(closes(big, 1));

    const Actions early = d.send(2, Heartbeat{0}, 5);
    CHECK(only_error(early).code == ErrorCode::unknown_member);
    CHECK(only_error(early).re == 5);

    const Actions token = d.send(3, Hello{"job", "wrong", "w", "i", "h", "", {}, std::nullopt});
    CHECK(only_error(token).code == ErrorCode::bad_token);
    CHECK(closes(token, 3));
    CHECK(d.coord.members().empty());

    CHECK(only_error(d.send(4, Commit{1, "h"})).code == ErrorCode::protocol);
    const Actions admin = d.send(5, StatusCmd{"not-admin"});
    CHECK(only_error(admin).code == ErrorCode::bad_token);
    CHECK(closes(admin, 5));
    const auto status = sent<AdminReply>(d.send(6, StatusCmd{"a"}));
    REQUIRE(status.size() == 1);
    CHECK(status[0].status.at("phase") == "idle");
}

TEST_CASE("messages for a stale epoch or transition get STALE_EPOCH") {
    Driver d;
    form_two(d);
    CHECK(only_error(d.send(1, Put{0, "k", "v", KvScope::epoch})).code == ErrorCode::stale_epoch);
    CHECK(only_error(d.send(1, SafePoint{1, 12345})).code == ErrorCode::stale_epoch);
    CHECK(only_error(d.send(1, Ack{1, d.coord.view().hash, true, ""})).code == ErrorCode::stale_epoch);
    CHECK(only_error(d.send(1, Ready{0})).code == ErrorCode::stale_epoch);
    // Nothing stale was stored.
    CHECK(std::none_of(d.store.records().begin(), d.store.records().end(),
                       [](const Record& r) { return std::holds_alternative<KvPutRecord>(r); }));
}

TEST_CASE("a resume from an old incarnation is EVICTED and a wrong session is refused") {
    Driver d;
    const auto [a, b] = form_two(d);
    const std::string session = d.coord.members().at(a).registration.session;
    const Actions zombie = d.send(7, Hello{"job", "t", "w1", "w1#0", "h", "", {}, ResumeInfo{a, session, 1}});
    CHECK(sent<Evicted>(zombie, 7).size() == 1);
    CHECK(closes(zombie, 7));
    CHECK(d.coord.members().at(a).status == MemberStatus::active);  // the real member is untouched
    CHECK(d.coord.members().at(a).conn == ConnId{1});

    const Actions forged = d.send(8, Hello{"job", "t", "w1", "w1#1", "h", "", {}, ResumeInfo{a, "guess", 1}});
    CHECK(only_error(forged).code == ErrorCode::bad_token);
    CHECK(only_error(d.send(9, Hello{"job", "t", "w1", "w1#1", "h", "", {}, ResumeInfo{b, session, 1}})).code ==
          ErrorCode::unknown_member);

    const Actions resume = d.send(10, Hello{"job", "t", "w1", "w1#1", "h", "", {}, ResumeInfo{a, session, 1}});
    const auto welcome = sent<Welcome>(resume, 10);
    REQUIRE(welcome.size() == 1);
    CHECK(welcome[0].member_id == a);
    CHECK(welcome[0].view->epoch == 1);
    CHECK(closes(resume, 1));  // the half-open old connection is dropped
}

TEST_CASE("every decision is persisted before the message that reveals it") {
    Driver d;
    const Actions welcome = d.hello(1, "w1");
    REQUIRE(std::holds_alternative<PersistAction>(welcome.at(0)));
    CHECK(std::holds_alternative<RegisterRecord>(std::get<PersistAction>(welcome.at(0)).record));
    CHECK(d.tick(9).empty());  // the batch window is still open
    const Actions prepare = d.tick(10);
    REQUIRE(std::holds_alternative<PersistAction>(prepare.at(0)));
    CHECK(std::holds_alternative<ProposeRecord>(std::get<PersistAction>(prepare.at(0)).record));
    const auto p = sent<Prepare>(prepare).at(0);
    const Actions commit = d.send(1, Ack{p.epoch, p.view_hash, true, ""});
    REQUIRE(std::holds_alternative<PersistAction>(commit.at(0)));
    CHECK(std::get<PersistAction>(commit.at(0)).record == Record{CommitRecord{p.epoch, p.view_hash}});
    CHECK(sent<Commit>(commit).size() == 1);
}

TEST_CASE("a fence completes with every PUT and fails when a member dies") {
    Driver d;
    const auto [a, b] = form_two(d);
    d.send(1, Put{1, "k", "va", KvScope::epoch});
    CHECK(sent<FenceDone>(d.send(1, Fence{1, "f", true})).empty());  // waits for b
    d.send(2, Put{1, "k", "vb", KvScope::epoch});
    const Actions done = d.send(2, Fence{1, "f", false});
    const auto to_a = sent<FenceDone>(done, 1);
    const auto to_b = sent<FenceDone>(done, 2);
    REQUIRE(to_a.size() == 1);
    REQUIRE(to_b.size() == 1);
    CHECK(to_a[0].ok);
    CHECK(to_a[0].kv == std::vector<KvEntry>{{a, "k", "va"}, {b, "k", "vb"}});
    CHECK(to_b[0].kv.empty());  // b did not ask to collect
    const auto got = sent<GetReply>(d.send(1, Get{1, "k", b, KvScope::epoch}));
    REQUIRE(got.size() == 1);
    CHECK(got[0].val_b64 == "vb");

    d.send(1, Fence{1, "g", false});
    CHECK(sent<GetReply>(d.send(1, Get{1, "missing", b, KvScope::epoch})).empty());  // waits for b's PUT
    d.send(1, Heartbeat{1});
    d.now = 4000;
    d.send(1, Heartbeat{1});
    const Actions death = d.tick(5500);  // b's lease (5000 ms) ran out, a's did not
    const auto failed = sent<FenceDone>(death, 1);
    REQUIRE(failed.size() == 1);
    CHECK_FALSE(failed[0].ok);
    const auto get_failed = sent<GetReply>(death, 1);
    REQUIRE(get_failed.size() == 1);
    CHECK_FALSE(get_failed[0].ok);
    CHECK(sent<Evicted>(death, 2).size() == 1);
}

TEST_CASE("recovery: committed view kept, open proposal aborted, epochs never reused, leases re-granted") {
    Driver d;
    const auto [a, b] = form_two(d);
    d.hello(3, "w3");
    const auto t = sent<Transition>(d.tick(20), 1).at(0);  // an expand parks the runtime first
    CHECK(t.kind == TransitionKind::expand);
    CHECK(sent<Prepare>(d.send(1, SafePoint{1, t.transition_id})).empty());  // still waiting for b
    const auto p = sent<Prepare>(d.send(2, SafePoint{1, t.transition_id}), 1).at(0);
    REQUIRE(p.epoch == 2);

    auto started = Coordinator::start(test_config(), d.store.records(), 10'000);
    const Coordinator& c = started.coordinator;
    CHECK(c.view().epoch == 1);
    CHECK(c.view().members == std::vector<MemberId>{a, b});
    CHECK(c.highest_epoch() == 2);
    CHECK(c.coord_incarnation() == 2);
    REQUIRE(started.actions.size() >= 2);
    CHECK(std::get<PersistAction>(started.actions[0]).record == Record{StartRecord{2}});
    CHECK(std::get<PersistAction>(started.actions[1]).record == Record{AbortRecord{2}});
    for (const auto& [id, m] : c.members()) {
        CHECK_FALSE(m.conn.has_value());
        CHECK(m.expires_at >= 10'000 + test_config().reconnect_grace_ms);
    }
    CHECK(c.members().at(a).status == MemberStatus::active);
    CHECK(c.members().at(a + 2).status == MemberStatus::joining);
}

TEST_CASE("a member that missed the ABORT of a proposal it ACKed hears it when it resumes, also after a restart") {
    Driver d;
    const auto [a, b] = form_two(d);
    d.hello(3, "w3");
    const auto t = sent<Transition>(d.tick(20), 1).at(0);
    d.send(1, SafePoint{1, t.transition_id});
    const auto p = sent<Prepare>(d.send(2, SafePoint{1, t.transition_id}), 1).at(0);
    d.send(1, Ack{p.epoch, p.view_hash, true, ""});
    d.keep(d.coord.on_closed(d.now, 1));  // a ACKed, then lost its connection
    const Actions nack = d.send(3, Ack{p.epoch, p.view_hash, false, "no endpoints"}, 2);
    CHECK(sent<Abort>(nack, 2).size() == 1);  // b hears it; a is away
    REQUIRE(d.store.records().back() == Record{AbortRecord{p.epoch}});

    // Without the ABORT, a would stay prepared for epoch 2 and ignore every later TRANSITION.
    const std::string session = d.coord.members().at(a).registration.session;
    const Hello resume{"job", "t", "w1", "w1#1", "h", "", {}, ResumeInfo{a, session, 1}};
    const auto told = sent<Abort>(d.send(4, resume), 4);
    REQUIRE(told.size() == 1);
    CHECK(told[0].epoch == p.epoch);

    // The same after a crash right after the ABORT record, before the ABORT went out.
    auto started = Coordinator::start(test_config(), d.store.records(), 10'000);
    const auto after_restart = sent<Abort>(started.coordinator.on_message(10'000, 1, {1, resume}), 1);
    REQUIRE(after_restart.size() == 1);
    CHECK(after_restart[0].epoch == p.epoch);
}
