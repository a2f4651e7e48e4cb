// Theorem 1 as a property: with WCC holding, after every event COMPASS leaves at most one partial slotted node and
// at most one partial pool node, every FUF slot saturated, and the ABS invariants intact. Exhaustive over small
// configurations of {2,4} slots (with FUF anchors and their fillers) and pool loads, then long random sequences.
#include <catch2/catch.hpp>

#include <random>

#include <fmt/format.h>

#include "gpuops/placement/abs.hpp"
#include "gpuops/placement/phi_star.hpp"

using namespace gpuops;
using namespace gpuops::placement;

namespace {

/// An ABS engine over a cluster, with the running jobs' sizes for WCC.
struct Sim {
    LiveCluster cluster;
    AbsEngine abs;
    std::vector<std::int64_t> by_size = std::vector<std::int64_t>(9, 0);
    int next = 0;

    Sim(const ClusterState& s, CompactRule rule) : cluster(s), abs(cluster, {false, rule}) {
        for (const auto& i : s.instances)
            ++by_size[static_cast<std::size_t>(i.gpus)];
    }
    [[nodiscard]] bool wcc_after(int w, int g) const {
        auto n = by_size;
        n[static_cast<std::size_t>(g)] += w;
        return check_wcc(n).holds;
    }
    /// Arrives a job when WCC holds after it; returns its name, or "" when skipped or waiting.
    std::string arrive(int w, int g) {
        if (!wcc_after(w, g)) return {};
        std::string name = fmt::format("new{}", next++);
        const JobId j = cluster.add_job(name, w, g);
        cluster.begin_event();
        if (!abs.arrive(j)) {
            cluster.drop_job(j);
            return {};
        }
        by_size[static_cast<std::size_t>(g)] += w;
        return name;
    }
    bool depart(const std::string& name) {
        const JobId j = cluster.find_job(name);
        const auto& ids = cluster.job(j).instances;
        auto n = by_size;
        for (const InstanceId i : ids)
            --n[static_cast<std::size_t>(cluster.instance(i).gpus)];
        if (!check_wcc(n).holds) return false;
        cluster.begin_event();
        abs.depart(j);
        cluster.drop_job(j);
        by_size = n;
        return true;
    }
};

/// Theorem 1's conclusion and Prop. 1's invariants; the message names what broke.
std::string violation(const Sim& sim) {
    const auto problems = sim.abs.check();
    if (!problems.empty()) return problems.front();
    const auto st = sim.abs.stats();
    if (st.partial_slotted > 1) return fmt::format("{} partial slotted nodes", st.partial_slotted);
    if (st.partial_pool > 1) return fmt::format("{} partial pool nodes", st.partial_pool);
    if (st.vacant_slots > 0) return fmt::format("{} FUF slots not saturated", st.vacant_slots);
    if (st.outside > 0 || st.pinned_instances > 0) return "instances left ABS";
    return {};
}

/// Node contents: instance sizes on one 8-GPU node (FF slots; a 3 with its 1-GPU filler).
const std::vector<std::vector<int>> partial_ff = {{2}, {4}, {2, 2}, {4, 2}, {2, 2, 2}};
const std::vector<std::vector<int>> partial_fuf = {{2},       {4},    {2, 2},    {4, 2},
                                                   {2, 2, 2}, {3, 1}, {3, 1, 2}, {3, 1, 2, 2}};

/// Every multiset of up to `max_nodes` elements of `types` (as index lists, non-decreasing).
std::vector<std::vector<std::size_t>> multisets(std::size_t types, std::size_t max_nodes) {
    std::vector<std::vector<std::size_t>> out{{}};
    for (std::size_t k = 0; k < out.size(); ++k) {
        if (out[k].size() == max_nodes) continue;
        for (std::size_t t = out[k].empty() ? 0 : out[k].back(); t < types; ++t) {
            auto next = out[k];
            next.push_back(t);
            out.push_back(std::move(next));
        }
    }
    return out;
}

ClusterState build(const std::vector<std::vector<int>>& types, const std::vector<std::size_t>& slotted,
                   const std::vector<int>& pools, int spare) {
    ClusterState s;
    int job = 0;
    auto node = [&](const std::vector<int>& sizes) {
        const std::string name = fmt::format("n{}", s.nodes.size());
        s.nodes.push_back({name, 8});
        for (const int g : sizes)
            s.instances.push_back({fmt::format("j{}", job++), name, g, {}});
    };
    for (const std::size_t t : slotted)
        node(types[t]);
    for (const int load : pools)
        node(std::vector<int>(static_cast<std::size_t>(load), 1));
    for (int k = 0; k < spare; ++k)
        node({});
    return s;
}

/// Compact, then a fixed series of arrivals and departures (each only when WCC holds after it), checking after
/// each event; returns the first violation ("" when none).
std::string run_events(const ClusterState& s, CompactRule rule) {
    Sim sim(s, rule);
    sim.cluster.begin_event();
    sim.abs.compact();
    if (auto v = violation(sim); !v.empty()) return "after Compact: " + v;
    const std::vector<std::pair<int, int>> arrivals = {{1, 2}, {1, 4}, {2, 1}, {1, 3}, {1, 8}, {3, 2}};
    std::vector<std::string> mine;
    for (std::size_t k = 0; k < arrivals.size(); ++k) {
        const auto name = sim.arrive(arrivals[k].first, arrivals[k].second);
        if (!name.empty()) mine.push_back(name);
        if (auto v = violation(sim); !v.empty()) return fmt::format("after arrival {}: {}", k, v);
        if (k == 2 && !s.instances.empty()) {
            sim.depart(s.instances.front().job);  // one of the original instances leaves
            if (auto v = violation(sim); !v.empty()) return "after a departure: " + v;
        }
    }
    for (const auto& name : mine) {
        sim.depart(name);
        if (auto v = violation(sim); !v.empty()) return fmt::format("after {} departed: {}", name, v);
    }
    return {};
}

}  // namespace

TEST_CASE("exhaustive: <= 1 partial slotted and <= 1 partial pool node after Compact and every event",
          "[placement][abs][property]") {
    const auto slot_sets = multisets(partial_ff.size(), 6);
    const auto pool_sets = multisets(7, 3);  // pool loads 1..7 on up to 3 nodes
    REQUIRE(slot_sets.size() == 462);
    REQUIRE(pool_sets.size() == 120);
    int configurations = 0;
    for (const auto& slotted : slot_sets) {
        for (const auto& pool_types : pool_sets) {
            std::vector<int> pools;
            pools.reserve(pool_types.size());
            for (const std::size_t t : pool_types)
                pools.push_back(static_cast<int>(t) + 1);
            const auto state = build(partial_ff, slotted, pools, 3);
            const auto v = run_events(state, CompactRule::corrected);
            if (!v.empty())
                FAIL(fmt::format("slot types {} pools {}: {}", fmt::join(slotted, ","), fmt::join(pools, ","), v));
            ++configurations;
        }
    }
    CHECK(configurations == 462 * 120);
}

TEST_CASE("exhaustive with FUF anchors and fillers: up to 4 partial slotted nodes and a pool node",
          "[placement][abs][property]") {
    int configurations = 0;
    for (const auto& slotted : multisets(partial_fuf.size(), 4)) {
        for (int pool = 0; pool <= 7; ++pool) {
            const auto state = build(partial_fuf, slotted, pool > 0 ? std::vector<int>{pool} : std::vector<int>{}, 3);
            const auto v = run_events(state, CompactRule::corrected);
            if (!v.empty()) FAIL(fmt::format("slot types {} pool {}: {}", fmt::join(slotted, ","), pool, v));
            ++configurations;
        }
    }
    CHECK(configurations == 495 * 8);
}

TEST_CASE("the same enumeration finds the paper's literal Compact leaving two partial slotted nodes",
          "[placement][abs][property]") {
    int broken = 0;
    for (const auto& slotted : multisets(partial_ff.size(), 3)) {
        Sim sim(build(partial_ff, slotted, {}, 0), CompactRule::paper);
        sim.abs.compact();
        REQUIRE(sim.abs.check().empty());
        broken += sim.abs.stats().partial_slotted > 1 ? 1 : 0;
    }
    CHECK(broken > 0);
}

TEST_CASE("random event sequences under WCC keep Theorem 1 after every event", "[placement][abs][property]") {
    // Sizes in the proportions of the paper's traces: many 1-GPU and 8-GPU instances, a few FF and FUF ones.
    const std::vector<int> sizes = {1, 1, 1, 1, 1, 1, 2, 2, 3, 4, 4, 5, 6, 7, 8, 8, 8};
    std::int64_t events = 0;
    std::int64_t arrivals = 0;
    std::int64_t fuf = 0;
    std::int64_t migrations = 0;
    for (std::uint32_t seed = 1; seed <= 12; ++seed) {
        std::mt19937 rng(seed);
        ClusterState s;
        for (int n = 0; n < 16; ++n)
            s.nodes.push_back({fmt::format("n{}", n), 8});
        Sim sim(s, CompactRule::corrected);
        std::vector<std::string> running;
        for (int step = 0; step < 2500; ++step) {
            const bool arrive = running.empty() || rng() % 100 < 55;
            if (arrive) {
                const int g = sizes[rng() % sizes.size()];
                const int w = 1 + static_cast<int>(rng() % (g == 1 ? 6 : 3));
                // The theorem presumes a cluster that is not saturated: keep a node empty after every arrival,
                // so that a departing anchor's fillers always have a place (else they stay pinned, see abs.hpp).
                if (sim.abs.stats().empty <= w) continue;
                const auto name = sim.arrive(w, g);
                if (name.empty()) continue;
                running.push_back(name);
                ++arrivals;
                fuf += g == 3 || g >= 5 ? (g == 8 ? 0 : 1) : 0;
            } else {
                const std::size_t k = rng() % running.size();
                if (!sim.depart(running[k])) continue;
                running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
            }
            ++events;
            migrations += static_cast<std::int64_t>(sim.cluster.event_migrations().size());
            const auto v = violation(sim);
            if (!v.empty()) FAIL(fmt::format("seed {} step {}: {}", seed, step, v));
        }
    }
    CHECK(events > 10'000);
    CHECK(arrivals > 5'000);
    CHECK(fuf > 100);
    CHECK(migrations > 100);  // Compact and the filler refills really ran
}
