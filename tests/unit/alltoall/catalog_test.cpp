// The catalog: exact and hierarchical builds, the document round trip, the checker on right and broken
// catalogs, and bad topologies.
#include <catch2/catch.hpp>

#include <cmath>

#include "gpuops/alltoall/catalog.hpp"
#include "gpuops/core/error.hpp"
#include "gpuops/topo/cluster.hpp"
#include "gpuops/topo/presets.hpp"

using namespace gpuops::alltoall;
using gpuops::json_io::Json;
using gpuops::topo::DeviceKind;
using gpuops::topo::Topology;

namespace {

Catalog round_trip(const Catalog& c) { return Catalog::read(c.to_json(false, 0), c.topology(), "test.json"); }

std::vector<std::string> check_document(const Json& doc, const Topology& t) {
    return Catalog::read(doc, t, "test.json").check(3'000'000, 5);
}

Topology cluster(const char* preset, int nodes, const char* fabric) {
    return gpuops::topo::compose_cluster(gpuops::topo::build_preset(preset), nodes, gpuops::topo::parse_fabric(fabric));
}

/// D(n): permutations of n without a fixed point.
double derangements(int n) {
    double a = 1;
    double b = 0;
    for (int k = 2; k <= n; ++k) {
        const double c = (k - 1) * (a + b);
        a = b;
        b = c;
    }
    return n == 0 ? 1 : b;
}

}  // namespace

TEST_CASE("the exact catalog of the 4-GPU preset holds every maximal channel once", "[catalog]") {
    const auto c = Catalog::build(gpuops::topo::build_preset("pcie-4gpu-direct"));
    CHECK(c.method() == CatalogMethod::exact);
    CHECK(c.stats().orbits == 46);
    CHECK(c.stats().raw_channels == 305);
    CHECK(c.stats().raw_exact);
    CHECK(c.classes().size() == 1);
    std::size_t instances = 0;
    for (std::size_t k = 0; k < c.classes()[0].channels.size(); ++k) {
        const auto all = c.instances(0, k, 1000);
        CHECK(static_cast<double>(all.size()) == c.classes()[0].channels[k].orbit_size);
        instances += all.size();
    }
    CHECK(instances == 305);
    CHECK(round_trip(c).check(3'000'000, 5).empty());
}

TEST_CASE("shapes count the edges of each class a channel uses", "[catalog]") {
    const auto c = Catalog::build(gpuops::topo::build_preset("pcie-4gpu-direct"));
    const auto& cls = c.classes()[0];
    for (const auto& ch : cls.channels) {
        std::size_t edges = 0;
        for (FlowId f : ch.flows)
            edges += cls.space->flows()[f].edges.size();
        std::size_t counted = 0;
        for (std::size_t k = 0; k < ch.shape.size(); ++k) {
            CHECK(ch.shape[k] <= cls.edge_classes[k].edges.size());
            counted += ch.shape[k];
        }
        CHECK(counted == edges);  // every directed edge carries at most one flow
    }
}

TEST_CASE("a cluster is cataloged by node with rail-aligned patterns, and composes to maximal channels", "[catalog]") {
    for (const char* fabric : {"nonblocking", "rail", "rail-only"}) {
        INFO(fabric);
        const auto t = cluster("pcie-4gpu-direct", 3, fabric);
        const auto c = Catalog::build(t);
        CHECK(c.method() == CatalogMethod::hierarchical);
        CHECK(c.domains().size() == 3);
        REQUIRE(c.classes().size() == 1);  // identical nodes: one class
        REQUIRE(c.pattern());
        CHECK(c.pattern()->kind == "rail-aligned");
        CHECK(c.pattern()->rails == 2);
        CHECK(c.pattern()->count == std::pow(derangements(3), 2));
        const double local = c.classes()[0].raw_channels;
        CHECK(c.stats().raw_channels_log10 == Approx(2 * std::log10(derangements(3)) + 3 * std::log10(local)));
        CHECK(round_trip(c).check(0, 5).empty());

        // A composition under another pattern: node i sends to node i+2 on both rails.
        std::vector<FlowIds> per_domain;
        for (std::size_t i = 0; i < 3; ++i)
            per_domain.push_back(c.classes()[0].channels[i % c.classes()[0].channels.size()].flows);
        const std::vector<std::vector<std::size_t>> peers{{2, 0, 1}, {2, 0, 1}};
        const auto composed = c.compose(per_domain, peers);
        CHECK_FALSE(contention(t, composed));
        std::size_t inter_node = 0;
        for (const auto& f : composed.flows)
            if (t.devices[f.src].node != t.devices[f.dst].node) ++inter_node;
        CHECK(inter_node == 3 * 2);  // every port of every node sends once
    }
}

TEST_CASE("a node too large to search whole is cataloged by socket", "[catalog]") {
    const auto t = gpuops::topo::build_preset("pcie-8gpu-gen4");
    CatalogOptions o;
    o.method = CatalogMethod::hierarchical;
    const auto c = Catalog::build(t, o);
    CHECK(c.domains().size() == 2);
    CHECK(c.classes().size() == 1);  // the two sockets are alike
    CHECK(c.pattern()->kind == "socket-links");
    CHECK(c.classes()[0].ports.size() == 1);
    CHECK(round_trip(c).check(0, 5).empty());
    // Every channel of the socket class sends one flow out over the interconnect and takes one in.
    for (const auto& ch : c.classes()[0].channels) {
        const auto port = c.classes()[0].ports[0];
        int out = 0;
        int in = 0;
        for (FlowId f : ch.flows) {
            out += c.classes()[0].space->flows()[f].dst == port;
            in += c.classes()[0].space->flows()[f].src == port;
        }
        CHECK(out == 1);
        CHECK(in == 1);
    }
}

TEST_CASE("the checker names what is wrong with a broken catalog", "[catalog]") {
    const auto t = gpuops::topo::build_preset("pcie-4gpu-direct");
    const Json good = Catalog::build(t).to_json(false, 0);
    REQUIRE(check_document(good, t).empty());
    const auto& channels = good["classes"][0]["channels"];
    REQUIRE(channels.size() > 3);

    SECTION("a wrong orbit size") {
        Json bad = good;
        bad["classes"][0]["channels"][1]["orbit_size"] = 3;
        const auto v = check_document(bad, t);
        REQUIRE_FALSE(v.empty());
        CHECK_THAT(v.front(), Catch::Contains("class 0 channel 1: orbit size 3 stated"));
    }
    SECTION("one orbit twice") {
        Json bad = good;
        bad["classes"][0]["channels"][2] = channels[0];
        const auto v = check_document(bad, t);
        REQUIRE_FALSE(v.empty());
        CHECK_THAT(v.front(), Catch::Contains("class 0 channel 2: the same orbit as an earlier channel"));
    }
    SECTION("a channel missing a flow is not maximal") {
        Json bad = good;
        bad["classes"][0]["channels"][0]["flows"].erase(0);
        const auto v = check_document(bad, t);
        REQUIRE_FALSE(v.empty());
        CHECK_THAT(v.front(), Catch::Contains("class 0 channel 0: not maximal"));
    }
    SECTION("a channel with two flows on one edge") {
        // gpu0 and gpu1 share a root port's uplink only through the root complex: pick two flows with one
        // source instead, which is contention by definition.
        Json bad = good;
        const auto& flows = good["classes"][0]["flows"];
        std::vector<int> from_gpu0;
        for (std::size_t i = 0; i < flows.size(); ++i)
            if (flows[i]["src"] == "gpu0") from_gpu0.push_back(static_cast<int>(i));
        REQUIRE(from_gpu0.size() >= 2);
        bad["classes"][0]["channels"][0]["flows"] = {from_gpu0[0], from_gpu0[1]};
        const auto v = check_document(bad, t);
        REQUIRE_FALSE(v.empty());
        CHECK_THAT(v.front(), Catch::Contains("not contention-free: gpu0 sends twice"));
    }
    SECTION("an orbit left out") {
        // Its channels also leave the stated total, so the total is lowered too: the expansion must notice.
        Json bad = good;
        const auto size = bad["classes"][0]["channels"][5]["orbit_size"].get<double>();
        bad["classes"][0]["channels"].erase(5);
        bad["classes"][0]["raw_channels"] = bad["classes"][0]["raw_channels"].get<double>() - size;
        const auto v = check_document(bad, t);
        REQUIRE_FALSE(v.empty());
        CHECK_THAT(v.front(), Catch::Contains("is in no orbit"));
    }
    SECTION("a catalog of another topology") {
        auto other = t;
        other.links[0].bandwidth *= 2;  // calibrated differently: same devices, other numbers
        const auto v = check_document(good, other);
        REQUIRE_FALSE(v.empty());
        CHECK_THAT(v.front(), Catch::Contains("built for another topology"));
    }
    SECTION("a catalog of a larger topology does not resolve") {
        const Json big = Catalog::build(gpuops::topo::build_preset("pcie-8gpu-gen4")).to_json(false, 0);
        CHECK_THROWS_AS(check_document(big, t), gpuops::DataError);
    }
    SECTION("a flow index out of range is a data error with its pointer") {
        Json bad = good;
        bad["classes"][0]["channels"][0]["flows"][0] = 9999;
        CHECK_THROWS_WITH(check_document(bad, t), Catch::Contains("/classes/0/channels/0/flows/0"));
    }
}

TEST_CASE("bad topologies get one-line errors", "[catalog]") {
    const auto base = gpuops::topo::build_preset("pcie-4gpu-direct");
    SECTION("no GPUs") {
        auto t = base;
        for (auto& d : t.devices)
            if (d.kind == DeviceKind::gpu) d.kind = DeviceKind::pci_device;
        CHECK_THROWS_WITH(Catalog::build(t), Catch::Contains("has no GPUs"));
    }
    SECTION("one GPU") {
        auto t = base;
        int kept = 0;
        for (auto& d : t.devices)
            if (d.kind == DeviceKind::gpu && kept++ > 0) d.kind = DeviceKind::pci_device;
        CHECK_THROWS_WITH(Catalog::build(t), Catch::Contains("one GPU"));
    }
    SECTION("a link without bandwidth") {
        auto t = base;
        t.links[3].bandwidth = 0;
        CHECK_THROWS_WITH(Catalog::build(t), Catch::Contains("has no bandwidth"));
    }
    SECTION("a disconnected graph") {
        // The same devices without the socket interconnect: the two sockets' GPUs cannot reach each other.
        Topology t;
        t.source = base.source;
        t.nodes = base.nodes;
        for (const auto& d : base.devices)
            t.add_device(d);
        for (const auto& l : base.links)
            if (l.kind != gpuops::topo::LinkKind::socket_interconnect) t.add_link(l);
        CHECK_THROWS_WITH(Catalog::build(t), Catch::Contains("disconnected"));
    }
    SECTION("nodes without a fabric") {
        CatalogOptions o;
        o.method = CatalogMethod::exact;
        const auto nodes = cluster("pcie-4gpu-direct", 2, "nonblocking");
        Topology t;
        t.source = nodes.source;
        t.nodes = nodes.nodes;
        for (const auto& d : nodes.devices)
            t.add_device(d);
        for (const auto& l : nodes.links)
            if (l.kind != gpuops::topo::LinkKind::network) t.add_link(l);
        CHECK_THROWS_WITH(Catalog::build(t), Catch::Contains("disconnected"));
    }
}

TEST_CASE("composed channels of a cluster are maximal among every path of the whole cluster", "[catalog]") {
    // The hierarchical catalog's claim, checked against the flat channel space of a small cluster: whatever
    // channel each node runs and however the rails pair the nodes, no flow of the cluster fits in addition.
    const auto t = cluster("pcie-4gpu-direct", 3, "rail");
    const auto c = Catalog::build(t);
    const gpuops::topo::Router router(t);
    const ChannelSpace flat(router, candidate_flows(router));
    const auto& channels = c.classes()[0].channels;
    const std::vector<std::vector<std::vector<std::size_t>>> patterns{{{1, 2, 0}, {1, 2, 0}}, {{1, 2, 0}, {2, 0, 1}}};
    for (std::size_t k = 0; k < channels.size(); k += 7) {
        for (const auto& peers : patterns) {
            const std::vector<FlowIds> per_domain{channels[k].flows, channels[(k + 1) % channels.size()].flows,
                                                  channels[(k + 2) % channels.size()].flows};
            const auto composed = c.compose(per_domain, peers);
            CHECK_FALSE(contention(t, composed));
            CHECK(is_maximal(composed, flat.flows()));
        }
    }
}

TEST_CASE("every preset's catalog passes the checker, complete wherever the channels can be listed", "[catalog]") {
    for (const auto& preset : gpuops::topo::list_presets()) {
        INFO(preset.name);
        const auto t = gpuops::topo::build_preset(preset.name);
        const auto c = Catalog::build(t);
        // Up to 300000 channels the checker also lists every maximal channel by Bron–Kerbosch and compares it
        // with the expanded orbits (the 4- and 8-GPU presets); the 10-GPU box's 2.7e8 are checked orbit by orbit.
        const auto violations = round_trip(c).check(300'000, 3);
        for (const auto& v : violations)
            FAIL_CHECK(v);
        CHECK(c.stats().orbits > 0);
    }
}
