// The COMPASS operators one by one: slot widths, Place, Remove with refill, Compact (the paper's gap and the
// correction), strict against relaxed ABS, all-or-nothing admission, and reading states that are not in ABS.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "gpuops/placement/abs.hpp"

using namespace gpuops;
using namespace gpuops::placement;

namespace {

/// `n` nodes of 8 GPUs n0..; `placed[i]` lists the instance sizes on node i, each its own job j<i>_<k>.
ClusterState state_of(int n, const std::vector<std::vector<int>>& placed) {
    ClusterState s;
    for (int i = 0; i < n; ++i)
        s.nodes.push_back({"n" + std::to_string(i), 8});
    for (std::size_t i = 0; i < placed.size(); ++i)
        for (std::size_t k = 0; k < placed[i].size(); ++k)
            s.instances.push_back({fmt::format("j{}_{}", i, k), "n" + std::to_string(i), placed[i][k], {}});
    return s;
}

void require_valid(const AbsEngine& abs) {
    const auto problems = abs.check();
    INFO((problems.empty() ? std::string() : problems.front()));
    REQUIRE(problems.empty());
}

JobId add(LiveCluster& c, const std::string& name, int count, int gpus) { return c.add_job(name, count, gpus); }

}  // namespace

TEST_CASE("slot widths follow w*(g): 2, then 4 for 3-4, then 8 for 5-8", "[placement][abs]") {
    CHECK(slot_width(2) == 2);
    CHECK(slot_width(3) == 4);
    CHECK(slot_width(4) == 4);
    for (int g = 5; g <= 8; ++g)
        CHECK(slot_width(g) == 8);
    CHECK(slot_width(9) == 16);
    CHECK_THROWS_AS(slot_width(1), InternalError);
}

TEST_CASE("the paper's Compact leaves A = {4}, B = {4,2} with two partial nodes, the corrected one fixes it",
          "[placement][abs][compact]") {
    const auto state = state_of(3, {{4}, {4, 2}});
    SECTION("as written") {
        LiveCluster c(state);
        AbsEngine abs(c, {false, CompactRule::paper});
        abs.compact();
        require_valid(abs);
        CHECK(abs.stats().partial_slotted == 2);
        CHECK(abs.slot_widths(0) == std::vector<int>{4});
    }
    SECTION("corrected: B's 4-slot moves to A") {
        LiveCluster c(state);
        AbsEngine abs(c, {});
        c.begin_event();
        abs.compact();
        require_valid(abs);
        CHECK(abs.stats().partial_slotted == 1);
        CHECK(abs.slot_widths(0) == std::vector<int>{4, 4});
        CHECK(abs.slot_widths(1) == std::vector<int>{2});
        const auto moves = c.event_migrations();
        REQUIRE(moves.size() == 1);
        CHECK(moves[0].job == "j1_0");
        CHECK(moves[0].from_node == 1);
        CHECK(moves[0].to_node == 0);
        CHECK(moves[0].to_gpus == std::vector<int>{4, 5, 6, 7});
    }
}

TEST_CASE("Compact merges {4} and {2,2,2}, which no single slot move improves", "[placement][abs][compact]") {
    LiveCluster c(state_of(2, {{4}, {2, 2, 2}}));
    AbsEngine abs(c, {});
    abs.compact();
    require_valid(abs);
    CHECK(abs.stats().partial_slotted == 1);
    CHECK(abs.stats().slotted_with_room == 1);
}

TEST_CASE("the pool pass drains the sparsest pool nodes into the fullest", "[placement][abs][compact]") {
    LiveCluster c(state_of(4, {{1, 1}, {1, 1, 1, 1, 1}, {1, 1, 1}}));
    AbsEngine abs(c, {});
    abs.compact();
    require_valid(abs);
    const auto st = abs.stats();
    CHECK(st.pool == 2);
    CHECK(st.partial_pool == 1);
    CHECK(c.node(1).used == 8);
}

TEST_CASE("Place: an anchor takes the best-fit slotted node, else an empty one", "[placement][abs][place]") {
    LiveCluster c(state_of(4, {{4, 2}, {2}}));  // D = 2 and D = 6
    AbsEngine abs(c, {});
    const JobId two = add(c, "two", 1, 2);
    REQUIRE(abs.place(c.job(two).instances[0]));
    CHECK(c.instance(c.job(two).instances[0]).node == 0);  // D = 2 fits best
    const JobId four = add(c, "four", 1, 4);
    REQUIRE(abs.place(c.job(four).instances[0]));
    CHECK(c.instance(c.job(four).instances[0]).node == 1);
    const JobId eight = add(c, "eight", 1, 8);
    REQUIRE(abs.place(c.job(eight).instances[0]));
    CHECK(c.instance(c.job(eight).instances[0]).node == 2);
    require_valid(abs);
}

TEST_CASE("Place: a 3-GPU anchor draws its filler from the sparsest pool node", "[placement][abs][place]") {
    LiveCluster c(state_of(4, {{1, 1, 1}, {1}}));
    AbsEngine abs(c, {});
    const JobId j = add(c, "fuf", 1, 3);
    c.begin_event();
    REQUIRE(abs.arrive(j));
    require_valid(abs);
    const InstanceId a = c.job(j).instances[0];
    CHECK(abs.role(a) == Role::anchor);
    CHECK(abs.stats().vacant_slots == 0);
    CHECK(abs.kind(1) == NodeKind::empty);  // its only instance became the filler
    const auto moves = c.event_migrations();
    REQUIRE(moves.size() == 1);
    CHECK(moves[0].job == "j1_0");
    CHECK(moves[0].to_node == c.instance(a).node);
}

TEST_CASE("Place: a 1-GPU instance takes a vacancy, else the fullest pool node with room, else an empty node",
          "[placement][abs][place]") {
    LiveCluster c(state_of(4, {{3}, {1, 1, 1, 1, 1, 1}, {1, 1}}));  // a 3 without filler, pools of 6 and 2
    AbsEngine abs(c, {});
    REQUIRE(abs.stats().vacant_slots == 1);
    const JobId j = add(c, "ones", 4, 1);
    for (const InstanceId i : c.job(j).instances)
        REQUIRE(abs.place(i));
    const auto& ids = c.job(j).instances;
    CHECK(abs.role(ids[0]) == Role::filler);
    CHECK(c.instance(ids[1]).node == 1);
    CHECK(c.instance(ids[2]).node == 1);
    CHECK(c.instance(ids[3]).node == 2);
    require_valid(abs);
}

TEST_CASE("Remove: a departing filler is replaced from the pool, a departing anchor rehomes its fillers",
          "[placement][abs][remove]") {
    ClusterState s = state_of(4, {{3, 1}, {1, 1}});
    LiveCluster c(s);
    AbsEngine abs(c, {});
    REQUIRE(abs.stats().vacant_slots == 0);
    const JobId filler_job = c.find_job("j0_1");
    c.begin_event();
    abs.depart(filler_job);
    c.drop_job(filler_job);
    require_valid(abs);
    CHECK(abs.stats().vacant_slots == 0);  // refilled
    CHECK(c.node(1).used == 1);
    CHECK(c.event_migrations().size() == 1);

    const JobId anchor_job = c.find_job("j0_0");
    c.begin_event();
    abs.depart(anchor_job);
    c.drop_job(anchor_job);
    require_valid(abs);
    // The filler joins the pool node with room; node 0 is empty again.
    CHECK(abs.kind(0) == NodeKind::empty);
    CHECK(c.node(1).used == 2);
}

TEST_CASE("strict ABS makes a 1-GPU instance wait beside free unprofiled GPUs, relaxed pins it there",
          "[placement][abs][relaxed]") {
    const auto state = state_of(2, {{4, 2}, {1, 1, 1, 1, 1, 1, 1, 1}});
    {
        LiveCluster c(state);
        AbsEngine abs(c, {});
        const JobId j = add(c, "one", 1, 1);
        const auto before = c.snapshot();
        CHECK_FALSE(abs.arrive(j));
        CHECK(abs.last_failure() == c.job(j).instances[0]);
        CHECK(c.snapshot() == before);
        require_valid(abs);
    }
    {
        LiveCluster c(state);
        AbsEngine abs(c, {true, CompactRule::corrected});
        const JobId j = add(c, "one", 1, 1);
        REQUIRE(abs.arrive(j));
        CHECK(abs.role(c.job(j).instances[0]) == Role::pinned);
        CHECK(c.instance(c.job(j).instances[0]).node == 0);
        CHECK(abs.unprofiled(0) == 1);
        require_valid(abs);
    }
}

TEST_CASE("admission is all or nothing: a job that fails half-way leaves the state as it was",
          "[placement][abs][admission]") {
    // Two empty nodes and a pool: a 3x3 job fits two anchors per node... only 2 nodes x 2 slots = 4 >= 3, so ask 5.
    LiveCluster c(state_of(3, {{1, 1, 1, 1, 1}}));
    AbsEngine abs(c, {});
    const auto before = c.snapshot();
    const JobId j = add(c, "big", 5, 3);
    c.begin_event();
    CHECK_FALSE(abs.arrive(j));
    CHECK(abs.last_failure() == c.job(j).instances[4]);
    CHECK(c.snapshot() == before);  // fillers drawn for the first four anchors went back to their GPUs
    CHECK(c.event_migrations().empty());
    c.drop_job(j);
    require_valid(abs);
    const JobId ok = add(c, "ok", 4, 3);
    REQUIRE(abs.arrive(ok));
    require_valid(abs);
    CHECK(abs.stats().vacant_slots == 0);  // 4 vacancies, 5 pooled 1-GPU instances
}

TEST_CASE("a state outside ABS: what does not fit is pinned, a node of pinned instances is outside",
          "[placement][abs][read]") {
    // n0: 3+3+2 fills the node, so no slot can keep its vacancy free; n1: a 4 and three 1-GPU instances beyond
    // its (empty) vacancy; n2: a 6 on a 6-GPU node (width 8 > 6).
    ClusterState s = state_of(2, {{3, 3, 2}, {4, 1, 1, 1}});
    s.nodes.push_back({"small", 6});
    s.instances.push_back({"six", "small", 6, {}});
    LiveCluster c(s);
    AbsEngine abs(c, {});
    require_valid(abs);
    CHECK(abs.kind(0) == NodeKind::outside);
    CHECK(abs.role(c.job(c.find_job("j0_2")).instances[0]) == Role::pinned);
    CHECK(abs.kind(1) == NodeKind::slotted);
    CHECK(abs.slot_widths(1) == std::vector<int>{4});
    CHECK(abs.role(c.job(c.find_job("j1_0")).instances[0]) == Role::anchor);
    CHECK(abs.stats().pinned_instances == 7);  // 3+3+2, three 1-GPU, the 6
    CHECK(abs.kind(2) == NodeKind::outside);
    CHECK(abs.unprofiled(1) == 1);
    // Departing pinned instances frees their GPUs for ABS.
    c.begin_event();
    abs.depart(c.find_job("six"));
    c.drop_job(c.find_job("six"));
    CHECK(abs.kind(2) == NodeKind::empty);
    require_valid(abs);
}

TEST_CASE("a filler with nowhere to go stays pinned and returns at the next Compact that has room",
          "[placement][abs][remove]") {
    // n0: a 3 (+ filler) and a 4; n1: a full pool; nothing empty. The 3 departs: its filler has no place.
    LiveCluster c(state_of(2, {{3, 1, 4}, {1, 1, 1, 1, 1, 1, 1, 1}}));
    AbsEngine abs(c, {});
    REQUIRE(abs.stats().vacant_slots == 0);
    c.begin_event();
    abs.depart(c.find_job("j0_0"));
    c.drop_job(c.find_job("j0_0"));
    require_valid(abs);
    const InstanceId filler = c.job(c.find_job("j0_1")).instances[0];
    CHECK(abs.role(filler) == Role::pinned);
    CHECK(c.event_migrations().empty());
    // A pooled instance departs: the pool has room, and the orphan moves there.
    c.begin_event();
    abs.depart(c.find_job("j1_0"));
    c.drop_job(c.find_job("j1_0"));
    require_valid(abs);
    CHECK(abs.role(filler) == Role::pooled);
    CHECK(c.instance(filler).node == 1);
    CHECK(c.event_migrations().size() == 1);
    CHECK(abs.stats().pinned_instances == 0);
}
