// Routing on the 8-GPU preset: every GPU pair's path crosses exactly the links the PCIe tree implies.
#include <catch2/catch.hpp>

#include <map>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"
#include "gpuops/topo/cluster.hpp"
#include "gpuops/topo/presets.hpp"
#include "gpuops/topo/routing.hpp"

using namespace gpuops::topo;

namespace {

std::vector<std::string> hops(const Topology& t, const Path& p) {
    std::vector<std::string> out;
    for (EdgeId e : p.edges) {
        const Edge edge = t.edge(e);
        out.push_back(t.label(edge.from) + ">" + t.label(edge.to));
    }
    return out;
}

DeviceId by_name(const Topology& t, const std::string& name, int node = 0) {
    const auto id = t.find(node, name);
    REQUIRE(id);
    return *id;
}

/// On pcie-8gpu-gen4, GPU i sits on switch i/2, root complex i/4 and socket i/4.
std::vector<std::string> expected_path(int i, int j) {
    auto sw = [](int g) { return fmt::format("sw{}", g / 2); };
    auto rc = [](int g) { return fmt::format("rc{}", g / 4); };
    auto socket = [](int g) { return fmt::format("socket{}", g / 4); };
    const std::string a = fmt::format("gpu{}", i);
    const std::string b = fmt::format("gpu{}", j);
    if (i / 2 == j / 2) return {a + ">" + sw(i), sw(j) + ">" + b};
    if (i / 4 == j / 4) return {a + ">" + sw(i), sw(i) + ">" + rc(i), rc(j) + ">" + sw(j), sw(j) + ">" + b};
    return {a + ">" + sw(i),         sw(i) + ">" + rc(i), rc(i) + ">" + socket(i), socket(i) + ">" + socket(j),
            socket(j) + ">" + rc(j), rc(j) + ">" + sw(j), sw(j) + ">" + b};
}

}  // namespace

TEST_CASE("every GPU pair of pcie-8gpu-gen4 takes the tree path", "[routing]") {
    const Topology t = build_preset("pcie-8gpu-gen4");
    const Router router(t);
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) {
            if (i == j) continue;
            INFO("gpu" << i << " -> gpu" << j);
            const Path p = router.route(by_name(t, fmt::format("gpu{}", i)), by_name(t, fmt::format("gpu{}", j)));
            CHECK(p.kind == PathKind::direct);
            CHECK(hops(t, p) == expected_path(i, j));
            const double expected_bottleneck = (i / 4 == j / 4) ? 25.2e9 : 22e9;  // Gen4 x16 effective vs UPI
            CHECK(p.bottleneck == Approx(expected_bottleneck).epsilon(0.01));
        }
}

TEST_CASE("uniform all-to-all loads GPU links 7x, switch uplinks 12x and the UPI 16x", "[routing]") {
    // research/variopath.md 5.3: the socket link is the bottleneck of a uniform exchange.
    const Topology t = build_preset("pcie-8gpu-gen4");
    const Router router(t);
    std::map<EdgeId, int> load;
    const auto gpus = t.devices_of(DeviceKind::gpu);
    for (DeviceId a : gpus)
        for (DeviceId b : gpus)
            if (a != b)
                for (EdgeId e : router.route(a, b).edges)
                    ++load[e];
    const auto gpu0 = by_name(t, "gpu0");
    const auto sw0 = by_name(t, "sw0");
    CHECK(load[Topology::up_edge(*t.uplink(gpu0))] == 7);
    CHECK(load[Topology::down_edge(*t.uplink(gpu0))] == 7);
    CHECK(load[Topology::up_edge(*t.uplink(sw0))] == 12);
    int upi_max = 0;
    for (const auto& l : t.links)
        if (l.kind == LinkKind::socket_interconnect) {
            upi_max = std::max({upi_max, load[Topology::up_edge(l.id)], load[Topology::down_edge(l.id)]});
        }
    CHECK(upi_max == 16);
}

TEST_CASE("relationships use nvidia-smi words", "[routing]") {
    const Topology t = build_preset("pcie-8gpu-gen4");
    const Router router(t);
    CHECK(router.relation(by_name(t, "gpu0"), by_name(t, "gpu0")) == Relation::self);
    CHECK(router.relation(by_name(t, "gpu0"), by_name(t, "gpu1")) == Relation::pix);
    CHECK(router.relation(by_name(t, "gpu0"), by_name(t, "gpu2")) == Relation::phb);
    CHECK(router.relation(by_name(t, "gpu0"), by_name(t, "gpu4")) == Relation::sys);
    CHECK(router.relation(by_name(t, "gpu0"), by_name(t, "nic0")) == Relation::pix);
    CHECK(router.relation(by_name(t, "gpu0"), by_name(t, "nic3")) == Relation::sys);
    CHECK(to_string(Relation::phb) == "PHB");

    const Topology direct = build_preset("pcie-4gpu-direct");
    const Router r2(direct);
    CHECK(r2.relation(by_name(direct, "gpu0"), by_name(direct, "gpu1")) == Relation::phb);
    CHECK(r2.relation(by_name(direct, "gpu0"), by_name(direct, "gpu2")) == Relation::sys);
}

TEST_CASE("alternatives inside a node: NIC loopback and host staging", "[routing]") {
    const Topology t = build_preset("pcie-8gpu-gen4");
    const Router router(t);
    const auto paths = router.alternatives(by_name(t, "gpu0"), by_name(t, "gpu1"));
    REQUIRE(paths.size() == 3);
    CHECK(paths[0].kind == PathKind::direct);
    CHECK(paths[1].kind == PathKind::nic_loopback);
    CHECK(hops(t, paths[1]) == std::vector<std::string>{"gpu0>sw0", "sw0>nic0", "nic0>sw0", "sw0>gpu1"});
    CHECK(paths[2].kind == PathKind::host_staging);
    CHECK(hops(t, paths[2]) == std::vector<std::string>{"gpu0>sw0", "sw0>rc0", "rc0>socket0", "socket0>mem0",
                                                        "mem0>socket0", "socket0>rc0", "rc0>sw0", "sw0>gpu1"});
    CHECK(paths[2].latency_us > paths[0].latency_us);
}

TEST_CASE("nearest NIC: the one on the GPU's switch", "[routing]") {
    const Topology t = build_preset("pcie-8gpu-gen4");
    const Router router(t);
    for (int g = 0; g < 8; ++g) {
        const auto nic = router.nearest_nic(by_name(t, fmt::format("gpu{}", g)));
        REQUIRE(nic);
        CHECK(t.device(*nic).name == fmt::format("nic{}", g / 2));
    }
    // pcie-10gpu-1switch has one NIC for all.
    const Topology ten = build_preset("pcie-10gpu-1switch");
    const Router r10(ten);
    CHECK(ten.device(*r10.nearest_nic(by_name(ten, "gpu9"))).name == "nic0");
}

TEST_CASE("across nodes: GPU, NIC, fabric, NIC, GPU", "[routing][cluster]") {
    const Topology node = build_preset("pcie-8gpu-gen4");
    SECTION("nonblocking") {
        const Topology t = compose_cluster(node, 2, parse_fabric("nonblocking:200Gb/s"));
        const Router router(t);
        const Path p = router.route(by_name(t, "gpu0", 0), by_name(t, "gpu5", 1));
        CHECK(hops(t, p) == std::vector<std::string>{"node01/gpu0>node01/sw0", "node01/sw0>node01/nic0",
                                                     "node01/nic0>net0", "net0>node02/nic2", "node02/nic2>node02/sw2",
                                                     "node02/sw2>node02/gpu5"});
        CHECK(p.bottleneck == Approx(25e9));
        CHECK(router.relation(by_name(t, "gpu0", 0), by_name(t, "gpu0", 1)) == Relation::net);
        const auto alts = router.alternatives(by_name(t, "gpu0", 0), by_name(t, "gpu5", 1));
        CHECK(alts.size() == 4);  // the nearest NIC and the three others
        for (std::size_t i = 1; i < alts.size(); ++i)
            CHECK(alts[i].kind == PathKind::alternate_nic);
    }
    SECTION("rail-optimized keeps the rail, the spine joins rails") {
        const Topology t = compose_cluster(node, 3, parse_fabric("rail:200Gb/s"));
        const Router router(t);
        const Path p = router.route(by_name(t, "gpu0", 0), by_name(t, "gpu5", 2));
        CHECK(hops(t, p) == std::vector<std::string>{"node01/gpu0>node01/sw0", "node01/sw0>node01/nic0",
                                                     "node01/nic0>rail0", "rail0>node03/nic0", "node03/nic0>node03/sw0",
                                                     "node03/sw0>node03/rc0", "node03/rc0>node03/socket0",
                                                     "node03/socket0>node03/socket1", "node03/socket1>node03/rc1",
                                                     "node03/rc1>node03/sw2", "node03/sw2>node03/gpu5"});
        const auto alts = router.alternatives(by_name(t, "gpu0", 0), by_name(t, "gpu5", 2));
        REQUIRE(alts.size() == 4);
        // Through nic2 the path crosses the socket link on the way out and stays on rail 2.
        const auto via_nic2 = hops(t, alts[2]);
        CHECK(t.label(alts[2].nics.front()) == "node01/nic2");
        CHECK(std::find(via_nic2.begin(), via_nic2.end(), "node01/socket0>node01/socket1") != via_nic2.end());
        CHECK(std::find(via_nic2.begin(), via_nic2.end(), "node01/nic2>rail2") != via_nic2.end());
        CHECK(std::find(via_nic2.begin(), via_nic2.end(), "rail2>node03/nic2") != via_nic2.end());
    }
    SECTION("rail-only has no spine") {
        const Topology t = compose_cluster(node, 2, parse_fabric("rail-only:200Gb/s"));
        CHECK(t.devices_of(DeviceKind::network_switch).size() == 4);
    }
    SECTION("nodes without a fabric cannot reach each other") {
        Topology t = compose_cluster(node, 2, parse_fabric("nonblocking:200Gb/s"));
        std::erase_if(t.links, [](const Link& l) { return l.kind == LinkKind::network; });
        const Router router(t);
        CHECK_THROWS_AS(router.route(by_name(t, "gpu0", 0), by_name(t, "gpu0", 1)), gpuops::DataError);
    }
}

TEST_CASE("fabric specs", "[cluster]") {
    CHECK(parse_fabric("nonblocking:400Gb/s").port_bandwidth == Approx(50e9));
    CHECK(parse_fabric("rail").kind == "rail");
    CHECK(parse_fabric("rail").port_bandwidth == 0);
    CHECK_THROWS_WITH(
        parse_fabric("torus:1Gb/s"),
        "--fabric: unknown fabric 'torus' (expected nonblocking, rail or rail-only, e.g. nonblocking:400Gb/s)");
    CHECK_THROWS_AS(parse_fabric("rail:fast"), gpuops::UsageError);
    const Topology node = build_preset("pcie-8gpu-gen4");
    CHECK_THROWS_AS(compose_cluster(node, 0, parse_fabric("rail")), gpuops::UsageError);
    const Topology t = compose_cluster(node, 12, parse_fabric("rail"));
    CHECK(t.nodes.size() == 12);
    CHECK(t.nodes.front().hostname == "node01");
    CHECK(t.nodes.back().hostname == "node12");
    CHECK(t.devices_of(DeviceKind::gpu).size() == 96);
    // Without a bandwidth each NIC's own port speed (200 Gb/s ConnectX-6) is used.
    for (const auto& l : t.links)
        if (l.kind == LinkKind::network && t.device(l.a).kind == DeviceKind::nic) CHECK(l.bandwidth == Approx(25e9));
}
