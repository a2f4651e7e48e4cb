// The topology model around the importers: presets, the JSON document, validation, calibration, renderers.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"
#include "gpuops/topo/builder.hpp"
#include "gpuops/topo/link_overrides.hpp"
#include "gpuops/topo/presets.hpp"
#include "gpuops/topo/render.hpp"
#include "gpuops/topo/topology_json.hpp"

#include "support/topology_helpers.hpp"

using namespace gpuops::topo;
using gpuops::json_io::Json;
using gpuops::test::count;

namespace {

Json minimal_doc() {
    return Json::parse(R"({
      "schema": "gpuops.topology", "schema_version": 1,
      "nodes": [{"index": 0, "hostname": "n1"}],
      "devices": [
        {"id": 0, "kind": "socket", "node": 0, "name": "socket0", "parent": null},
        {"id": 1, "kind": "root_complex", "node": 0, "name": "rc0", "parent": 0},
        {"id": 2, "kind": "gpu", "node": 0, "name": "gpu0", "parent": 1, "vendor_id": "0x10de"}
      ],
      "links": [
        {"id": 0, "kind": "host", "a": 1, "b": 0, "bandwidth_gbytes_per_s": 50, "latency_us": 0.05},
        {"id": 1, "kind": "pcie", "a": 2, "b": 1, "bandwidth_gbytes_per_s": 25, "latency_us": 0.2}
      ]})");
}

}  // namespace

TEST_CASE("presets have the documented shapes", "[presets]") {
    const auto gen4 = build_preset("pcie-8gpu-gen4");
    CHECK(count(gen4, DeviceKind::socket) == 2);
    CHECK(count(gen4, DeviceKind::pcie_switch) == 4);
    CHECK(count(gen4, DeviceKind::gpu) == 8);
    CHECK(count(gen4, DeviceKind::nic) == 4);
    for (DeviceId sw : gen4.devices_of(DeviceKind::pcie_switch))
        CHECK(gen4.children(sw).size() == 3);
    for (DeviceId g : gen4.devices_of(DeviceKind::gpu)) {
        REQUIRE(gen4.links[*gen4.uplink(g)].pcie);
        CHECK(gen4.links[*gen4.uplink(g)].pcie->gen == 4);
    }
    const auto gen5 = build_preset("pcie-8gpu-gen5");
    for (DeviceId g : gen5.devices_of(DeviceKind::gpu))
        CHECK(gen5.links[*gen5.uplink(g)].bandwidth == Approx(50.4e9).epsilon(0.01));
    const auto direct = build_preset("pcie-4gpu-direct");
    CHECK(count(direct, DeviceKind::pcie_switch) == 0);
    for (DeviceId g : direct.devices_of(DeviceKind::gpu))
        CHECK(direct.device(direct.device(g).parent).kind == DeviceKind::root_complex);
    const auto ten = build_preset("pcie-10gpu-1switch");
    CHECK(count(ten, DeviceKind::socket) == 1);
    CHECK(count(ten, DeviceKind::gpu) == 10);
    CHECK(count(ten, DeviceKind::pcie_switch) == 1);
    CHECK_THROWS_AS(build_preset("nope"), gpuops::UsageError);
    const auto list = list_presets();
    REQUIRE(list.size() == 4);
    for (const auto& p : list) {
        CHECK_FALSE(p.description.empty());
        CHECK(p.sources.size() >= 3);  // every number has a source
    }
}

TEST_CASE("preset sockets carry Linux CPU numbering and Slurm core indexes", "[presets]") {
    const auto t = build_preset("pcie-8gpu-gen4");
    const auto sockets = t.devices_of(DeviceKind::socket);
    CHECK(t.device(sockets[1]).cpuset == "56-111,168-223");
    CHECK(t.device(sockets[1]).cores == "56-111");
    CHECK(t.device(sockets[1]).numa_node == 1);
}

TEST_CASE("preset specs report errors with pointers", "[presets]") {
    Json spec = Json::parse(R"({"name":"x","sockets":{"count":1,"cpu":{},"cores":4,
        "root_complexes":[{"devices":[{"kind":"gpu","link":"17GT/s x16"}]}]}})");
    CHECK_THROWS_WITH(build_from_spec(spec, "x.json"),
                      Catch::Matchers::StartsWith("(/sockets/root_complexes/0/devices/0/link) "));
    spec["sockets"]["root_complexes"][0]["devices"][0] = Json::parse(R"({"kind":"socket"})");
    CHECK_THROWS_WITH(
        build_from_spec(spec, "x.json"),
        "(/sockets/root_complexes/0/devices/0/kind) expected pcie_switch, gpu, nic or pci_device, got 'socket'");
    spec["sockets"]["root_complexes"][0]["devices"][0] = Json::parse(R"({"kind":"gpu","count":100000})");
    CHECK_THROWS_WITH(build_from_spec(spec, "x.json"),
                      "(/sockets/root_complexes/0/devices/0/count) expected an integer in [1, 1024], got 100000");
}

TEST_CASE("the topology document round-trips and validates", "[topology-json]") {
    const auto t = build_preset("pcie-8gpu-gen4");
    const Json doc = to_json(t, "test");
    CHECK(doc["schema"] == "gpuops.topology");
    CHECK(doc["summary"]["gpus"] == 8);
    const Topology back = topology_from_json(doc);
    CHECK(to_json(back, "test") == doc);
    CHECK(back.devices.size() == t.devices.size());
    CHECK(back.device(4).vendor_id == 0x10de);
    CHECK(hex_id(0x10de) == "0x10de");

    const Topology small = topology_from_json(minimal_doc());
    CHECK(small.links[1].bandwidth == Approx(25e9));
}

TEST_CASE("structural errors carry the JSON pointer of the culprit", "[topology-json]") {
    Json doc = minimal_doc();
    doc["devices"][2]["kind"] = "quantum";
    CHECK_THROWS_WITH(topology_from_json(doc), "(/devices/2/kind) unknown device kind 'quantum'");
    doc = minimal_doc();
    doc["devices"][2]["id"] = 5;
    CHECK_THROWS_WITH(topology_from_json(doc), "(/devices/2/id) expected an integer in [2, 2], got 5");
    doc = minimal_doc();
    doc["devices"][0]["parent"] = 1;
    CHECK_THROWS_WITH(topology_from_json(doc), "(/devices/0/parent) a socket has no parent");
    doc = minimal_doc();
    doc["devices"][2]["parent"] = 2;
    CHECK_THROWS_WITH(topology_from_json(doc), "(/devices/2/parent) a gpu cannot be the parent of a gpu");
    doc = minimal_doc();
    doc["nodes"].push_back({{"index", 1}, {"hostname", "n1"}});
    CHECK_THROWS_WITH(topology_from_json(doc), "(/nodes/1/hostname) host name 'n1' appears twice");
    doc = minimal_doc();
    doc["nodes"][0]["hostname"] = "bad host";
    CHECK_THROWS_WITH(topology_from_json(doc),
                      "(/nodes/0/hostname) host name 'bad host' contains whitespace or control characters");
    doc = minimal_doc();
    doc["links"].erase(1);
    CHECK_THROWS_WITH(topology_from_json(doc), "(/devices/2/parent) no link joins 'gpu0' to its parent");
    doc = minimal_doc();
    doc["links"][1]["b"] = 9;
    CHECK_THROWS_WITH(topology_from_json(doc), "(/links/1/b) expected an integer in [0, 2], got 9");
    doc = minimal_doc();
    doc["devices"][2]["vendor_id"] = "10de";
    CHECK_THROWS_WITH(topology_from_json(doc), "(/devices/2/vendor_id) expected a hex id such as '0x10de', got '10de'");
    doc = minimal_doc();
    doc["fabric"] = {{"kind", "rail"}, {"port_bandwidth_gbytes_per_s", -5}};
    CHECK_THROWS_WITH(
        topology_from_json(doc),
        "(/fabric/port_bandwidth_gbytes_per_s) expected a non-negative, finite bandwidth (0: each NIC's own speed)");
    doc["fabric"] = {{"kind", "torus"}, {"port_bandwidth_gbytes_per_s", 5}};
    CHECK_THROWS_WITH(topology_from_json(doc),
                      "(/fabric/kind) unknown fabric 'torus' (expected nonblocking, rail or rail-only)");
    doc = minimal_doc();
    doc["nodes"] = Json::array();
    CHECK_THROWS_WITH(topology_from_json(doc), "(/nodes) a topology needs at least one node");
}

TEST_CASE("cycles and absurd depths are data errors, found in linear time", "[topology-json]") {
    // Two switches that are each other's parent, each joined to the other by a link.
    Json doc = minimal_doc();
    doc["devices"].push_back(Json::parse(R"({"id": 3, "kind": "pcie_switch", "node": 0, "name": "sw0", "parent": 4})"));
    doc["devices"].push_back(Json::parse(R"({"id": 4, "kind": "pcie_switch", "node": 0, "name": "sw1", "parent": 3})"));
    doc["links"].push_back(
        Json::parse(R"({"id": 2, "kind": "pcie", "a": 3, "b": 4, "bandwidth_gbytes_per_s": 1, "latency_us": 0})"));
    doc["links"].push_back(
        Json::parse(R"({"id": 3, "kind": "pcie", "a": 4, "b": 3, "bandwidth_gbytes_per_s": 1, "latency_us": 0})"));
    CHECK_THROWS_WITH(topology_from_json(doc), "(/devices/3/parent) the parent chain forms a cycle");

    // A chain of switches deeper than any real PCIe tree.
    doc = minimal_doc();
    DeviceId parent = 1;
    for (int i = 0; i < 200; ++i) {
        const auto id = static_cast<DeviceId>(doc["devices"].size());
        doc["devices"].push_back(
            {{"id", id}, {"kind", "pcie_switch"}, {"node", 0}, {"name", fmt::format("sw{}", i)}, {"parent", parent}});
        doc["links"].push_back({{"id", doc["links"].size()},
                                {"kind", "pcie"},
                                {"a", id},
                                {"b", parent},
                                {"bandwidth_gbytes_per_s", 1},
                                {"latency_us", 0}});
        parent = id;
    }
    CHECK_THROWS_WITH(topology_from_json(doc), Catch::Matchers::EndsWith("the device tree is deeper than 64 levels"));
}

TEST_CASE("numbers survive a write/read cycle, tiny and huge alike", "[topology-json]") {
    auto t = build_preset("pcie-4gpu-direct");
    t.links[0].bandwidth = 1.0;     // 1e-9 GB/s: must not round to zero
    t.links[1].bandwidth = 4.2e15;  // 4.2 PB/s
    const Topology back = topology_from_json(to_json(t, "test"));
    CHECK(back.links[0].bandwidth == Approx(1.0));
    CHECK(back.links[1].bandwidth == Approx(4.2e15));
    Json doc = to_json(t, "test");
    doc["links"][0]["bandwidth_gbytes_per_s"] = 1e308;  // overflows to infinity once scaled to bytes/s
    CHECK_THROWS_WITH(topology_from_json(doc),
                      "(/links/0/bandwidth_gbytes_per_s) expected a positive, finite bandwidth");
}

TEST_CASE("calibration rules: later rules win, unmatched rules warn", "[links]") {
    auto t = build_preset("pcie-4gpu-direct");
    const Json doc = Json::parse(R"({"schema":"gpuops.links","schema_version":1,"links":[
        {"kind":"pcie","gen":4,"bandwidth_gbytes_per_s":20},
        {"between":["gpu1","rc0"],"bandwidth_gbytes_per_s":10,"latency_us":0.5},
        {"kind":"pcie","gen":5,"bandwidth_gbytes_per_s":40}]})");
    const auto rules = parse_link_rules(doc);
    REQUIRE(rules.size() == 3);
    const auto warnings = apply_link_rules(t, rules, "cal.json");
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0] == "'cal.json': (/links/2) the rule matches no link");
    const auto gpu0 = *t.find(0, "gpu0");
    const auto gpu1 = *t.find(0, "gpu1");
    CHECK(t.links[*t.uplink(gpu0)].bandwidth == Approx(20e9));
    CHECK(t.links[*t.uplink(gpu1)].bandwidth == Approx(10e9));
    CHECK(t.links[*t.uplink(gpu1)].latency_us == Approx(0.5));
    CHECK(t.links[*t.uplink(gpu1)].source == "calibration: cal.json (/links/1)");

    const Json bad = Json::parse(R"({"schema":"gpuops.links","schema_version":1,"links":[{"kind":"pcie"}]})");
    CHECK_THROWS_WITH(parse_link_rules(bad), "(/links/0) a rule must set bandwidth_gbytes_per_s or latency_us");
    const Json wrong = Json::parse(R"({"schema":"gpuops.topology","schema_version":1})");
    CHECK_THROWS_AS(parse_link_rules(wrong), gpuops::DataError);
}

TEST_CASE("PCI bus ids are normalised or rejected", "[builder]") {
    CHECK(normalize_bus_id("0000:1B:00.0") == "0000:1b:00.0");
    CHECK(normalize_bus_id("1b:00.0") == "0000:1b:00.0");
    CHECK(normalize_bus_id("3:0.1") == "0000:03:00.1");
    CHECK(normalize_bus_id("ffff:ff:01.0") == "ffff:ff:01.0");
    CHECK_FALSE(normalize_bus_id("0000:zz:00.0"));
    CHECK_FALSE(normalize_bus_id("0000:1b:00.8"));
    CHECK_FALSE(normalize_bus_id("0000:1b:20.0"));
    CHECK_FALSE(normalize_bus_id("garbage"));
    CHECK_FALSE(normalize_bus_id(""));
}

TEST_CASE("renderers: gres.conf types and lines, dot graph", "[render]") {
    CHECK(gres_type("NVIDIA L40S") == "l40s");
    CHECK(gres_type("Tesla V100-SXM3-32GB") == "v100");
    CHECK(gres_type("NVIDIA A100-SXM4-40GB") == "a100");
    CHECK(gres_type("NVIDIA RTX 6000 Ada Generation") == "rtx6000");
    CHECK(gres_type("NVIDIA GeForce RTX 4090") == "rtx4090");
    CHECK(gres_type("NVIDIA H100 PCIe") == "h100");
    CHECK(gres_type("") == "");

    const auto t = build_preset("pcie-8gpu-gen4");
    const std::string gres = render_gres_conf(t, "vp-probe test");
    CHECK(gres.find("\nName=gpu Type=l40s File=/dev/nvidia0 Cores=0-55") != std::string::npos);
    CHECK(gres.find("File=/dev/nvidia7 Cores=56-111") != std::string::npos);
    const std::string dot = render_dot(t);
    CHECK(dot.rfind("graph topology {", 0) == 0);
    CHECK(dot.find("subgraph cluster_node0") != std::string::npos);
    std::size_t edges = 0;
    for (std::size_t pos = dot.find(" -- "); pos != std::string::npos; pos = dot.find(" -- ", pos + 1))
        ++edges;
    CHECK(edges == t.links.size());
}

TEST_CASE("gres.conf names /dev/nvidiaN by the driver's minors when every GPU has one", "[render]") {
    auto t = build_preset("pcie-4gpu-direct");
    const auto gpus = t.devices_of(DeviceKind::gpu);
    REQUIRE(gpus.size() == 4);
    const std::string caveat = "# File= assumes /dev/nvidiaN minor numbers follow PCI bus order";
    CHECK(render_gres_conf(t, "vp-probe test").find(caveat) != std::string::npos);

    for (std::size_t i = 0; i < gpus.size(); ++i)
        t.devices[gpus[i]].device_minor = static_cast<int>(gpus.size() - 1 - i);  // 3, 2, 1, 0 in bus order
    const std::string gres = render_gres_conf(t, "vp-probe test");
    CHECK(gres.find(caveat) == std::string::npos);
    const auto at = [&](int minor) { return gres.find(fmt::format("File=/dev/nvidia{} ", minor)); };
    REQUIRE(at(3) != std::string::npos);
    CHECK(at(3) < at(2));
    CHECK(at(2) < at(1));
    CHECK(at(1) < at(0));
    CHECK(gres.find(fmt::format("File=/dev/nvidia3 Cores=0-63  # {}", *t.device(gpus[0]).pci_bus_id)) !=
          std::string::npos);

    const Topology back = topology_from_json(to_json(t, "test"));
    CHECK(back.devices == t.devices);  // links round bandwidths to 9 digits
    CHECK(back.device(gpus[0]).device_minor == 3);
    Json doc = to_json(t, "test");
    CHECK(doc["devices"][gpus[0]]["device_minor"] == 3);
    doc["devices"][gpus[0]]["device_minor"] = 256;
    CHECK_THROWS_AS(topology_from_json(doc), gpuops::DataError);

    t.devices[gpus[2]].device_minor.reset();  // one unknown minor: bus order again, with the caveat
    const std::string partial = render_gres_conf(t, "vp-probe test");
    CHECK(partial.find(caveat) != std::string::npos);
    CHECK(partial.find("File=/dev/nvidia3 ") != std::string::npos);
    CHECK(partial.find("File=/dev/nvidia0 ") < partial.find("File=/dev/nvidia1 "));
}
