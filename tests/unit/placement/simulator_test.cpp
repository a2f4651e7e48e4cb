// The trace simulator: small traces whose metrics are computed by hand, head-of-line blocking against backfill,
// jobs that never fit, migration cost, the η sizing rule, determinism, and random traces under every policy.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include <fmt/format.h>

#include "gpuops/placement/simulator.hpp"

using namespace gpuops;
using namespace gpuops::placement;

namespace {

struct Row {
    double submit_s;
    int instances;
    int gpus;
    double duration_s;
};

Trace make_trace(const std::vector<Row>& rows) {
    Trace t;
    for (std::size_t k = 0; k < rows.size(); ++k) {
        TraceJob j;
        j.id = fmt::format("j{}", k);
        j.submit_s = rows[k].submit_s;
        j.instances = rows[k].instances;
        j.gpus_per_instance = rows[k].gpus;
        j.duration_s = rows[k].duration_s;
        j.source_gpus = j.instances * j.gpus_per_instance;
        t.jobs.push_back(j);
    }
    return t;
}

SimulationOptions two_nodes(PolicyKind kind) {
    SimulationOptions o;
    o.policy = kind;
    o.nodes = 2;
    return o;
}

Trace random_trace(std::uint64_t seed, int jobs) {
    std::mt19937_64 rng(seed);
    std::exponential_distribution<double> gap(1.0 / 20);
    std::uniform_real_distribution<double> duration(1, 600);
    const std::vector<int> sizes = {1, 1, 1, 2, 2, 3, 4, 4, 5, 6, 7, 8, 8};
    std::vector<Row> rows;
    double t = 0;
    for (int k = 0; k < jobs; ++k) {
        const int g = sizes[rng() % sizes.size()];
        const int w = g == 8 ? 1 + static_cast<int>(rng() % 3) : 1 + static_cast<int>(rng() % 4);
        rows.push_back({t, w, g, std::round(duration(rng))});
        t += std::round(gap(rng));
    }
    rows.push_back({t, 1, 9, 10});  // never fits a node
    rows.push_back({t, 9, 8, 10});  // never fits the cluster
    return make_trace(rows);
}

}  // namespace

TEST_CASE("full nodes: AJCT, queueing, makespan and AGU by hand", "[placement][simulator]") {
    // 2 × 8 GPUs, best-fit. j0 and j1 fill both nodes at 0; j2 (8 GPUs) waits from 1 to 10, then runs 5 s.
    const auto trace = make_trace({{0, 1, 8, 10}, {0, 1, 8, 20}, {1, 1, 8, 5}});
    auto o = two_nodes(PolicyKind::best_fit);
    o.sample_period_s = 5;
    const auto r = simulate(trace, o);
    CHECK(r.policy == "best-fit");
    CHECK(r.jobs == 3);
    CHECK(r.jobs_never_fit == 0);
    CHECK(r.ajct_s == Approx((10.0 + 20 + 14) / 3));
    CHECK(r.mean_queue_s == Approx(3));
    CHECK(r.p95_queue_s == Approx(9));
    CHECK(r.makespan_s == Approx(20));
    CHECK(r.busy_s == Approx(9));  // [1, 10)
    CHECK(r.agu == Approx(1));
    CHECK(r.afr == Approx(0));
    CHECK(r.migrations == 0);
    CHECK(r.max_queued == 1);
    // Samples at 0, 5, 10, 15, 20: the state holding from each.
    REQUIRE(r.samples.size() == 5);
    const std::vector<SimulationSample> want = {
        {0, 0, 1.0, 0}, {5, 0, 1.0, 1}, {10, 0, 1.0, 0}, {15, 0, 0.5, 0}, {20, 0, 0.0, 0}};
    CHECK(r.samples == want);
}

TEST_CASE("spread leaves an avoidable partial node: AFR and AGU by hand", "[placement][simulator]") {
    // Spread puts the two 2-GPU jobs on different nodes: Φ^π = 2, Φ* = 1, N·SIF = 1, SIF = 1/2, while the 8-GPU
    // job waits from 1 to 10 with 4 of 16 GPUs in use.
    const auto trace = make_trace({{0, 1, 2, 10}, {0, 1, 2, 10}, {1, 1, 8, 5}});
    const auto spread = simulate(trace, two_nodes(PolicyKind::spread));
    CHECK(spread.busy_s == Approx(9));
    CHECK(spread.afr == Approx(0.5));
    CHECK(spread.agu == Approx(0.25));
    CHECK(spread.ajct_s == Approx((10.0 + 10 + 14) / 3));
    CHECK(spread.makespan_s == Approx(15));
    REQUIRE_FALSE(spread.samples.empty());
    CHECK(spread.samples.front().t == 0);
    CHECK(spread.samples.front().n_sif == 1);
    CHECK(spread.samples.back().n_sif == 0);
    // Best-fit packs both on one node: the 8-GPU job starts at once and nothing is ever queued.
    const auto best = simulate(trace, two_nodes(PolicyKind::best_fit));
    CHECK(best.busy_s == 0);
    CHECK(best.afr == 0);
    CHECK(best.agu == 0);
    CHECK(best.ajct_s == Approx((10.0 + 10 + 5) / 3));
    CHECK(best.mean_queue_s == 0);
    CHECK(best.makespan_s == Approx(10));
}

TEST_CASE("head-of-line blocking against backfill", "[placement][simulator]") {
    // j0 (8) on n0, j1 (4) on n1; j2 (8) waits for an empty node; j3 (4) fits n1 at 2 but is behind j2.
    const auto trace = make_trace({{0, 1, 8, 10}, {0, 1, 4, 10}, {1, 1, 8, 5}, {2, 1, 4, 3}});
    auto o = two_nodes(PolicyKind::best_fit);
    const auto fifo = simulate(trace, o);
    CHECK(fifo.ajct_s == Approx((10.0 + 10 + 14 + 11) / 4));
    CHECK(fifo.mean_queue_s == Approx((9.0 + 8) / 4));
    CHECK(fifo.makespan_s == Approx(15));
    CHECK(fifo.busy_s == Approx(9));
    CHECK(fifo.agu == Approx(0.75));
    CHECK(fifo.max_queued == 2);
    o.backfill = true;
    const auto backfill = simulate(trace, o);
    CHECK(backfill.ajct_s == Approx((10.0 + 10 + 14 + 3) / 4));
    CHECK(backfill.mean_queue_s == Approx(9.0 / 4));
    CHECK(backfill.makespan_s == Approx(15));
    CHECK(backfill.busy_s == Approx(9));
    CHECK(backfill.agu == Approx((0.75 * 1 + 1.0 * 3 + 0.75 * 5) / 9));
    CHECK(backfill.max_queued == 1);
}

TEST_CASE("jobs that never fit are counted and dropped", "[placement][simulator]") {
    const auto trace = make_trace({{0, 1, 9, 10}, {0, 3, 8, 10}, {1, 1, 4, 5}, {1, 0, 4, 5}});
    for (const bool backfill : {false, true}) {
        auto o = two_nodes(PolicyKind::first_fit);
        o.backfill = backfill;
        const auto r = simulate(trace, o);
        CHECK(r.jobs_never_fit == 3);
        CHECK(r.jobs == 1);
        CHECK(r.ajct_s == Approx(5));
        CHECK(r.makespan_s == Approx(6));
        CHECK(r.busy_s == 0);
    }
}

TEST_CASE("a migration moves the migrated job's finish time", "[placement][simulator]") {
    // Repack every 100 s. At 0: j0 (4) on n0, j1 (6) on n1, j2 (2) best-fit next to j1. j1 leaves at 50; at 150
    // (the next event, j3's arrival) the repack moves j2 onto n0 beside j0, so j2 stalls once: 1000 → 1008.
    const auto trace = make_trace({{0, 1, 4, 1000}, {0, 1, 6, 50}, {0, 1, 2, 1000}, {150, 1, 1, 10}});
    auto o = two_nodes(PolicyKind::repack);
    o.policy_options.repack_period_s = 100;
    const auto r = simulate(trace, o);
    CHECK(r.migrations == 1);
    CHECK(r.migration_stalls == 1);
    CHECK(r.makespan_s == Approx(1008));
    CHECK(r.ajct_s == Approx((1000.0 + 50 + 1008 + 10) / 4));
    o.migration_cost_s = 0;
    const auto free_moves = simulate(trace, o);
    CHECK(free_moves.migrations == 1);
    CHECK(free_moves.makespan_s == Approx(1000));
    CHECK(free_moves.ajct_s == Approx((1000.0 + 50 + 1000 + 10) / 4));
}

TEST_CASE("cluster sizing by the η rule", "[placement][simulator]") {
    // D = 16 on [0, 5), 8 on [5, 10): p_0.5 = 8, p_0.9 = 16.
    const auto trace = make_trace({{0, 1, 8, 10}, {0, 1, 8, 5}});
    CHECK(demand_quantile(trace, 0.5) == 8);
    CHECK(demand_quantile(trace, 0.9) == 16);
    CHECK(nodes_for_eta(trace, 0.5) == 1);
    CHECK(nodes_for_eta(trace, 0.9) == 2);
    // The largest job alone needs ⌈5 / ⌊8/3⌋⌉ = 3 nodes.
    const auto wide = make_trace({{0, 1, 8, 10}, {20, 5, 3, 1}});
    CHECK(nodes_for_eta(wide, 0.5) == 3);
    CHECK(nodes_for_eta(make_trace({}), 0.9) == 1);
    CHECK_THROWS_AS(nodes_for_eta(trace, 0), DataError);
}

TEST_CASE("the same seed gives the same result", "[placement][simulator]") {
    const auto trace = random_trace(11, 300);
    SimulationOptions o;
    o.policy = PolicyKind::random;
    o.nodes = 4;
    o.policy_options.seed = 7;
    const auto a = simulate(trace, o);
    const auto b = simulate(trace, o);
    CHECK(a == b);
    CHECK(a.jobs + a.jobs_never_fit == static_cast<std::int64_t>(trace.jobs.size()));
}

TEST_CASE("every policy replays a random trace within capacity", "[placement][simulator]") {
    const auto trace = random_trace(5, 500);
    for (const auto name : policy_names) {
        for (const bool backfill : {false, true}) {
            CAPTURE(name, backfill);
            SimulationOptions o;
            o.policy = *policy_from_string(name);
            o.nodes = 4;
            o.backfill = backfill;
            o.policy_options.repack_period_s = 300;
            int events = 0;
            std::vector<std::string> problems;
            const auto r = simulate(trace, o, [&](double, const Policy& p) {
                ++events;
                const auto& c = p.cluster();
                auto found = c.check();
                for (NodeId n = 0; n < c.node_count(); ++n)
                    if (c.node(n).used + c.node(n).reserved > c.node(n).capacity)
                        found.push_back(fmt::format("node {} over capacity", n));
                problems.insert(problems.end(), found.begin(), found.end());
            });
            CHECK(problems.empty());
            CHECK(events > 0);
            CHECK(r.jobs_never_fit >= 2);
            CHECK(r.jobs + r.jobs_never_fit == static_cast<std::int64_t>(trace.jobs.size()));
            CHECK(r.agu >= 0);
            CHECK(r.agu <= 1);
            CHECK(r.afr >= 0);
            CHECK(r.afr <= 1);
            CHECK(r.p95_queue_s >= 0);
            CHECK(r.makespan_s > 0);
            for (const auto& s : r.samples) {
                CHECK(s.gpu_utilisation <= 1);
                CHECK(s.n_sif >= 0);
            }
        }
    }
}
