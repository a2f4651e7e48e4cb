// The SIF report on the paper's examples (with the corrected values), the histogram and FGD.
#include <catch2/catch.hpp>

#include "gpuops/placement/sif.hpp"

using namespace gpuops;
using placement::ClusterState;

namespace {

/// `n` 8-GPU nodes n0..; `placed[i]` lists the instance sizes on node i.
ClusterState state_of(int n, const std::vector<std::vector<int>>& placed) {
    ClusterState s;
    for (int i = 0; i < n; ++i)
        s.nodes.push_back({"n" + std::to_string(i), 8});
    for (std::size_t i = 0; i < placed.size(); ++i)
        for (const int g : placed[i])
            s.instances.push_back({"j", "n" + std::to_string(i), g, {}});
    return s;
}

}  // namespace

TEST_CASE("the paper's tightness example has SIF = 1/N, not 2/N", "[placement][sif]") {
    // {4,2} on one node, a 3x4-GPU job by best fit: {4,4} and {4}; two full 8-GPU nodes; N = 8.
    const auto r = placement::score(state_of(8, {{4, 2}, {4, 4}, {4}, {8}, {8}}));
    CHECK(r.phi_pi == 2);
    CHECK(r.phi_star.value == 1);
    CHECK(r.used_gpus_mod_g == 2);
    CHECK(r.n_sif == 1);
    CHECK(r.sif == Approx(1.0 / 8));
    CHECK(r.wcc->holds);
}

TEST_CASE("SIF = 2/N needs partial loads summing to 0 mod 8: pool 2 + slotted 6", "[placement][sif]") {
    const auto r = placement::score(state_of(5, {{1, 1}, {4, 2}, {8}}));
    CHECK(r.phi_pi == 2);
    CHECK(r.phi_star.value == 0);
    CHECK(r.sif == Approx(2.0 / 5));
    CHECK(r.f_pi == Approx(2.0 / 5));
    CHECK(r.f_star == 0);
}

TEST_CASE("the (3,5,2)-free example: two avoidable partial nodes, found by search", "[placement][sif]") {
    const auto r = placement::score(state_of(3, {{5}, {3}, {4, 2}}));
    CHECK(r.nodes_by_free_gpus == std::vector<std::int64_t>{0, 0, 1, 1, 0, 1, 0, 0, 0});
    CHECK(r.phi_pi == 3);
    CHECK(r.phi_star.value == 1);
    CHECK(r.phi_star.method == placement::PhiStarMethod::search);
    CHECK(r.n_sif == 2);
    CHECK_FALSE(r.wcc->holds);
    CHECK(r.wcc->deficit == 4);
    // FGD: shares 1/4 each of 2, 3, 4, 5. Free 3 -> 3 * (4,5) = 1.5; free 5 -> 0; free 2 -> 2 * (3,4,5) = 1.5.
    CHECK(r.fgd.fragment_gpus == Approx(3.0));
    CHECK(r.fgd.free_gpus == 10);
    CHECK(r.fgd.fragment_ratio == Approx(0.3));
}

TEST_CASE("forced partial nodes are not the scheduler's: SIF = 0", "[placement][sif]") {
    const auto r = placement::score(state_of(4, {{4}, {5}, {5}}));
    CHECK(r.phi_pi == 3);
    CHECK(r.phi_star.value == 3);
    CHECK(r.sif == 0);
}

TEST_CASE("mixed node sizes: no G, no WCC, partial means below each node's own capacity", "[placement][sif]") {
    ClusterState s;
    s.nodes = {{"big", 8}, {"small", 4}, {"tiny", 2}};
    s.instances = {{"a", "big", 4, {}}, {"b", "small", 2, {}}, {"c", "tiny", 2, {}}};
    const auto r = placement::score(s);
    CHECK_FALSE(r.gpus_per_node.has_value());
    CHECK_FALSE(r.used_gpus_mod_g.has_value());
    CHECK_FALSE(r.wcc.has_value());
    CHECK(r.phi_pi == 2);          // big (4/8) and small (2/4); tiny is full
    CHECK(r.phi_star.value == 0);  // 4 + 2 + 2 fill the big node
    CHECK(r.full_nodes == 1);
    const auto doc = placement::to_json(r, "t");
    CHECK(doc["gpus_per_node"].is_null());
    CHECK(doc["wcc"].is_null());
    CHECK(doc["phi_star_method"] == "search");
}

TEST_CASE("the JSON report keeps its keys in a stable order", "[placement][sif]") {
    const auto doc = placement::to_json(placement::score(state_of(2, {{4}})), "t");
    std::vector<std::string> keys;
    for (const auto& [k, v] : doc.items())
        keys.push_back(k);
    CHECK(keys == std::vector<std::string>{"schema",
                                           "schema_version",
                                           "generator",
                                           "nodes",
                                           "gpus_per_node",
                                           "capacity_gpus",
                                           "used_gpus",
                                           "used_gpus_mod_g",
                                           "instances",
                                           "instances_by_gpus",
                                           "instances_from",
                                           "full_nodes",
                                           "empty_nodes",
                                           "phi_pi",
                                           "phi_star",
                                           "phi_star_exact",
                                           "phi_star_method",
                                           "f_pi",
                                           "f_star",
                                           "sif",
                                           "n_sif",
                                           "wcc",
                                           "nodes_by_free_gpus",
                                           "fgd"});
    CHECK(placement::render_text(placement::score(state_of(2, {{4}}))).find("phi_star       1") != std::string::npos);
}
