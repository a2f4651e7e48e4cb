// The deepep-pcie baseline: DeepEP's normal mode without NVLink sends every pair through the NICs.
// Intra-node pairs loop through the source's nearest NIC; other nodes' pairs take their default path.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gpuops/alltoall/deepep.hpp"
#include "gpuops/alltoall/planner.hpp"
#include "gpuops/core/json_io.hpp"
#include "gpuops/topo/cluster.hpp"
#include "gpuops/topo/presets.hpp"

using namespace gpuops::alltoall;
using gpuops::topo::PathKind;
using gpuops::topo::Topology;

namespace {

Topology rail_cluster(int nodes) {
    return gpuops::topo::compose_cluster(gpuops::topo::build_preset("pcie-8gpu-gen4"), nodes,
                                         gpuops::topo::parse_fabric("rail"));
}

}  // namespace

TEST_CASE("deepep-pcie hairpins every intra-node pair through the source's NIC", "[baselines]") {
    const Topology t = gpuops::topo::build_preset("pcie-8gpu-gen4");
    const gpuops::topo::Router router(t);
    const auto demand = load_demand("uniform:bytes=4MiB", t);
    auto deepep = plan_deepep_pcie(demand, router);
    CHECK(deepep.algorithm == "deepep-pcie");
    CHECK_FALSE(deepep.exclusive);
    REQUIRE(deepep.steps.size() == 1);  // everything launched at once
    CHECK(deepep.steps[0].transfers.size() == demand.size() * (demand.size() - 1));
    for (const auto& tr : deepep.steps[0].transfers) {
        CHECK(tr.kind == PathKind::nic_loopback);
        CHECK(tr.via == std::vector{*router.nearest_nic(demand.gpus[tr.src])});
    }
    time_plan(deepep, demand, t, default_model());
    for (const auto& v : check_plan(deepep, demand, router, 5))
        FAIL_CHECK(v);

    // The hairpin only adds edges (the NIC's PCIe link both ways) to each direct path, so it is never faster.
    // On this preset it is not slower either, beyond the hairpin's latency (7697.0 against 7696.6 us): all at
    // once, the socket interconnect binds both, and a NIC's PCIe link is as fast as a GPU's.
    auto direct = plan_direct(demand, router);
    time_plan(direct, demand, t, default_model());
    CHECK(deepep.predicted_time_us >= direct.predicted_time_us);
}

TEST_CASE("deepep-pcie loses to direct P2P where the NIC's link is the narrow one", "[baselines]") {
    // One NIC per socket (pcie-4gpu-direct) or per ten GPUs (pcie-10gpu-1switch): every intra-node byte
    // squeezes through it, where direct P2P spreads over the GPUs' own links (1.6x and 19x in the model).
    for (const char* preset : {"pcie-4gpu-direct", "pcie-10gpu-1switch"}) {
        INFO(preset);
        const Topology t = gpuops::topo::build_preset(preset);
        const gpuops::topo::Router router(t);
        const auto demand = load_demand("uniform:bytes=4MiB", t);
        auto deepep = plan_deepep_pcie(demand, router);
        auto direct = plan_direct(demand, router);
        time_plan(deepep, demand, t, default_model());
        time_plan(direct, demand, t, default_model());
        CHECK(check_plan(deepep, demand, router, 5).empty());
        CHECK(deepep.predicted_time_us > 1.2 * direct.predicted_time_us);
    }
}

TEST_CASE("deepep-pcie sends inter-node pairs on their default path", "[baselines]") {
    const Topology t = rail_cluster(2);
    const gpuops::topo::Router router(t);
    const auto demand = load_demand("zipf:s=1.2,bytes=16MiB,seed=3", t);
    auto plan = plan_deepep_pcie(demand, router);
    REQUIRE(plan.steps.size() == 1);
    std::size_t inter = 0;
    for (const auto& tr : plan.steps[0].transfers) {
        const bool same_node = t.devices[demand.gpus[tr.src]].node == t.devices[demand.gpus[tr.dst]].node;
        if (same_node) {
            CHECK(tr.kind == PathKind::nic_loopback);
        } else {
            CHECK(tr.kind == PathKind::direct);
            CHECK(tr.edges.size() == router.route(demand.gpus[tr.src], demand.gpus[tr.dst]).edges.size());
            ++inter;
        }
    }
    CHECK(inter > 0);
    time_plan(plan, demand, t, default_model());
    for (const auto& v : check_plan(plan, demand, router, 5))
        FAIL_CHECK(v);
}

TEST_CASE("deepep-pcie falls back to direct P2P in a node without a NIC", "[baselines]") {
    const auto spec = gpuops::json_io::parse_document(R"({
      "name": "no-nic", "sockets": {"count": 1, "cpu": {"vendor": "AuthenticAMD", "model_name": "AMD EPYC"},
        "cores": 8, "root_complexes": [{"count": 1, "devices": [
          {"kind": "gpu", "count": 4, "model": "GPU", "link": "16GT/s x16"}]}]}})",
                                                      "no-nic.json");
    const Topology t = gpuops::topo::build_from_spec(spec, "no-nic.json");
    const gpuops::topo::Router router(t);
    const auto demand = load_demand("uniform:bytes=1MiB", t);
    auto plan = plan_deepep_pcie(demand, router);
    REQUIRE(plan.steps.size() == 1);
    for (const auto& tr : plan.steps[0].transfers)
        CHECK(tr.kind == PathKind::direct);
    time_plan(plan, demand, t, default_model());
    CHECK(check_plan(plan, demand, router, 5).empty());
}
