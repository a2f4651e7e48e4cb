// Plans: every algorithm's plans pass the checker on presets × demand families × seeds, never beat the lower
// bound, and BvN on a crossbar meets it; the checker catches broken plans; the lower bound's own properties.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "gpuops/alltoall/planner.hpp"
#include "gpuops/core/error.hpp"
#include "gpuops/topo/cluster.hpp"
#include "gpuops/topo/presets.hpp"

using namespace gpuops::alltoall;
using gpuops::topo::Topology;

namespace {

const std::vector<std::string> families{
    "uniform:bytes=4MiB",
    "zipf:s=0.8,bytes=32MiB,seed={}",
    "zipf:s=1.2,bytes=32MiB,seed={}",
    "hot:experts=1,fraction=0.5,bytes=32MiB,seed={}",
    "moe:experts=64,topk=8,tokens=512,hidden=4096,dtype=bf16,zipf=1.0,seed={}",
};

std::string with_seed(std::string spec, int seed) {
    const auto at = spec.find("{}");
    if (at != std::string::npos) spec.replace(at, 2, std::to_string(seed));
    return spec;
}

ModelParams ideal_model() {
    auto m = default_model();
    m.alpha_us = 0;
    m.eta = {1.0};
    m.latency_scale = 0;
    return m;
}

/// The edge bound with every pair on its default path: never below the cut bound.
double fixed_route_bound_us(const Demand& d, const gpuops::topo::Router& router) {
    std::map<gpuops::topo::EdgeId, double> load;
    for (std::size_t i = 0; i < d.size(); ++i)
        for (std::size_t j = 0; j < d.size(); ++j)
            if (i != j)
                for (auto e : router.route(d.gpus[i], d.gpus[j]).edges)
                    load[e] += static_cast<double>(d.at(i, j));
    double bound = 0;
    for (const auto& [e, bytes] : load)
        bound = std::max(bound, bytes / router.topology().edge(e).bandwidth);
    return bound * 1e6;
}

/// A preset, alone or as a cluster.
struct Platform {
    const char* preset;
    int nodes = 1;
    const char* fabric = "rail";
};

Topology build_platform(const Platform& p) {
    Topology node = gpuops::topo::build_preset(p.preset);
    return p.nodes == 1 ? node : gpuops::topo::compose_cluster(node, p.nodes, gpuops::topo::parse_fabric(p.fabric));
}

double geomean(const std::vector<double>& v) {
    double s = 0;
    for (double x : v)
        s += std::log(x);
    return std::exp(s / static_cast<double>(v.size()));
}

}  // namespace

TEST_CASE("every algorithm's plans deliver every byte once and never beat the lower bound", "[planner]") {
    // Single nodes (the 10-GPU box stands for 2.7e8 channels: too many to list, so VarioPath packs), and
    // clusters over hierarchical catalogs.
    for (const Platform& platform :
         {Platform{"pcie-4gpu-direct"}, Platform{"pcie-8gpu-gen4"}, Platform{"pcie-8gpu-gen5"},
          Platform{"pcie-10gpu-1switch"}, Platform{"pcie-8gpu-gen4", 2, "rail"},
          Platform{"pcie-4gpu-direct", 3, "nonblocking"}}) {
        const Topology t = build_platform(platform);
        const gpuops::topo::Router router(t);
        const auto catalog = Catalog::build(t);
        for (const auto& family : families) {
            for (int seed : {1, 2}) {
                const auto spec = with_seed(family, seed);
                INFO(platform.preset << " x" << platform.nodes << " " << spec);
                const auto demand = load_demand(spec, t);
                for (const auto& algo : algorithm_names()) {
                    INFO(algo);
                    const auto plan = make_plan(algo, demand, router, &catalog, default_model());
                    const auto violations = check_plan(plan, demand, router, 5);
                    for (const auto& v : violations)
                        FAIL_CHECK(v);
                    CHECK(plan.predicted_time_us >= plan.lower_bound_us);
                    CHECK(plan.efficiency <= 1.0);
                    CHECK(plan.efficiency > 0);
                    if (algo == "variopath") CHECK(plan.exclusive);
                }
                CHECK(cut_lower_bound_us(demand, t) <= fixed_route_bound_us(demand, router) * (1 + 1e-12));
            }
        }
    }
}

TEST_CASE("packing stays close to the exhaustive scan of every channel instance on one node", "[planner]") {
    const Topology t = gpuops::topo::build_preset("pcie-8gpu-gen4");
    const gpuops::topo::Router router(t);
    const auto catalog = Catalog::build(t);
    const VarioPathPlanner scan(catalog, router, StepSearch::scan);
    const VarioPathPlanner packing(catalog, router);
    REQUIRE(scan.search() == StepSearch::scan);
    REQUIRE(packing.search() == StepSearch::packing);
    std::vector<double> by_scan;
    std::vector<double> by_packing;
    for (const auto& family : families) {
        const auto demand = load_demand(with_seed(family, 3), t);
        for (const auto* planner : {&scan, &packing}) {
            auto plan = planner->plan(demand, default_model());
            time_plan(plan, demand, t, default_model());
            INFO(family);
            for (const auto& v : check_plan(plan, demand, router, 5))
                FAIL_CHECK(v);
            (planner == &scan ? by_scan : by_packing).push_back(plan.efficiency);
        }
    }
    INFO("scan " << geomean(by_scan) << ", packing " << geomean(by_packing));
    CHECK(geomean(by_packing) >= 0.9 * geomean(by_scan));
    CHECK(geomean(by_packing) >= 0.75);
}

TEST_CASE("VarioPath plans a rail cluster node level first and beats the baselines", "[planner]") {
    for (const char* fabric : {"rail", "rail-only"}) {
        INFO(fabric);
        const Topology t = build_platform({"pcie-8gpu-gen4", 2, fabric});
        const gpuops::topo::Router router(t);
        const auto catalog = Catalog::build(t);
        REQUIRE(catalog.method() == CatalogMethod::hierarchical);
        CHECK_THROWS_AS(VarioPathPlanner(catalog, router, StepSearch::scan), gpuops::DataError);
        const VarioPathPlanner planner(catalog, router);
        CHECK(planner.search() == StepSearch::packing);
        const bool spine = std::string(fabric) == "rail";
        for (const char* spec : {"zipf:s=1.2,bytes=64MiB,seed=1",
                                 "moe:experts=64,topk=8,tokens=2048,hidden=4096,dtype=bf16,zipf=1.2,seed=1"}) {
            INFO(spec);
            const auto demand = load_demand(spec, t);
            const auto plan = make_plan("variopath", demand, router, &catalog, default_model());
            for (const auto& v : check_plan(plan, demand, router, 5))
                FAIL_CHECK(v);
            // Across nodes a transfer goes NIC k to NIC k (rail-aligned) or, where a spine joins the rails, from
            // the source's nearest NIC to the destination's (across rails, no socket interconnect crossed).
            std::size_t aligned = 0;
            std::size_t across_rails = 0;
            for (const auto& step : plan.steps)
                for (const auto& tr : step.transfers) {
                    const auto src = demand.gpus[tr.src];
                    const auto dst = demand.gpus[tr.dst];
                    if (t.device(src).node == t.device(dst).node) continue;
                    REQUIRE(tr.via.size() == 2);
                    if (t.device(tr.via[0]).name == t.device(tr.via[1]).name) {
                        ++aligned;
                    } else {
                        ++across_rails;
                        CHECK(router.nearest_nic(src) == tr.via[0]);
                        CHECK(router.nearest_nic(dst) == tr.via[1]);
                        for (auto e : tr.edges)
                            CHECK(t.links[t.edge(e).link].kind != gpuops::topo::LinkKind::socket_interconnect);
                    }
                }
            CHECK(aligned > 0);
            CHECK((across_rails > 0) == spine);
            for (const char* baseline : {"direct", "pairwise", "bvn"}) {
                INFO(baseline);
                CHECK(plan.predicted_time_us <
                      make_plan(baseline, demand, router, &catalog, default_model()).predicted_time_us);
            }
        }
        // Wrong size: the error names both sizes.
        const auto small = load_demand("uniform:bytes=1MiB", gpuops::topo::build_preset("pcie-8gpu-gen4"));
        CHECK_THROWS_WITH(planner.plan(small, default_model()), Catch::Contains("8x8") && Catch::Contains("16 GPUs"));
    }
}

TEST_CASE("on a non-blocking crossbar the bvn plan takes max line sum / capacity", "[planner]") {
    // Ten GPUs under one switch: any two pairs with distinct ends share no edge, so each permutation of BvN
    // is contention-free and the plan meets the per-GPU bound exactly (no overhead in the ideal model).
    const Topology t = gpuops::topo::build_preset("pcie-10gpu-1switch");
    const gpuops::topo::Router router(t);
    for (const char* spec : {"zipf:s=1.2,bytes=8MiB,seed=3", "hot:experts=2,fraction=0.6,bytes=8MiB,seed=4",
                             "moe:experts=40,topk=4,tokens=256,hidden=2048,zipf=0.8,seed=5"}) {
        INFO(spec);
        const auto demand = load_demand(spec, t);
        double line = 0;
        for (std::size_t i = 0; i < demand.size(); ++i) {
            double row = 0;
            double col = 0;
            for (std::size_t j = 0; j < demand.size(); ++j)
                if (i != j) {
                    row += static_cast<double>(demand.at(i, j));
                    col += static_cast<double>(demand.at(j, i));
                }
            line = std::max({line, row, col});
        }
        const double capacity = t.links[*t.uplink(demand.gpus[0])].bandwidth;
        const auto plan = make_plan("bvn", demand, router, nullptr, ideal_model());
        CHECK(check_plan(plan, demand, router, 5).empty());
        CHECK(plan.predicted_time_us == Approx(line / capacity * 1e6).epsilon(1e-9));
        CHECK(plan.lower_bound_us == Approx(line / capacity * 1e6).epsilon(1e-9));
        CHECK(plan.steps.size() <= demand.size() * demand.size());
    }
}

TEST_CASE("the checker names the first broken byte range, path or shared edge", "[planner]") {
    const Topology t = gpuops::topo::build_preset("pcie-8gpu-gen4");
    const gpuops::topo::Router router(t);
    const auto catalog = Catalog::build(t);
    const auto demand = load_demand("zipf:s=1.0,bytes=16MiB,seed=7", t);
    const auto good = make_plan("variopath", demand, router, &catalog, default_model());
    REQUIRE(check_plan(good, demand, router, 5).empty());
    REQUIRE(good.steps.size() > 2);

    SECTION("a transfer left out") {
        auto bad = good;
        bad.steps[1].transfers.erase(bad.steps[1].transfers.begin());
        const auto v = check_plan(bad, demand, router, 5);
        REQUIRE_FALSE(v.empty());
        CHECK_THAT(v.front(), Catch::Contains("never sent"));
    }
    SECTION("a transfer sent twice") {
        auto bad = good;
        bad.steps[2].transfers.push_back(bad.steps[0].transfers.front());
        const auto v = check_plan(bad, demand, router, 5);
        REQUIRE_FALSE(v.empty());
        CHECK_THAT(v.back(), Catch::Contains("sent twice") || Catch::Contains("carries two transfers") ||
                                 Catch::Contains("twice in one step"));
    }
    SECTION("two transfers on one edge in an exclusive step") {
        // gpu0->gpu4 and gpu1->gpu5 both climb sw0's uplink and cross the socket interconnect.
        auto bad = good;
        const auto g0 = std::size_t{0};
        const auto path_a = router.route(demand.gpus[0], demand.gpus[4]);
        const auto path_b = router.route(demand.gpus[1], demand.gpus[5]);
        Step step;
        step.transfers.push_back(make_transfer(demand, g0, 4, path_a, chunk_offset(demand, 0, 4), 0));
        step.transfers.push_back(make_transfer(demand, 1, 5, path_b, chunk_offset(demand, 1, 5), 0));
        bad.steps.push_back(step);
        const auto v = check_plan(bad, demand, router, 5);
        REQUIRE_FALSE(v.empty());
        CHECK_THAT(v.front(), Catch::Contains("carries two transfers in one step"));
    }
    SECTION("a path that is not the topology's") {
        auto bad = good;
        bad.steps[0].transfers[0].edges.pop_back();
        const auto v = check_plan(bad, demand, router, 5);
        REQUIRE_FALSE(v.empty());
        CHECK_THAT(v.front(), Catch::Contains("does not follow its"));
    }
    SECTION("the document round trip keeps a checkable plan") {
        const auto doc = to_json(good, demand, t);
        const auto back = plan_from_json(doc, demand, router, "plan.json");
        CHECK(back.steps.size() == good.steps.size());
        CHECK(check_plan(back, demand, router, 5).empty());
        CHECK(doc["predicted_time_us"].get<double>() == Approx(good.predicted_time_us).epsilon(1e-6));
    }
}

TEST_CASE("the cut bound holds every GPU's own link and the socket interconnect", "[planner]") {
    const Topology t = gpuops::topo::build_preset("pcie-8gpu-gen4");
    auto demand = load_demand("uniform:bytes=1MiB", t);
    // All of socket0's GPUs send 10 MiB to each GPU of socket1: the interconnect carries 16 × 10 MiB.
    for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t j = 4; j < 8; ++j)
            demand.at(i, j) = 10 << 20;
    double upi = 0;
    for (const auto& l : t.links)
        if (l.kind == gpuops::topo::LinkKind::socket_interconnect) upi = l.bandwidth;
    const double cross = 16.0 * (10 << 20);
    CHECK(cut_lower_bound_us(demand, t) >= cross / upi * 1e6 * (1 - 1e-12));
}
