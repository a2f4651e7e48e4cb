// Unit tests for the NCCL topology XML importer, on hand-written fixtures in tests/fixtures/nccl.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "gpuops/core/error.hpp"
#include "gpuops/core/units.hpp"
#include "gpuops/topo/import_nccl.hpp"
#include "gpuops/topo/link_defaults.hpp"

#include "support/topology_helpers.hpp"

using gpuops::DataError;
using gpuops::InputMissingError;
using namespace gpuops::topo;
using gpuops::test::by_bus_id;
using gpuops::test::count;
using gpuops::test::uplink_of;

namespace {

std::string fixture(const std::string& name) { return std::string(GPUOPS_FIXTURES_DIR) + "/nccl/" + name; }

double effective(int gen, int width) {
    return gpuops::units::pcie_raw_bandwidth(gen, width) * defaults::pcie_efficiency;
}

Topology import_text(const std::string& text, std::vector<std::string>& warnings) {
    return import_nccl_xml_text(text, "inline.xml", warnings);
}

}  // namespace

TEST_CASE("a p4d-like file becomes sockets, root complexes, switches, GPUs and NICs", "[import_nccl]") {
    const std::string path = fixture("p4d-like.xml");
    std::vector<std::string> warnings;
    const Topology topo = import_nccl_xml(path, warnings);

    CHECK(topo.source == Source{"nccl-xml", path});
    REQUIRE(topo.nodes == std::vector<Node>{Node{""}});
    CHECK(count(topo, DeviceKind::socket) == 2);
    CHECK(count(topo, DeviceKind::cpu_memory) == 2);
    CHECK(count(topo, DeviceKind::root_complex) == 2);
    CHECK(count(topo, DeviceKind::pcie_switch) == 4);
    CHECK(count(topo, DeviceKind::gpu) == 8);
    CHECK(count(topo, DeviceKind::nic) == 4);
    CHECK(count(topo, DeviceKind::pci_device) == 0);

    // Every GPU and NIC sits under a switch, every switch under a root complex, every root complex under a socket.
    for (const DeviceKind kind : {DeviceKind::gpu, DeviceKind::nic}) {
        for (const DeviceId id : topo.devices_of(kind)) {
            const Device& sw = topo.device(topo.device(id).parent);
            CHECK(sw.kind == DeviceKind::pcie_switch);
            const Device& rc = topo.device(sw.parent);
            CHECK(rc.kind == DeviceKind::root_complex);
            CHECK(topo.device(rc.parent).kind == DeviceKind::socket);
        }
    }
    const Device& gpu4 = by_bus_id(topo, "0000:90:1c.0");
    const Device& sw2 = topo.device(gpu4.parent);
    CHECK(sw2.pci_bus_id == "0000:8f:00.0");
    const Device& socket1 = topo.device(topo.device(sw2.parent).parent);
    CHECK(socket1.name == "socket1");
    CHECK(gpu4.numa_node == 1);
    CHECK(by_bus_id(topo, "0000:10:1b.0").numa_node == 0);

    const auto sockets = topo.devices_of(DeviceKind::socket);
    CHECK(topo.device(sockets[0]).numa_node == 0);
    CHECK(topo.device(sockets[0]).cpuset == "0-23,48-71");
    CHECK(topo.device(sockets[0]).cores == std::nullopt);
    CHECK(topo.device(sockets[1]).numa_node == 1);
    CHECK(topo.device(sockets[1]).cpuset == "24-47,72-95");
    CHECK(topo.device(sockets[0]).model.empty());
    CHECK(std::count_if(topo.links.begin(), topo.links.end(),
                        [](const Link& l) { return l.kind == LinkKind::socket_interconnect; }) == 1);
}

TEST_CASE("bus ids are normalised and made-up switch ids are kept with their vendor unknown", "[import_nccl]") {
    std::vector<std::string> warnings;
    const Topology topo = import_nccl_xml(fixture("p4d-like.xml"), warnings);

    CHECK(by_bus_id(topo, "0000:10:1c.0").device_id == 0x20b0);  // written 0000:10:1C.0
    CHECK(by_bus_id(topo, "0000:10:1d.0").vendor_id == 0x10de);  // written 10:1d.0

    const Device& fake = by_bus_id(topo, "ffff:ff:01.0");
    CHECK(fake.kind == DeviceKind::pcie_switch);
    CHECK(fake.vendor_id == std::nullopt);
    CHECK(fake.device_id == std::nullopt);
    const Device& real = by_bus_id(topo, "0000:8f:00.0");
    CHECK(real.vendor_id == 0x1000);
    CHECK(real.device_id == 0xc010);
    CHECK(by_bus_id(topo, "ffff:ff:04.0").vendor_id == std::nullopt);
}

TEST_CASE("link_speed and link_width become the PCIe generation, width and bandwidth", "[import_nccl]") {
    std::vector<std::string> warnings;
    const Topology topo = import_nccl_xml(fixture("p4d-like.xml"), warnings);

    const Link& gen4 = uplink_of(topo, by_bus_id(topo, "0000:10:1c.0").id);  // "16.0 GT/s PCIe" x16
    REQUIRE(gen4.pcie);
    CHECK(gen4.pcie->gen == 4);
    CHECK(gen4.pcie->width == 16);
    CHECK(gen4.bandwidth == Approx(effective(4, 16)));
    CHECK(gen4.source.starts_with("NCCL XML, "));

    const Link& gen5 = uplink_of(topo, by_bus_id(topo, "0000:10:1b.0").id);  // "32 GT/s PCIe/s" x8
    REQUIRE(gen5.pcie);
    CHECK(gen5.pcie->gen == 5);
    CHECK(gen5.pcie->width == 8);
    CHECK(gen5.bandwidth == Approx(effective(5, 8)));

    const Link& gen3 = uplink_of(topo, by_bus_id(topo, "ffff:ff:01.0").id);  // "8 GT/s" x16, switch to root complex
    REQUIRE(gen3.pcie);
    CHECK(gen3.pcie == gpuops::units::PcieLink{3, 16, 8.0});
    CHECK(gen3.bandwidth == Approx(effective(3, 16)));
    CHECK(topo.device(gen3.b).kind == DeviceKind::root_complex);
}

TEST_CASE("GPU and NIC models, NIC interfaces and port bandwidth", "[import_nccl]") {
    std::vector<std::string> warnings;
    const Topology topo = import_nccl_xml(fixture("p4d-like.xml"), warnings);

    CHECK(by_bus_id(topo, "0000:10:1c.0").model == "NVIDIA A100-SXM4-40GB");
    CHECK(by_bus_id(topo, "0000:20:1c.0").model == "NVIDIA GPU (sm_90)");  // no device id, <gpu sm="90">

    const Device& efa = by_bus_id(topo, "0000:10:1b.0");
    CHECK(efa.kind == DeviceKind::nic);
    CHECK(efa.model == "Amazon EFA");
    CHECK(efa.rdma);
    CHECK(efa.interfaces == std::vector<std::string>{"rdmap16s27"});
    REQUIRE(efa.port_bandwidth);
    CHECK(*efa.port_bandwidth == Approx(12.5e9));  // 100000 Mb/s

    const Device& ib = by_bus_id(topo, "0000:20:1b.0");  // class 0x020700, no <nic>
    CHECK(ib.kind == DeviceKind::nic);
    CHECK(ib.model == "Mellanox/NVIDIA ConnectX");
    CHECK(ib.rdma);
    CHECK(ib.interfaces.empty());
    CHECK(ib.port_bandwidth == std::nullopt);

    CHECK(warnings == std::vector<std::string>{
                          "'" + fixture("p4d-like.xml") +
                          "' line 7: ignored <nvlink>: NVLink connections are not imported (and 1 more like it)"});
}

TEST_CASE("a file of bare bus ids gives unclassified devices and a no-GPU warning", "[import_nccl]") {
    const std::string path = fixture("classless.xml");
    std::vector<std::string> warnings;
    const Topology topo = import_nccl_xml(path, warnings);

    CHECK(count(topo, DeviceKind::socket) == 3);
    CHECK(count(topo, DeviceKind::root_complex) == 2);  // the third <cpu> has nothing under it
    CHECK(count(topo, DeviceKind::pci_device) == 3);
    CHECK(count(topo, DeviceKind::gpu) == 0);
    const Device& dev = by_bus_id(topo, "0000:00:1a.0");  // written 0000:00:1A.0
    CHECK(topo.device(dev.parent).kind == DeviceKind::root_complex);
    CHECK(dev.numa_node == 1);
    CHECK(dev.vendor_id == std::nullopt);
    CHECK(dev.model.empty());
    const Link& unknown = uplink_of(topo, dev.id);
    CHECK(unknown.pcie == std::nullopt);
    CHECK(unknown.bandwidth == Approx(defaults::pcie_unknown().bandwidth));
    CHECK(topo.device(topo.devices_of(DeviceKind::socket)[2]).numa_node == 2);
    CHECK(topo.device(topo.devices_of(DeviceKind::socket)[0]).cpuset == std::nullopt);

    CHECK(warnings == std::vector<std::string>{"no GPU identified in '" + path +
                                               "' (the file lists 3 PCI devices without a class)"});
}

TEST_CASE("a <nic> directly under a <cpu> is a NIC on the root complex with an unknown link", "[import_nccl]") {
    std::vector<std::string> warnings;
    const Topology topo = import_nccl_xml(fixture("nic-under-cpu.xml"), warnings);
    CHECK(warnings.empty());

    CHECK(count(topo, DeviceKind::gpu) == 2);
    REQUIRE(count(topo, DeviceKind::nic) == 1);
    const Device& nic = topo.device(topo.devices_of(DeviceKind::nic)[0]);
    CHECK(nic.pci_bus_id == std::nullopt);
    CHECK(nic.interfaces == std::vector<std::string>{"eth0"});
    CHECK_FALSE(nic.rdma);  // gdr="0" on a NIC without a PCI path: NCCL's socket transport
    REQUIRE(nic.port_bandwidth);
    CHECK(*nic.port_bandwidth == Approx(12.5e9));
    const Device& rc = topo.device(nic.parent);
    CHECK(rc.kind == DeviceKind::root_complex);
    CHECK(topo.device(rc.parent).name == "socket0");
    CHECK(uplink_of(topo, nic.id).pcie == std::nullopt);

    const Device& gpu = by_bus_id(topo, "0001:00:00.0");
    CHECK(gpu.model == "NVIDIA A100 80GB PCIe");
    CHECK(gpu.parent == nic.parent);
    CHECK(uplink_of(topo, gpu.id).pcie == std::nullopt);  // link_speed="" link_width="0"
    CHECK(topo.device(topo.devices_of(DeviceKind::socket)[1]).cpuset == "24-47");

    // NCCL's familyid 175 is family 19h (25): AMD Zen3/4 xGMI, not the older Infinity Fabric default.
    const auto xgmi = std::find_if(topo.links.begin(), topo.links.end(),
                                   [](const Link& l) { return l.kind == LinkKind::socket_interconnect; });
    REQUIRE(xgmi != topo.links.end());
    CHECK_THAT(xgmi->source, Catch::Contains("AMD Zen3/4 xGMI"));
}

TEST_CASE("broken files are DataErrors naming the file and line", "[import_nccl]") {
    std::vector<std::string> warnings;
    const std::string truncated = fixture("truncated.xml");
    CHECK_THROWS_WITH(
        import_nccl_xml(truncated, warnings),  // line 4: the innermost element left open
        "'" + truncated +
            "' line 4: invalid XML: unclosed element; the file ends before the closing </system> (truncated?)");
    const std::string bad_bus = fixture("bad-busid.xml");
    CHECK_THROWS_AS(import_nccl_xml(bad_bus, warnings), DataError);
    CHECK_THROWS_WITH(import_nccl_xml(bad_bus, warnings),
                      "'" + bad_bus + "' line 5: malformed PCI bus id '0000:zz:00.0'");

    CHECK_THROWS_WITH(
        import_text("<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"0000:01:00.0\" cla", warnings),
        "'inline.xml' line 3: invalid XML: malformed attribute in <pci>; the file ends before the closing </system> "
        "(truncated?)");
    CHECK_THROWS_WITH(import_text("<system>\n  <cpu>\n  </pci>\n</system>\n", warnings),
                      "'inline.xml' line 2: invalid XML: mismatched end tag in <cpu>");
    CHECK_THROWS_WITH(import_text("", warnings), "'inline.xml': invalid XML: empty document");
    CHECK_THROWS_WITH(
        import_text("<?xml version=\"1.0\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
                    "<topology version=\"2.0\">\n</topology>\n",
                    warnings),
        "'inline.xml' line 3: not an NCCL topology file (root element is 'topology'); use --xml for hwloc XML");
    CHECK_THROWS_WITH(import_text("<graphs/>", warnings),
                      "'inline.xml' line 1: not an NCCL topology file (root element is 'graphs')");
    CHECK_THROWS_AS(import_nccl_xml(fixture("does-not-exist.xml"), warnings), InputMissingError);
    CHECK(warnings.empty());
}

TEST_CASE("malformed attribute values are DataErrors with the line", "[import_nccl]") {
    std::vector<std::string> warnings;
    const auto with_pci = [](const std::string& attributes) {
        return "<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"0000:01:00.0\" " + attributes +
               "/>\n</cpu>\n</system>\n";
    };
    CHECK_THROWS_WITH(import_text(with_pci("link_speed=\"16 GT/s\" link_width=\"x16\""), warnings),
                      "'inline.xml' line 3: malformed link_width 'x16' (expected a lane count such as 16)");
    CHECK_THROWS_WITH(import_text(with_pci("class=\"0x03zz00\""), warnings),
                      "'inline.xml' line 3: malformed class '0x03zz00' (expected a hex number such as 0x10de)");
    CHECK_THROWS_WITH(import_text(with_pci("vendor=\"nvidia\""), warnings),
                      "'inline.xml' line 3: malformed vendor 'nvidia' (expected a hex number such as 0x10de)");
    CHECK_THROWS_WITH(import_text("<system version=\"1\">\n<cpu numaid=\"zero\"/>\n</system>", warnings),
                      "'inline.xml' line 2: malformed numaid 'zero' (expected an integer)");
    CHECK_THROWS_WITH(
        import_text("<system version=\"1\">\n<cpu numaid=\"0\" affinity=\"ff,xyz\"/>\n</system>", warnings),
        "'inline.xml' line 2: malformed affinity 'ff,xyz' (expected comma-separated 32-bit hex groups such as "
        "000000ff,ffff0000)");
    CHECK_THROWS_WITH(import_text("<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"0000:01:00.0\"/>\n"
                                  "<pci busid=\"01:00.0\"/>\n</cpu>\n</system>",
                                  warnings),
                      "'inline.xml' line 4: duplicate PCI bus id '0000:01:00.0' (first at line 3)");
}

TEST_CASE("odd but readable files import with warnings", "[import_nccl]") {
    SECTION("version other than 1") {
        std::vector<std::string> warnings;
        const Topology topo = import_text("<system version=\"2\">\n<cpu numaid=\"0\"/>\n</system>", warnings);
        CHECK(count(topo, DeviceKind::socket) == 1);
        CHECK(warnings == std::vector<std::string>{
                              "'inline.xml' line 1: NCCL topology version '2' is not supported; read as version 1",
                              "no GPU identified in 'inline.xml'"});
    }
    SECTION("no version, nothing under the cpus") {
        std::vector<std::string> warnings;
        const Topology topo = import_text("<system>\n<cpu numaid=\"-1\"/>\n<cpu numaid=\"1\"/>\n</system>", warnings);
        CHECK(count(topo, DeviceKind::socket) == 2);
        CHECK(count(topo, DeviceKind::root_complex) == 0);
        CHECK(topo.device(topo.devices_of(DeviceKind::socket)[0]).numa_node == std::nullopt);
        CHECK(warnings ==
              std::vector<std::string>{"'inline.xml' line 1: <system> has no version attribute; read as version 1",
                                       "no GPU identified in 'inline.xml'"});
    }
    SECTION("empty system") {
        std::vector<std::string> warnings;
        const Topology topo = import_text("<system version=\"1\"/>", warnings);
        CHECK(topo.devices.empty());
        CHECK(topo.nodes.size() == 1);
        CHECK(warnings == std::vector<std::string>{"no GPU identified in 'inline.xml'"});
    }
    SECTION("unrecognised link speed, unknown elements, one classless device") {
        std::vector<std::string> warnings;
        const Topology topo = import_text("<system version=\"1\">\n<cpu numaid=\"0\">\n"
                                          "<pci busid=\"0000:01:00.0\" link_speed=\"Unknown\" link_width=\"16\"/>\n"
                                          "<memory size=\"1\"/>\n</cpu>\n<pci busid=\"0000:02:00.0\"/>\n</system>",
                                          warnings);
        CHECK(count(topo, DeviceKind::pci_device) == 1);
        CHECK(uplink_of(topo, topo.devices_of(DeviceKind::pci_device)[0]).pcie == std::nullopt);
        CHECK(warnings == std::vector<std::string>{
                              "'inline.xml' line 3: unrecognised link_speed 'Unknown'; PCIe Gen4 x16 assumed",
                              "'inline.xml' line 4: ignored <memory>: unknown element",
                              "'inline.xml' line 6: ignored <pci>: outside any <cpu>",
                              "no GPU identified in 'inline.xml' (the file lists 1 PCI device without a class)"});
    }
    SECTION("a <nic> inside a switch, a <gpu> where none belongs, a width PCIe does not have") {
        std::vector<std::string> warnings;
        const Topology topo = import_text(
            "<system version=\"1\">\n<cpu numaid=\"0\">\n"
            "<pci busid=\"ffff:ff:01.0\" class=\"0x060400\">\n"
            "<nic><net name=\"mlx5_0\" speed=\"200000\" gdr=\"1\"/><net name=\"mlx5_1\" speed=\"400000\"/></nic>\n"
            "<gpu dev=\"0\"/>\n"
            "<pci busid=\"0000:01:00.0\" class=\"0x030200\" link_speed=\"16 GT/s\" link_width=\"3\"/>\n"
            "</pci>\n</cpu>\n</system>",
            warnings);
        REQUIRE(count(topo, DeviceKind::nic) == 1);
        const Device& nic = topo.device(topo.devices_of(DeviceKind::nic)[0]);
        CHECK(topo.device(nic.parent).kind == DeviceKind::pcie_switch);
        CHECK(nic.interfaces == std::vector<std::string>{"mlx5_0", "mlx5_1"});
        CHECK(nic.rdma);
        REQUIRE(nic.port_bandwidth);
        CHECK(*nic.port_bandwidth == Approx(50e9));  // the faster port
        const Link& gpu_link = uplink_of(topo, by_bus_id(topo, "0000:01:00.0").id);
        REQUIRE(gpu_link.pcie);
        CHECK(gpu_link.pcie->gen == 4);
        CHECK(gpu_link.pcie->width == 0);
        CHECK(warnings ==
              std::vector<std::string>{"'inline.xml' line 5: ignored <gpu>: inside the <pci> of a PCIe switch",
                                       "'inline.xml' line 6: unsupported link_width 3; width unknown"});
    }
    SECTION("a leaf with a class that is neither GPU nor NIC is a classified pci_device") {
        std::vector<std::string> warnings;
        const Topology topo = import_text("<system version=\"1\">\n<cpu numaid=\"0\">\n"
                                          "<pci busid=\"0000:c4:00.0\" class=\"0x068000\" vendor=\"0x10de\"/>\n"
                                          "</cpu>\n</system>",
                                          warnings);
        REQUIRE(count(topo, DeviceKind::pci_device) == 1);
        CHECK(warnings == std::vector<std::string>{"no GPU identified in 'inline.xml'"});
    }
}
