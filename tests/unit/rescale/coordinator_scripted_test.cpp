// Scripted schedules in the style of Horovod's elastic tests: joins, notices, kills, disconnects, lease and drain
// timeouts, NACKs and coordinator restarts, each followed to its end with the outcome checked.
#include <catch2/catch.hpp>

#include <algorithm>

#include "sim.hpp"

using namespace gpuops::rescale;
using namespace gpuops::rescale::sim;

namespace {

SimConfig scripted_config() {
    SimConfig c;
    c.coordinator.token = "t";
    c.coordinator.admin_token = "a";
    c.coordinator.lease_ms = 1000;
    c.coordinator.reconnect_grace_ms = 800;
    c.coordinator.batch_window_ms = 50;
    c.coordinator.safe_point_timeout_ms = 1500;
    c.coordinator.prepare_timeout_ms = 400;
    c.record_messages = true;
    return c;
}

/// A job of `n` workers settled in its first view.
Sim formed(std::size_t n, SimConfig config = scripted_config()) {
    Sim sim(config);
    // One at a time, so that member ids (admission order) follow worker indexes.
    for (std::size_t i = 0; i < n; ++i) {
        sim.spawn();
        sim.deliver_all();
    }
    REQUIRE(sim.settle(10'000));
    REQUIRE(sim.coordinator().view().size() == n);
    for (std::size_t i = 0; i < n; ++i)
        (void)sim.take_received(static_cast<int>(i));
    return sim;
}

template <typename R>
std::vector<R> records_of(const Sim& sim) {
    std::vector<R> out;
    for (const auto& r : sim.store().records())
        if (const auto* x = std::get_if<R>(&r)) out.push_back(*x);
    return out;
}

template <typename M>
std::vector<M> messages_of(const std::vector<Message>& messages) {
    std::vector<M> out;
    for (const auto& m : messages)
        if (const auto* x = std::get_if<M>(&m)) out.push_back(*x);
    return out;
}

MemberId member(Sim& sim, int w) { return *sim.worker(w).member; }

void require_clean(const Sim& sim) {
    INFO(sim.trace_tail());
    for (const auto& v : sim.violations())
        FAIL_CHECK(v);
}

}  // namespace

TEST_CASE("joiners within the batch window form one first epoch in arrival order") {
    Sim sim = formed(3);
    require_clean(sim);
    CHECK(sim.coordinator().view().epoch == 1);
    CHECK(records_of<ProposeRecord>(sim).size() == 1);
    CHECK(sim.coordinator().view().members == std::vector<MemberId>{member(sim, 0), member(sim, 1), member(sim, 2)});
    for (int w = 0; w < 3; ++w) {
        CHECK(sim.worker(w).state == WorkerState::active);
        CHECK(sim.worker(w).committed == 1);
    }
}

TEST_CASE("a notice drains the victim and closes the gap in the ranks") {
    Sim sim = formed(4);
    const MemberId victim = member(sim, 1);
    sim.notice(1, false, 5000);
    REQUIRE(sim.settle(10'000));
    require_clean(sim);
    CHECK(sim.coordinator().view().epoch == 2);
    CHECK(sim.coordinator().view().members == std::vector<MemberId>{member(sim, 0), member(sim, 2), member(sim, 3)});
    const auto transitions = messages_of<Transition>(sim.take_received(0));
    REQUIRE(transitions.size() == 1);
    CHECK(transitions[0].kind == TransitionKind::shrink);
    CHECK(transitions[0].victims == std::vector<MemberId>{victim});
    CHECK(!messages_of<Release>(sim.take_received(1)).empty());
    CHECK(sim.worker(1).state == WorkerState::gone);
    // Drained, so released, not declared dead.
    CHECK(records_of<DeadRecord>(sim).empty());
    CHECK(sim.coordinator().members().at(victim).status == MemberStatus::left);
}

TEST_CASE("notices and a joiner inside one batch window coalesce into one epoch") {
    SimConfig config = scripted_config();
    config.coordinator.batch_window_ms = 200;
    Sim sim = formed(4, config);
    sim.notice(1, true, 5000);
    sim.notice(3, false, 5000);
    const int joiner = sim.spawn();
    REQUIRE(sim.settle(10'000));
    require_clean(sim);
    CHECK(sim.coordinator().view().epoch == 2);
    CHECK(records_of<ProposeRecord>(sim).size() == 2);
    CHECK(sim.coordinator().view().members ==
          std::vector<MemberId>{member(sim, 0), member(sim, 2), member(sim, joiner)});
    const auto transitions = messages_of<Transition>(sim.take_received(0));
    REQUIRE(transitions.size() == 1);
    CHECK(transitions[0].kind == TransitionKind::mixed);
}

TEST_CASE("a killed worker is removed when its lease expires, without a safe point") {
    Sim sim = formed(3);
    const MemberId dead = member(sim, 1);
    sim.kill(1, false);  // a hung host: the socket stays open, only the lease can tell
    REQUIRE(sim.settle(10'000));
    require_clean(sim);
    const auto deaths = records_of<DeadRecord>(sim);
    REQUIRE(deaths.size() == 1);
    CHECK(deaths[0].member_id == dead);
    CHECK(deaths[0].reason == "lease expired");
    CHECK(sim.coordinator().view().members == std::vector<MemberId>{member(sim, 0), member(sim, 2)});
    CHECK(messages_of<Transition>(sim.take_received(0)).empty());  // FAIL: straight to PREPARE
    CHECK(sim.now() >= 1000);
}

TEST_CASE("a worker that reconnects within the grace period keeps its member id and rank") {
    Sim sim = formed(3);
    const MemberId id = member(sim, 2);
    sim.disconnect(2);
    REQUIRE(sim.settle(10'000));
    require_clean(sim);
    CHECK(member(sim, 2) == id);
    CHECK(sim.coordinator().view().epoch == 1);
    CHECK(sim.coordinator().view().rank_of(id) == 2);
    const auto welcomes = messages_of<Welcome>(sim.take_received(2));
    REQUIRE(welcomes.size() == 1);
    CHECK(welcomes[0].state == JoinState::active);
}

TEST_CASE("a worker back after the grace period is evicted and removed") {
    Sim sim = formed(3);
    sim.disconnect(1);
    sim.worker(1).reconnect_at = sim.now() + 5000;  // longer than the grace
    REQUIRE(sim.settle(20'000));
    require_clean(sim);
    CHECK(sim.worker(1).state == WorkerState::gone);
    CHECK(!messages_of<Evicted>(sim.take_received(1)).empty());
    CHECK(sim.coordinator().view().members == std::vector<MemberId>{member(sim, 0), member(sim, 2)});
    CHECK(records_of<DeadRecord>(sim).at(0).reason == "reconnect grace expired");
}

TEST_CASE("a NACK aborts the proposal and the re-proposal at a higher epoch goes without the member") {
    Sim sim = formed(3);
    sim.worker(1).nack = true;
    const int joiner = sim.spawn();
    sim.deliver_all();
    sim.advance(100);
    sim.deliver_all();
    sim.advance(100);
    REQUIRE(sim.settle(10'000));
    require_clean(sim);
    const auto proposals = records_of<ProposeRecord>(sim);
    const auto aborts = records_of<AbortRecord>(sim);
    REQUIRE(proposals.size() == 3);
    REQUIRE(aborts.size() == 1);
    CHECK(aborts[0].epoch == proposals[1].epoch);
    CHECK(proposals[2].epoch > proposals[1].epoch);
    CHECK(sim.coordinator().view().epoch == proposals[2].epoch);
    CHECK(sim.coordinator().view().members ==
          std::vector<MemberId>{member(sim, 0), member(sim, 2), member(sim, joiner)});
    CHECK(sim.worker(1).state == WorkerState::gone);
}

TEST_CASE("a victim that does not drain by the deadline is removed as dead") {
    Sim sim = formed(3);
    sim.worker(2).no_drain = true;
    sim.notice(2, false, 600);
    for (int i = 0; i < 100; ++i) {
        sim.deliver_all();
        sim.advance(10);
    }
    REQUIRE(sim.settle(10'000));
    require_clean(sim);
    const auto deaths = records_of<DeadRecord>(sim);
    REQUIRE(deaths.size() == 1);
    CHECK(deaths[0].reason == "did not drain before the deadline");
    CHECK(sim.coordinator().view().members == std::vector<MemberId>{member(sim, 0), member(sim, 1)});
}

TEST_CASE("a restarted coordinator aborts the open proposal and members resume with their ids") {
    Sim sim = formed(3);
    const std::vector<MemberId> before = sim.coordinator().view().members;
    sim.spawn();
    // Run until the expand is proposed but not committed, then crash.
    for (int i = 0; i < 1000 && records_of<ProposeRecord>(sim).size() < 2; ++i) {
        if (!sim.deliver_one()) sim.advance(5);
    }
    REQUIRE(records_of<ProposeRecord>(sim).size() == 2);
    REQUIRE(records_of<CommitRecord>(sim).size() == 1);
    const Epoch open = records_of<ProposeRecord>(sim).back().epoch;
    sim.restart_coordinator();
    CHECK(sim.coordinator().view().epoch == 1);
    CHECK(sim.coordinator().coord_incarnation() == 2);
    REQUIRE(!records_of<AbortRecord>(sim).empty());
    CHECK(records_of<AbortRecord>(sim).back().epoch == open);
    REQUIRE(sim.settle(10'000));
    require_clean(sim);
    for (int w = 0; w < 3; ++w)
        CHECK(member(sim, w) == before[static_cast<std::size_t>(w)]);
    CHECK(sim.coordinator().view().size() == 4);
    CHECK(sim.coordinator().view().epoch > open);
}

TEST_CASE("no view below min size: a failure waits for a joiner to replace it") {
    SimConfig config = scripted_config();
    config.coordinator.min_size = 3;
    Sim sim = formed(3, config);
    sim.kill(0, true);
    REQUIRE(sim.settle(10'000));
    require_clean(sim);
    CHECK(sim.coordinator().view().epoch == 1);
    CHECK(sim.coordinator().waiting_for_min_size());
    const int joiner = sim.spawn();
    REQUIRE(sim.settle(10'000));
    require_clean(sim);
    CHECK(sim.coordinator().view().epoch == 2);
    CHECK(sim.coordinator().view().members ==
          std::vector<MemberId>{member(sim, 1), member(sim, 2), member(sim, joiner)});
}

TEST_CASE("set refuses limits that the running view is outside of, and records the ones it takes") {
    Sim sim = formed(3);
    const AdminReply high_min = sim.admin(SetCmd{{}, 4, std::nullopt, std::nullopt});
    CHECK_FALSE(high_min.ok);
    CHECK(high_min.code == ErrorCode::invalid);
    CHECK(high_min.msg == "min 4 is above the current size 3");
    const AdminReply low_max = sim.admin(SetCmd{{}, 1, 2, std::nullopt});
    CHECK_FALSE(low_max.ok);
    CHECK(low_max.msg == "max 2 is below the current size 3");
    CHECK(sim.coordinator().config().min_size == scripted_config().coordinator.min_size);

    REQUIRE(sim.admin(SetCmd{{}, 3, 3, std::nullopt}).ok);
    CHECK(sim.coordinator().config().min_size == 3);
    const auto configs = records_of<ConfigRecord>(sim);
    REQUIRE_FALSE(configs.empty());
    CHECK(configs.back().min_size == 3);
    CHECK(configs.back().max_size == 3);
    // Before the first view there is nothing to be outside of: min may wait for joiners.
    Sim empty(scripted_config());
    CHECK(empty.admin(SetCmd{{}, 8, std::nullopt, std::nullopt}).ok);
}

TEST_CASE("admin expand admits joiners when auto admission is off, shrink takes the highest rank, close ends") {
    SimConfig config = scripted_config();
    config.coordinator.auto_expand = false;
    Sim sim(config);
    sim.spawn();
    sim.spawn();
    REQUIRE(sim.settle(10'000));
    CHECK(sim.coordinator().view().epoch == 0);  // nobody admitted yet

    CHECK(sim.admin(ExpandCmd{{}, 1, {}}).ok);
    REQUIRE(sim.settle(10'000));
    CHECK(sim.coordinator().view().members == std::vector<MemberId>{member(sim, 0)});

    const AdminReply refused = sim.admin(ShrinkCmd{{}, {}, 1, std::nullopt});
    CHECK_FALSE(refused.ok);
    CHECK(refused.code == ErrorCode::invalid);

    CHECK(sim.admin(ExpandCmd{{}, 0, {"w1"}}).ok);
    REQUIRE(sim.settle(10'000));
    CHECK(sim.coordinator().view().size() == 2);

    const AdminReply shrink = sim.admin(ShrinkCmd{{}, {}, 1, std::nullopt});
    CHECK(shrink.ok);
    CHECK(shrink.status.at("members").size() == 2);
    REQUIRE(sim.settle(10'000));
    CHECK(sim.coordinator().view().members == std::vector<MemberId>{member(sim, 0)});
    CHECK(sim.worker(1).state == WorkerState::gone);

    CHECK(sim.admin(CloseCmd{}).ok);
    REQUIRE(sim.settle(10'000));
    require_clean(sim);
    CHECK(sim.coordinator().closed());
    CHECK(sim.worker(0).state == WorkerState::gone);
    CHECK(std::holds_alternative<CloseRecord>(sim.store().records().back()));
}
