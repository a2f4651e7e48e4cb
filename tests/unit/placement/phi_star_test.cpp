// Φ*: the closed form under WCC, the exact search, and both against the brute-force oracle on random states.
#include <catch2/catch.hpp>

#include <functional>
#include <random>

#include "gpuops/core/error.hpp"
#include "gpuops/placement/phi_star.hpp"

#include "unit/placement/brute_force.hpp"

using namespace gpuops;
using placement::min_partial_nodes;
using placement::PackingProblem;
using placement::PhiStarMethod;

namespace {

/// A problem from instance sizes and node capacities, as lists.
PackingProblem problem_of(const std::vector<int>& sizes, const std::vector<int>& capacities) {
    PackingProblem p;
    const int largest = std::max(*std::max_element(capacities.begin(), capacities.end()),
                                 sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end()));
    p.instances_by_size.assign(static_cast<std::size_t>(largest) + 1, 0);
    p.nodes_by_capacity.assign(static_cast<std::size_t>(largest) + 1, 0);
    for (const int s : sizes)
        ++p.instances_by_size[static_cast<std::size_t>(s)];
    for (const int c : capacities)
        ++p.nodes_by_capacity[static_cast<std::size_t>(c)];
    return p;
}

/// Instances placed at random into the nodes (so a packing exists): sizes from `size_pick`.
std::vector<int> random_placed_sizes(std::mt19937& rng, const std::vector<int>& capacities, int max_items,
                                     const std::function<int()>& size_pick) {
    std::vector<int> free = capacities;
    std::vector<int> sizes;
    std::uniform_int_distribution<std::size_t> node(0, capacities.size() - 1);
    for (int tries = 0; tries < 4 * max_items && static_cast<int>(sizes.size()) < max_items; ++tries) {
        const int s = size_pick();
        auto& f = free[node(rng)];
        if (s <= f) {
            f -= s;
            sizes.push_back(s);
        }
    }
    return sizes;
}

}  // namespace

TEST_CASE("WCC is n1 >= n3 + 3 n5 + 2 n6 + n7, its deficit the 1-GPU instances missing", "[placement][phi_star]") {
    CHECK(placement::check_wcc(std::vector<std::int64_t>{0, 4, 0, 1, 0, 1, 0, 0, 0}) == placement::Wcc{true, 0});
    CHECK(placement::check_wcc(std::vector<std::int64_t>{0, 3, 0, 1, 0, 1, 0, 0, 0}) == placement::Wcc{false, 1});
    CHECK(placement::check_wcc(std::vector<std::int64_t>{0, 0, 5, 0, 3, 0, 1, 1, 9}) == placement::Wcc{false, 3});
    CHECK(placement::check_wcc(std::vector<std::int64_t>{0, 0, 5, 0, 3}).holds);  // only FF sizes: always
}

TEST_CASE("under WCC Φ* is 1 exactly when T mod 8 != 0 (closed form)", "[placement][phi_star]") {
    // The paper's tightness example: {4,2} on one node, then a 3x4-GPU job; T = 6 + 12 + 8k ≡ 2 (mod 8).
    const auto tight = min_partial_nodes(problem_of({4, 2, 4, 4, 4, 8, 8}, std::vector<int>(8, 8)));
    CHECK(tight.value == 1);
    CHECK(tight.exact);
    CHECK(tight.method == PhiStarMethod::closed_form);
    const auto zero = min_partial_nodes(problem_of({4, 2, 1, 1, 3, 1, 7, 1, 4}, std::vector<int>(4, 8)));
    CHECK(zero.value == 0);
    CHECK(zero.method == PhiStarMethod::closed_form);
    CHECK(min_partial_nodes(problem_of({}, {8, 8})).value == 0);
}

TEST_CASE("without WCC the search finds Φ* (the paper's examples)", "[placement][phi_star]") {
    // Free (3, 5, 2) on three nodes: a 5, a 3 and a 4+2 in use. 5+3 fills a node, 4+2 leaves one partial.
    const auto blocked = min_partial_nodes(problem_of({5, 3, 4, 2}, {8, 8, 8}));
    CHECK(blocked.value == 1);
    CHECK(blocked.exact);
    CHECK(blocked.method == PhiStarMethod::search);
    // Forced partial nodes: a 4 and two 5s can share no node.
    CHECK(min_partial_nodes(problem_of({4, 5, 5}, {8, 8, 8, 8})).value == 3);
    // WCC fails (n3 = 2, n1 = 0), yet 3 + 3 + 2 = 8: WCC is sufficient, not necessary.
    CHECK(min_partial_nodes(problem_of({3, 3, 2}, {8, 8})).value == 0);
    // 6s with 1+1 fill nodes; the odd 5 left without a 3 or 2+1 stays partial with the 4s paired.
    CHECK(min_partial_nodes(problem_of({6, 1, 1, 6, 1, 1, 5, 4, 4}, std::vector<int>(5, 8))).value == 1);
}

TEST_CASE("Φ* equals the brute-force oracle on thousands of random 8-GPU states", "[placement][phi_star]") {
    std::mt19937 rng(20260515);
    int closed = 0;
    int searched = 0;
    for (int round = 0; round < 3000; ++round) {
        const int nodes = 1 + static_cast<int>(rng() % 5);
        const std::vector<int> caps(static_cast<std::size_t>(nodes), 8);
        // Half the rounds draw every size alike (WCC mostly fails), half mostly 1/2/4/8 (WCC mostly holds).
        const bool ff = round % 2 == 0;
        std::uniform_int_distribution<int> any(1, 8);
        const std::vector<int> ff_sizes{1, 1, 1, 2, 4, 8, 3, 1};
        const auto sizes = random_placed_sizes(
            rng, caps, 11, [&] { return ff ? ff_sizes[static_cast<std::size_t>(any(rng) - 1)] : any(rng); });
        const auto got = min_partial_nodes(problem_of(sizes, caps));
        INFO("round " << round << ", " << nodes << " nodes, sizes " << Catch::Detail::stringify(sizes));
        REQUIRE(got.exact);
        REQUIRE(got.value == test::brute_force_phi_star(sizes, caps));
        (got.method == PhiStarMethod::closed_form ? closed : searched) += 1;
    }
    CHECK(closed > 500);  // both paths were exercised
    CHECK(searched > 500);
}

TEST_CASE("Φ* equals the oracle for other node sizes and mixed clusters", "[placement][phi_star]") {
    std::mt19937 rng(77);
    const std::vector<std::vector<int>> shapes{{4, 4, 4, 4}, {2, 2, 2}, {8, 4, 2, 1},   {8, 8, 4, 4},
                                               {6, 6, 6},    {16, 8},   {1, 1, 2, 8, 8}};
    for (int round = 0; round < 2000; ++round) {
        const auto& caps = shapes[static_cast<std::size_t>(round) % shapes.size()];
        const int largest = *std::max_element(caps.begin(), caps.end());
        std::uniform_int_distribution<int> size(1, largest);
        const auto sizes = random_placed_sizes(rng, caps, 10, [&] { return size(rng); });
        const auto got = min_partial_nodes(problem_of(sizes, caps));
        INFO("round " << round << ", nodes " << Catch::Detail::stringify(caps) << ", sizes "
                      << Catch::Detail::stringify(sizes));
        REQUIRE(got.exact);
        REQUIRE(got.value == test::brute_force_phi_star(sizes, caps));
    }
}

TEST_CASE("a search past its budget reports a lower bound, never more than Φ*", "[placement][phi_star]") {
    const std::vector<int> sizes{5, 5, 5, 2, 2, 1, 3, 3, 6, 7, 3, 3, 3, 2, 1};
    const std::vector<int> caps(9, 8);
    const int exact = test::brute_force_phi_star(sizes, caps);
    const auto cut = min_partial_nodes(problem_of(sizes, caps), 1);
    CHECK_FALSE(cut.exact);
    CHECK(cut.method == PhiStarMethod::lower_bound);
    CHECK(cut.value <= exact);
    CHECK(cut.value >= 1);  // T = 51 is not a multiple of 8
    const auto full = min_partial_nodes(problem_of(sizes, caps));
    CHECK(full.exact);
    CHECK(full.value == exact);
}

TEST_CASE("large states stay fast: thousands of nodes are solved by pairings and bounds", "[placement][phi_star]") {
    // 3000 5-GPU instances with no 3, 2 or 1 to fill them: every one is a partial node, found without search.
    auto p = problem_of({5}, std::vector<int>(1, 8));
    p.instances_by_size[5] = 3000;
    p.instances_by_size[4] = 501;
    p.nodes_by_capacity[8] = 4000;
    const auto got = min_partial_nodes(p);
    CHECK(got.exact);
    CHECK(got.value == 3001);  // 250 4+4 pairs, the odd 4 alone
}

TEST_CASE("no packing: an instance larger than every node, or more GPUs than the nodes have", "[placement][phi_star]") {
    CHECK_THROWS_WITH(min_partial_nodes(problem_of({16}, {8, 8})),
                      "an instance of 16 GPUs is larger than every node (at most 8)");
    CHECK_THROWS_WITH(min_partial_nodes(problem_of({8, 8, 1}, {8, 8})),
                      "the instances hold 17 GPUs, more than the 16 the nodes have");
    CHECK_THROWS_AS(min_partial_nodes(problem_of({5, 5}, {8, 2})), DataError);  // fits by volume, not by node
}
