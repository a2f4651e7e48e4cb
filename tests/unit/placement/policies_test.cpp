// The policies behind one interface: each baseline's node choice, gang admission (wait leaves the state as it
// was), repack, and random event sequences that keep every policy's state valid.
#include <catch2/catch.hpp>

#include <random>

#include <fmt/format.h>

#include "gpuops/placement/policies.hpp"

using namespace gpuops;
using namespace gpuops::placement;

namespace {

/// 8-GPU nodes n0..; `used[i]`: the GPUs one instance holds on node i (0: empty).
ClusterState loads(const std::vector<int>& used) {
    ClusterState s;
    for (std::size_t i = 0; i < used.size(); ++i) {
        s.nodes.push_back({fmt::format("n{}", i), 8});
        if (used[i] > 0) s.instances.push_back({fmt::format("j{}", i), fmt::format("n{}", i), used[i], {}});
    }
    return s;
}

NodeId first_node(PolicyKind kind, const ClusterState& s, int gpus, std::uint64_t seed = 1) {
    auto p = make_policy(kind, s, {false, CompactRule::corrected, seed, 3600});
    const auto d = p->place({"x", 1, gpus});
    REQUIRE_FALSE(d.wait);
    REQUIRE(d.placements.size() == 1);
    CHECK(d.migrations.empty());
    return d.placements[0].node;
}

}  // namespace

TEST_CASE("policy names round-trip", "[placement][policies]") {
    for (const auto name : policy_names)
        CHECK(to_string(*policy_from_string(name)) == name);
    CHECK_FALSE(policy_from_string("bestfit"));
}

TEST_CASE("each baseline picks its node", "[placement][policies]") {
    const auto s = loads({5, 2, 6, 0});  // free 3, 6, 2, 8
    CHECK(first_node(PolicyKind::first_fit, s, 2) == 0);
    CHECK(first_node(PolicyKind::best_fit, s, 2) == 2);
    CHECK(first_node(PolicyKind::best_fit, s, 3) == 0);
    CHECK(first_node(PolicyKind::spread, s, 2) == 3);
    CHECK(first_node(PolicyKind::repack, s, 2) == 2);
    // FGD, shares of {5,2,6} and the new 2: a node's fragment is free x share of sizes larger than free.
    // free 3 -> 1: 3*2/4 = 1.5 -> 1*4/4 = 1 (-0.5); free 6 -> 4: 0 -> 4*2/4 = 2 (+2); free 2 -> 0: 2*2/4 = 1 -> 0
    // (-1); free 8 -> 6: 0 -> 0. The 2-free node lowers fragmentation most (best fit would agree here).
    CHECK(first_node(PolicyKind::fgd, s, 2) == 2);
    // A 1-GPU instance, shares of {5,2,6,1}:
    // free 3: 3*2/4 = 1.5 -> free 2: 2*2/4 = 1 (-0.5); free 2: 1 -> free 1: 1*3/4 (-0.25); free 6 -> 5: 0 -> 5*1/4
    // (+1.25); free 8 -> 7: 0 -> 0. FGD picks the 3-free node where best fit takes the 2-free one.
    CHECK(first_node(PolicyKind::fgd, s, 1) == 0);
    CHECK(first_node(PolicyKind::best_fit, s, 1) == 2);
}

TEST_CASE("random is reproducible for a seed and spreads over the nodes with room", "[placement][policies]") {
    const auto s = loads({0, 0, 0, 0, 0, 0, 0, 0});
    std::set<NodeId> seen;
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
        const NodeId n = first_node(PolicyKind::random, s, 4, seed);
        CHECK(first_node(PolicyKind::random, s, 4, seed) == n);
        seen.insert(n);
    }
    CHECK(seen.size() >= 6);
    CHECK(first_node(PolicyKind::random, loads({8, 8, 3, 8}), 4) == 2);  // the only node with room
}

TEST_CASE("a job that does not fit waits and leaves the state as it was, under every policy", "[placement][policies]") {
    const auto s = loads({4, 4, 6});  // free 4, 4, 2: two 4s fit, three do not
    for (const auto name : policy_names) {
        const auto kind = *policy_from_string(name);
        auto p = make_policy(kind, s);
        const auto before = p->snapshot();
        const auto d = p->place({"x", 3, 4});
        INFO(name);
        CHECK(d.wait);
        CHECK(d.placements.empty());
        CHECK(d.wait_reason.find("instance 2 of 3") != std::string::npos);
        CHECK(p->snapshot() == before);
        CHECK(p->cluster().check().empty());
        CHECK_FALSE(p->place({"y", 2, 4}).wait);
        CHECK_THROWS_AS(p->remove("nope"), DataError);
        const auto moves = p->remove("y");
        if (kind != PolicyKind::compass) CHECK(moves.empty());  // baselines never migrate on a departure
    }
}

TEST_CASE("repack packs every running instance best-fit decreasing and reports the moves",
          "[placement][policies][repack]") {
    // Four half-used nodes: 4 | 4 | 2+2 | 4: a repack needs two full nodes.
    ClusterState s = loads({4, 4, 0, 4, 0});
    s.instances.push_back({"a", "n2", 2, {}});
    s.instances.push_back({"b", "n2", 2, {}});
    auto p = make_policy(PolicyKind::repack, s, {false, CompactRule::corrected, 1, 100});
    CHECK(p->advance(50).empty());
    const auto moves = p->advance(100);
    REQUIRE_FALSE(moves.empty());
    CHECK(moves.size() <= 2);
    const auto after = p->snapshot();
    validate(after);
    std::vector<int> used(5, 0);
    for (const auto& i : after.instances)
        ++used[static_cast<std::size_t>(std::stoi(i.node.substr(1)))] += i.gpus - 1;
    CHECK(std::count(used.begin(), used.end(), 8) == 2);
    CHECK(std::count(used.begin(), used.end(), 0) == 3);
    CHECK(p->advance(150).empty());  // the next period starts at 200
    CHECK(p->rebalance().empty());   // already packed
}

TEST_CASE("random event sequences keep every policy's state valid", "[placement][policies]") {
    const std::vector<int> sizes = {1, 1, 1, 2, 3, 4, 4, 6, 8};
    for (const auto name : policy_names) {
        const auto kind = *policy_from_string(name);
        ClusterState s;
        for (int n = 0; n < 12; ++n)
            s.nodes.push_back({fmt::format("n{}", n), n % 3 == 0 ? 4 : 8});
        auto p = make_policy(kind, s, {true, CompactRule::corrected, 7, 500});
        std::mt19937 rng(11);
        std::vector<std::string> running;
        int placed = 0;
        int waited = 0;
        for (int step = 0; step < 1500; ++step) {
            p->advance(step * 10.0);
            if (running.empty() || rng() % 100 < 55) {
                const JobRequest job{fmt::format("j{}", step), 1 + static_cast<int>(rng() % 3),
                                     sizes[rng() % sizes.size()]};
                const auto d = p->place(job);
                if (d.wait) {
                    ++waited;
                    continue;
                }
                ++placed;
                REQUIRE(d.placements.size() == static_cast<std::size_t>(job.instances));
                for (const auto& pl : d.placements)
                    REQUIRE(pl.gpu_ids.size() == static_cast<std::size_t>(job.gpus_per_instance));
                running.push_back(job.name);
            } else {
                const std::size_t k = rng() % running.size();
                p->remove(running[k]);
                running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
            }
            const auto problems = p->cluster().check();
            INFO(name << " step " << step << ": " << (problems.empty() ? "" : problems.front()));
            REQUIRE(problems.empty());
        }
        validate(p->snapshot());
        CHECK(placed > 300);
        CHECK(waited > 0);
        if (const auto* compass = dynamic_cast<const CompassPolicy*>(p.get())) CHECK(compass->abs().check().empty());
    }
}
