// Randomized schedules against the invariants of research/rescale.md §7: joins, kills, disconnects, notices,
// leaves, admin commands, coordinator crashes at any action, zombies and stale messages; then the faults stop
// and every schedule must settle (no hang) into one agreed view.
#include <catch2/catch.hpp>

#include <random>

#include <fmt/format.h>

#include "sim.hpp"

using namespace gpuops::rescale;
using namespace gpuops::rescale::sim;

namespace {

SimConfig random_config(std::mt19937_64& rng) {
    SimConfig c;
    c.coordinator.token = "job-token";
    c.coordinator.admin_token = "admin-token";
    c.coordinator.min_size = 1 + rng() % 2;
    c.coordinator.max_size = 3 + rng() % 4;
    c.coordinator.lease_ms = 1000;
    c.coordinator.reconnect_grace_ms = 600 + static_cast<TimeMs>(rng() % 800);
    c.coordinator.batch_window_ms = static_cast<TimeMs>(rng() % 80);
    c.coordinator.safe_point_timeout_ms = 1500;
    c.coordinator.prepare_timeout_ms = 400;
    c.coordinator.fence_timeout_ms = 2000;
    c.coordinator.auto_expand = rng() % 4 != 0;
    c.heartbeat_ms = 250;
    return c;
}

struct Outcome {
    bool settled = false;
    std::vector<std::string> violations;
    std::string trace;
};

Outcome run_schedule(std::uint64_t seed, bool trace) {
    std::mt19937_64 rng(seed);
    SimConfig config = random_config(rng);
    config.trace = trace;
    Sim sim(config, seed);
    const auto initial = 1 + rng() % 5;
    for (std::uint64_t i = 0; i < initial; ++i)
        sim.spawn();
    const auto steps = 40 + rng() % 120;
    for (std::uint64_t i = 0; i < steps && sim.violations().empty(); ++i)
        sim.random_step(rng, true);
    // Faults stop: everything must finish within a bound of the timeouts (invariant 11).
    Outcome out;
    out.settled = sim.settle(60'000);
    out.violations = sim.violations();
    out.trace = sim.trace_tail();
    return out;
}

}  // namespace

TEST_CASE("ten thousand random schedules keep every invariant and settle") {
    constexpr std::uint64_t schedules = 10'000;
    std::size_t failures = 0;
    for (std::uint64_t seed = 1; seed <= schedules; ++seed) {
        const Outcome out = run_schedule(seed, false);
        if (out.settled && out.violations.empty()) continue;
        if (++failures > 3) continue;
        const Outcome again = run_schedule(seed, true);  // the same schedule, with a trace
        INFO(fmt::format("seed {}: settled={}\n{}\ntrace:\n{}", seed, again.settled, fmt::join(again.violations, "\n"),
                         again.trace));
        CHECK(again.settled);
        CHECK(again.violations.empty());
    }
    CHECK(failures == 0);
}

TEST_CASE("random schedules exercise what they claim to") {
    // Counts over a sample: the randomized test is only as good as the paths it reaches.
    std::size_t commits = 0, aborts = 0, restarts = 0, fences = 0, stale = 0, zombies = 0;
    for (std::uint64_t seed = 1; seed <= 500; ++seed) {
        std::mt19937_64 rng(seed);
        Sim sim(random_config(rng), seed);
        for (int i = 0; i < 4; ++i)
            sim.spawn();
        for (int i = 0; i < 150; ++i)
            sim.random_step(rng, true);
        REQUIRE(sim.settle(60'000));
        commits += sim.commits();
        aborts += sim.aborts();
        restarts += sim.restarts();
        fences += sim.fences_completed();
        stale += sim.stale_answered();
        zombies += sim.zombies_evicted();
    }
    CHECK(commits > 400);
    CHECK(aborts > 100);
    CHECK(restarts > 200);
    CHECK(fences > 500);
    CHECK(stale > 10);
    CHECK(zombies > 20);
}
