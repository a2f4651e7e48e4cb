// The rank rule and the view hash: survivors keep order and close gaps, joiners are appended; hashes differ.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "gpuops/rescale/view.hpp"

using namespace gpuops::rescale;

TEST_CASE("next_members closes gaps in order and appends joiners") {
    const std::vector<MemberId> current{10, 11, 12, 13, 14};
    CHECK(next_members(current, {11, 13}, std::vector<MemberId>{20, 21}) == std::vector<MemberId>{10, 12, 14, 20, 21});
    CHECK(next_members(current, {}, std::vector<MemberId>{}) == current);
    CHECK(next_members({}, {}, std::vector<MemberId>{3, 1, 2}) == std::vector<MemberId>{3, 1, 2});
    // A joiner that is also removed never appears; a joiner already present is not duplicated.
    CHECK(next_members(current, {20}, std::vector<MemberId>{20, 10}) == current);
}

TEST_CASE("next_members as a property over random inputs") {
    std::mt19937_64 rng(7);
    for (int round = 0; round < 2000; ++round) {
        std::vector<MemberId> current;
        const auto n = rng() % 12;
        for (MemberId id = 1; id <= n; ++id)
            if (rng() % 3 != 0) current.push_back(id);
        std::shuffle(current.begin(), current.end(), rng);
        std::set<MemberId> removed;
        for (const MemberId id : current)
            if (rng() % 4 == 0) removed.insert(id);
        std::vector<MemberId> joiners;
        for (MemberId id = 100; id < 100 + rng() % 5; ++id)
            joiners.push_back(id);

        const auto next = next_members(current, removed, joiners);
        // Bijection onto 0..n-1: no duplicates.
        auto sorted = next;
        std::sort(sorted.begin(), sorted.end());
        REQUIRE(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
        // Survivors first, in their old relative order; then the joiners in admission order.
        std::vector<MemberId> survivors;
        for (const MemberId id : current)
            if (!removed.contains(id)) survivors.push_back(id);
        REQUIRE(next.size() == survivors.size() + joiners.size());
        REQUIRE(std::equal(survivors.begin(), survivors.end(), next.begin()));
        REQUIRE(
            std::equal(joiners.begin(), joiners.end(), next.begin() + static_cast<std::ptrdiff_t>(survivors.size())));
    }
}

TEST_CASE("view_hash depends on the epoch, the members and their order") {
    const std::vector<MemberId> a{1, 2, 3};
    const std::vector<MemberId> b{2, 1, 3};
    CHECK(view_hash(5, a) == view_hash(5, a));
    CHECK(view_hash(5, a) != view_hash(6, a));
    CHECK(view_hash(5, a) != view_hash(5, b));
    CHECK(view_hash(5, std::vector<MemberId>{1, 23}) != view_hash(5, std::vector<MemberId>{12, 3}));
    CHECK(view_hash(5, a).size() == 16);
    // The canonical text "2:1,2,3" under FNV-1a 64, as rescale-protocol.md's example shows it: any client, in any
    // language, recomputes this from a PREPARE.
    CHECK(view_hash(2, a) == "c2c47358fc87105f");
    const GroupView v = make_view(5, a);
    CHECK(v.hash == view_hash(5, a));
    CHECK(v.rank_of(3) == 2);
    CHECK_FALSE(v.rank_of(4).has_value());
}
