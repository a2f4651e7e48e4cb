// Unit tests for the hwloc importer: hand-written XML fixtures in tests/fixtures/hwloc, and live discovery here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "gpuops/core/error.hpp"
#include "gpuops/core/units.hpp"
#include "gpuops/topo/builder.hpp"
#include "gpuops/topo/hwloc_handle.hpp"
#include "gpuops/topo/import_hwloc.hpp"
#include "gpuops/topo/link_defaults.hpp"
#include "gpuops/topo/presets.hpp"
#include "gpuops/topo/routing.hpp"
#include "gpuops/topo/sysfs_pci.hpp"

#include "support/temp_dir.hpp"
#include "support/topology_helpers.hpp"

using gpuops::DataError;
using gpuops::ExitCode;
using gpuops::InputMissingError;
using namespace gpuops::topo;
using gpuops::test::by_bus_id;
using gpuops::test::by_name;
using gpuops::test::count;
using gpuops::test::uplink_of;

namespace {

std::string fixture(const std::string& name) { return std::string(GPUOPS_FIXTURES_DIR) + "/hwloc/" + name; }

/// The socket above a device, by walking its parents.
const Device& socket_of(const Topology& topo, DeviceId id) {
    DeviceId up = id;
    while (topo.device(up).kind != DeviceKind::socket) {
        up = topo.device(up).parent;
        REQUIRE(up != no_device);
    }
    return topo.device(up);
}

/// hwloc's pci_link_speed is GB/s of the encoded link; the model keeps the effective share of it.
double effective_from_hwloc(double gbs) { return gbs * 1e9 * defaults::pcie_efficiency; }

bool contains(const std::vector<std::string>& lines, const std::string& part) {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(part) != std::string::npos; });
}

/// What `action` wrote to file descriptor 2 (hwloc and libxml2 print there, bypassing std::cerr).
std::string stderr_of(const std::function<void()>& action) {
    std::fflush(stderr);
    const std::unique_ptr<std::FILE, decltype(&std::fclose)> capture(std::tmpfile(), &std::fclose);
    REQUIRE(capture != nullptr);
    const int saved = dup(2);
    dup2(fileno(capture.get()), 2);
    try {
        action();
    } catch (...) {
        // only the output matters here
    }
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
    std::rewind(capture.get());
    std::string text;
    for (int c = std::fgetc(capture.get()); c != EOF; c = std::fgetc(capture.get()))
        text += static_cast<char>(c);
    return text;
}

}  // namespace

TEST_CASE("a PCIe switch tree collapses into one switch device", "[import_hwloc]") {
    std::vector<std::string> warnings;
    const Topology topo = import_hwloc_xml(fixture("switch-2pkg.xml"), warnings);

    CHECK(count(topo, DeviceKind::socket) == 2);
    CHECK(count(topo, DeviceKind::cpu_memory) == 2);
    CHECK(count(topo, DeviceKind::root_complex) == 3);
    CHECK(count(topo, DeviceKind::pcie_switch) == 1);  // root port, 3 downstream ports, AST1150: all transparent
    CHECK(count(topo, DeviceKind::gpu) == 3);
    CHECK(count(topo, DeviceKind::nic) == 1);
    CHECK(count(topo, DeviceKind::pci_device) == 2);

    const Device& sw = topo.device(topo.devices_of(DeviceKind::pcie_switch).at(0));
    CHECK(sw.pci_bus_id == "0000:16:00.0");  // the upstream port, not the root port 15:01.0
    CHECK(sw.vendor_id == 0x10b5);
    CHECK(sw.device_id == 0xc010);
    CHECK(sw.model == "PEX 89104 PCIe Gen5 Switch");
    REQUIRE(sw.parent != no_device);
    CHECK(topo.device(sw.parent).kind == DeviceKind::root_complex);
    CHECK(socket_of(topo, sw.id).name == "socket0");
    CHECK(uplink_of(topo, sw.id).bandwidth == Approx(effective_from_hwloc(31.507692)));

    // Both GPUs and the NIC hang off the switch itself: its downstream ports are not devices.
    for (const char* bus : {"0000:18:00.0", "0000:19:00.0", "0000:1a:00.0"}) {
        INFO(bus);
        CHECK(by_bus_id(topo, bus).parent == sw.id);
    }
    CHECK(topo.children(sw.id).size() == 3);
}

TEST_CASE("a bridge fanning out to several bridges is a switch even right below the host bridge", "[import_hwloc]") {
    std::vector<std::string> warnings;
    const Topology topo = import_hwloc_xml(fixture("switch-without-root-port.xml"), warnings);

    REQUIRE(count(topo, DeviceKind::pcie_switch) == 1);
    const Device& sw = topo.device(topo.devices_of(DeviceKind::pcie_switch).at(0));
    CHECK(sw.pci_bus_id == "0000:00:05.0");
    CHECK(topo.device(sw.parent).kind == DeviceKind::root_complex);
    CHECK(by_bus_id(topo, "0000:03:00.0").parent == sw.id);
    CHECK(by_bus_id(topo, "0000:04:00.0").parent == sw.id);
}

TEST_CASE("GPUs, NICs and other PCI functions are told apart", "[import_hwloc]") {
    std::vector<std::string> warnings;
    const Topology topo = import_hwloc_xml(fixture("switch-2pkg.xml"), warnings);

    // Endpoints are named in bus id order.
    CHECK(by_name(topo, "gpu0").pci_bus_id == "0000:18:00.0");
    CHECK(by_name(topo, "gpu1").pci_bus_id == "0000:19:00.0");
    CHECK(by_name(topo, "gpu2").pci_bus_id == "0000:98:00.0");

    const Device& h100 = by_bus_id(topo, "0000:18:00.0");
    CHECK(h100.kind == DeviceKind::gpu);
    CHECK(h100.vendor_id == 0x10de);
    CHECK(h100.device_id == 0x2330);
    CHECK(h100.model == "NVIDIA H100 80GB HBM3");  // GPUModel of the NVML OS device wins over PCIDevice
    CHECK(h100.uuid == "GPU-11111111-2222-3333-4444-555555555555");
    CHECK(h100.interfaces == std::vector<std::string>{"nvml0"});
    CHECK(uplink_of(topo, h100.id).bandwidth == Approx(effective_from_hwloc(31.507692)));
    CHECK(uplink_of(topo, h100.id).source.find("hwloc") != std::string::npos);

    const Device& no_osdev = by_bus_id(topo, "0000:19:00.0");
    CHECK(no_osdev.kind == DeviceKind::gpu);  // class 0302 alone is enough
    CHECK(no_osdev.model == "GH100 [H100 SXM5 80GB]");
    CHECK_FALSE(no_osdev.uuid);

    const Device& a10 = by_bus_id(topo, "0000:98:00.0");
    CHECK(a10.kind == DeviceKind::gpu);                               // class 0300, but NVIDIA
    CHECK(topo.device(a10.parent).kind == DeviceKind::root_complex);  // the root port is transparent
    CHECK(socket_of(topo, a10.id).name == "socket1");
    CHECK(a10.numa_node == 1);
    CHECK(uplink_of(topo, a10.id).bandwidth == Approx(effective_from_hwloc(7.876923)));

    const Device& nic = by_bus_id(topo, "0000:1a:00.0");  // written "1A" in the file
    CHECK(nic.kind == DeviceKind::nic);
    CHECK(nic.rdma);
    CHECK(nic.interfaces == std::vector<std::string>{"mlx5_0", "ibp26s0"});  // the RDMA device first, as nvidia-smi
    CHECK(nic.model == "MT2910 Family [ConnectX-7]");

    const Device& bmc = by_bus_id(topo, "0000:9a:00.0");
    CHECK(bmc.kind == DeviceKind::pci_device);  // ASPEED VGA with only a DRM card0: not a GPU
    CHECK(bmc.interfaces == std::vector<std::string>{"card0"});
    CHECK(topo.device(bmc.parent).kind == DeviceKind::root_complex);  // the PCIe-to-PCI bridge is no switch
    CHECK(uplink_of(topo, bmc.id).bandwidth == Approx(defaults::pcie_unknown().bandwidth));

    const Device& sata = by_bus_id(topo, "0000:00:1f.2");
    CHECK(sata.kind == DeviceKind::pci_device);
    CHECK(socket_of(topo, sata.id).name == "socket0");
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0] ==
          "host bridge 0000:[00-00] is attached to the Machine, not to one of its 2 packages; placed under socket0");
}

TEST_CASE("packages become sockets with NUMA node, cpuset, cores and memory", "[import_hwloc]") {
    const std::string path = fixture("switch-2pkg.xml");
    std::vector<std::string> warnings;
    const Topology topo = import_hwloc_xml(path, warnings);

    CHECK(topo.source == Source{"hwloc-xml", path});
    CHECK(topo.nodes == std::vector<Node>{Node{"gpu-node-01"}});  // the Machine's HostName info

    const Device& s0 = by_name(topo, "socket0");
    CHECK(s0.model == "Intel(R) Xeon(R) Platinum 8480+");
    CHECK(s0.numa_node == 0);
    CHECK(s0.cpuset == "0-1,4-5");  // OS indexes of the PUs, hwloc list format
    CHECK(s0.cores == "0-1");       // logical core indexes, as Slurm's Cores= counts them
    const Device& s1 = by_name(topo, "socket1");
    CHECK(s1.numa_node == 1);
    CHECK(s1.cpuset == "2-3,6-7");
    CHECK(s1.cores == "2-3");

    CHECK(by_name(topo, "mem0").memory_bytes == 68719476736ULL);
    CHECK(by_name(topo, "mem1").memory_bytes == 34359738368ULL);

    // CPU identity reaches the socket interconnect default (family 6 model 143 = Sapphire Rapids).
    const auto upi = std::find_if(topo.links.begin(), topo.links.end(),
                                  [](const Link& l) { return l.kind == LinkKind::socket_interconnect; });
    REQUIRE(upi != topo.links.end());
    CHECK(upi->source.find("Sapphire Rapids") != std::string::npos);
}

TEST_CASE("with several NUMA nodes per package, I/O takes the NUMA node of its group", "[import_hwloc]") {
    std::vector<std::string> warnings;
    const Topology topo = import_hwloc_xml(fixture("snc-2numa.xml"), warnings);
    CHECK(warnings.empty());

    // One package, so one socket: the model keeps the package as the tree parent.
    REQUIRE(count(topo, DeviceKind::socket) == 1);
    const Device& socket = by_name(topo, "socket0");
    CHECK(socket.numa_node == 0);
    CHECK(socket.cpuset == "0-3");
    CHECK(by_name(topo, "mem0").memory_bytes == 2 * 68719476736ULL);

    const Device& gpu0 = by_bus_id(topo, "0000:10:00.0");
    const Device& gpu1 = by_bus_id(topo, "0000:20:00.0");
    CHECK(gpu0.name == "gpu0");
    CHECK(gpu1.name == "gpu1");
    CHECK(socket_of(topo, gpu0.id).id == socket.id);
    CHECK(socket_of(topo, gpu1.id).id == socket.id);
    CHECK(gpu0.numa_node == 0);
    CHECK(gpu1.numa_node == 1);  // lstopo puts 20:00.0 in the group of NUMANode P#1
    REQUIRE(topo.device(gpu0.parent).kind == DeviceKind::root_complex);
    REQUIRE(topo.device(gpu1.parent).kind == DeviceKind::root_complex);
    CHECK(topo.device(gpu0.parent).numa_node == 0);
    CHECK(topo.device(gpu1.parent).numa_node == 1);

    // A switch and everything below it share their root complex's NUMA node.
    REQUIRE(count(topo, DeviceKind::pcie_switch) == 1);
    const Device& sw = topo.device(topo.devices_of(DeviceKind::pcie_switch).at(0));
    CHECK(sw.pci_bus_id == "0000:30:00.0");
    CHECK(topo.device(sw.parent).numa_node == 1);
    CHECK(sw.numa_node == 1);
    const Device& nic = by_bus_id(topo, "0000:32:00.0");
    CHECK(nic.parent == sw.id);
    CHECK(nic.numa_node == 1);
    CHECK(by_bus_id(topo, "0000:33:00.0").numa_node == 1);

    // nvidia-smi words: different sub-NUMA clusters are SYS, host bridges of one NUMA node NODE.
    const Router router(topo);
    CHECK(router.relation(gpu0.id, gpu1.id) == Relation::sys);
    CHECK(router.relation(gpu1.id, nic.id) == Relation::node);

    // OpenFabrics devices come first, then the others, each group in hwloc's order.
    CHECK(nic.kind == DeviceKind::nic);
    CHECK(nic.rdma);
    CHECK(nic.interfaces == std::vector<std::string>{"mlx4_0", "ib0", "ib1"});
}

TEST_CASE("hwloc 1.x XML with GPUs directly below the host bridges", "[import_hwloc]") {
    std::vector<std::string> warnings;
    const Topology topo = import_hwloc_xml(fixture("flat-v1.xml"), warnings);

    CHECK(topo.nodes == std::vector<Node>{Node{""}});  // no HostName info
    CHECK(count(topo, DeviceKind::socket) == 2);
    CHECK(count(topo, DeviceKind::root_complex) == 2);
    CHECK(count(topo, DeviceKind::pcie_switch) == 0);
    CHECK(count(topo, DeviceKind::gpu) == 2);
    CHECK(count(topo, DeviceKind::nic) == 1);
    CHECK(count(topo, DeviceKind::pci_device) == 1);
    CHECK(warnings.empty());

    const Device& v100 = by_bus_id(topo, "0000:00:04.0");
    CHECK(v100.kind == DeviceKind::gpu);
    CHECK(v100.model == "Tesla V100-PCIE-16GB");
    CHECK(v100.interfaces == std::vector<std::string>{"cuda0"});
    CHECK(topo.device(v100.parent).kind == DeviceKind::root_complex);
    CHECK(socket_of(topo, v100.id).name == "socket0");
    CHECK(uplink_of(topo, v100.id).bandwidth == Approx(effective_from_hwloc(15.753846)));

    const Device& mi50 = by_bus_id(topo, "0000:80:04.0");
    CHECK(mi50.kind == DeviceKind::gpu);  // a VGA function, but with an OpenCL device
    CHECK(mi50.model == "gfx906");
    CHECK(socket_of(topo, mi50.id).name == "socket1");
    CHECK(uplink_of(topo, mi50.id).bandwidth == Approx(defaults::pcie_unknown().bandwidth));  // pci_link_speed 0

    CHECK(by_bus_id(topo, "0000:80:06.0").kind == DeviceKind::pci_device);  // Matrox BMC graphics

    const Device& cx3 = by_bus_id(topo, "0000:00:05.0");
    CHECK(cx3.kind == DeviceKind::nic);  // class 0c06, "InfiniBand serial bus"
    CHECK(cx3.rdma);
    CHECK(cx3.interfaces == std::vector<std::string>{"mlx4_0", "ib0"});

    // hwloc turns 1.x NUMA nodes above the sockets into memory of each package.
    const Device& s0 = by_name(topo, "socket0");
    CHECK(s0.numa_node == 0);
    CHECK(s0.cpuset == "0-1");
    CHECK(s0.cores == "0-1");
    CHECK(by_name(topo, "socket1").cores == "2-3");
    CHECK(by_name(topo, "mem1").memory_bytes == 17179869184ULL);
}

TEST_CASE("a machine without packages is one socket", "[import_hwloc]") {
    const std::string path = fixture("no-package.xml");
    std::vector<std::string> warnings;
    const Topology topo = import_hwloc_xml(path, warnings);

    REQUIRE(count(topo, DeviceKind::socket) == 1);
    const Device& socket = by_name(topo, "socket0");
    CHECK(socket.model == "AMD EPYC 9R14");  // from the Machine's infos
    CHECK(socket.numa_node == 0);
    CHECK(socket.cpuset == "0-1");
    CHECK(socket.cores == "0-1");
    CHECK(by_name(topo, "mem0").memory_bytes == 8589934592ULL);

    CHECK(count(topo, DeviceKind::gpu) == 0);
    CHECK(count(topo, DeviceKind::nic) == 2);
    const Device& virtio = by_bus_id(topo, "0000:00:03.0");
    CHECK(virtio.kind == DeviceKind::nic);
    CHECK_FALSE(virtio.rdma);
    CHECK(virtio.interfaces == std::vector<std::string>{"eth0"});
    const Device& efa = by_bus_id(topo, "0000:00:06.0");
    CHECK(efa.kind == DeviceKind::nic);
    CHECK(efa.rdma);  // 1d0f:efa1, known by its id alone
    CHECK(efa.interfaces.empty());

    CHECK(warnings == std::vector<std::string>{"no GPU found in '" + path + "'"});
}

TEST_CASE("files hwloc would refuse get one-line errors with file and line", "[import_hwloc]") {
    std::vector<std::string> warnings;

    const std::string missing = fixture("no-such-file.xml");
    CHECK_THROWS_AS(import_hwloc_xml(missing, warnings), InputMissingError);

    const std::string truncated = fixture("truncated.xml");
    CHECK_THROWS_AS(import_hwloc_xml(truncated, warnings), DataError);
    CHECK_THROWS_WITH(import_hwloc_xml(truncated, warnings),
                      "'" + truncated +
                          "' line 23: invalid XML: malformed attribute in <object>; the file ends before the "
                          "closing </topology> (truncated?)");

    const std::string nccl = fixture("nccl-system.xml");
    CHECK_THROWS_AS(import_hwloc_xml(nccl, warnings), DataError);
    CHECK_THROWS_WITH(import_hwloc_xml(nccl, warnings),
                      "'" + nccl + "' line 2: this is an NCCL topology file; use --nccl-xml");

    const std::string other = fixture("not-topology.xml");
    CHECK_THROWS_AS(import_hwloc_xml(other, warnings), DataError);
    CHECK_THROWS_WITH(import_hwloc_xml(other, warnings),
                      "'" + other +
                          "' line 3: not an hwloc XML file: the root element is <inventory>, expected <topology>");

    const std::string v3 = fixture("version3.xml");
    CHECK_THROWS_AS(import_hwloc_xml(v3, warnings), DataError);
    CHECK_THROWS_WITH(import_hwloc_xml(v3, warnings),
                      "'" + v3 + "' line 4: unsupported hwloc XML version '3.0' (hwloc 2.9 reads 1.x and 2.x)");

    const std::string rejected = fixture("hwloc-rejects.xml");
    CHECK_THROWS_AS(import_hwloc_xml(rejected, warnings), DataError);
    CHECK_THROWS_WITH(import_hwloc_xml(rejected, warnings),
                      Catch::StartsWith("'" + rejected + "': hwloc cannot load this topology"));

    CHECK(warnings.empty());
}

TEST_CASE("errors carry their exit category and location", "[import_hwloc]") {
    std::vector<std::string> warnings;
    const std::string v3 = fixture("version3.xml");
    try {
        (void)import_hwloc_xml(v3, warnings);
        FAIL("version 3.0 was accepted");
    } catch (const DataError& e) {
        CHECK(e.code() == ExitCode::data);
        CHECK(e.where().file == v3);
        CHECK(e.where().line == 4);
        CHECK(e.reason() == "unsupported hwloc XML version '3.0' (hwloc 2.9 reads 1.x and 2.x)");
    }
    try {
        (void)import_hwloc_xml(fixture("no-such-file.xml"), warnings);
        FAIL("a missing file was accepted");
    } catch (const InputMissingError& e) {
        CHECK(e.code() == ExitCode::no_input);
    }
}

TEST_CASE("bad files leave stderr alone", "[import_hwloc]") {
    std::vector<std::string> warnings;
    for (const char* name : {"hwloc-rejects.xml", "truncated.xml", "version3.xml"}) {
        INFO(name);
        CHECK(stderr_of([&] { (void)import_hwloc_xml(fixture(name), warnings); }).empty());
    }
}

TEST_CASE("sysfs max_link_speed and max_link_width", "[import_hwloc]") {
    using sysfs::parse_max_link;
    CHECK(parse_max_link("16.0 GT/s PCIe\n", "16\n") == gpuops::units::PcieLink{4, 16, 16.0});
    CHECK(parse_max_link("8 GT/s", "8") == gpuops::units::PcieLink{3, 8, 8.0});  // older kernels
    CHECK(parse_max_link("32.0 GT/s PCIe", "0") == gpuops::units::PcieLink{5, 0, 32.0});
    CHECK(parse_max_link("2.5 GT/s PCIe", "") == gpuops::units::PcieLink{1, 0, 2.5});
    CHECK_FALSE(parse_max_link("Unknown", "16"));
    CHECK_FALSE(parse_max_link("", ""));
}

TEST_CASE("sysfs link capabilities are read from a device folder", "[import_hwloc]") {
    // A sysfs-shaped folder of our own: one Gen5 x16 device, one that only knows its speed, one with nothing.
    const gpuops::test::TempDir dir;
    const std::string root = dir.str();
    dir.write("0000:1b:00.0/max_link_speed", "32.0 GT/s PCIe\n");
    dir.write("0000:1b:00.0/max_link_width", "16\n");
    dir.write("0000:1c:00.0/max_link_speed", "16.0 GT/s PCIe\n");
    dir.mkdir("0000:1d:00.0");
    CHECK(sysfs::max_link("0000:1b:00.0", root) == gpuops::units::PcieLink{5, 16, 32.0});
    CHECK(sysfs::max_link("0000:1c:00.0", root) == gpuops::units::PcieLink{4, 0, 16.0});
    CHECK_FALSE(sysfs::max_link("0000:1d:00.0", root));
    CHECK_FALSE(sysfs::max_link("0000:ff:00.0", root));
}

TEST_CASE("NIC port speeds come from the kernel's RDMA and network views", "[import_hwloc]") {
    // A /sys/class of our own: an HDR port and a down one on mlx5_0, a 100 GbE netdev, a link-down netdev.
    const gpuops::test::TempDir dir;
    const std::string root = dir.str();
    dir.write("infiniband/mlx5_0/ports/1/rate", "200 Gb/sec (4X HDR)\n");
    dir.write("infiniband/mlx5_0/ports/2/rate", "Unknown\n");
    dir.write("net/ens1f0/speed", "100000\n");
    dir.write("net/eth9/speed", "-1\n");
    CHECK(sysfs::nic_port_speed({"mlx5_0", "ib0"}, root) == Approx(25e9));
    CHECK(sysfs::nic_port_speed({"ens1f0"}, root) == Approx(12.5e9));
    CHECK(sysfs::nic_port_speed({"ens1f0", "mlx5_0"}, root) == Approx(25e9));  // the fastest port
    CHECK_FALSE(sysfs::nic_port_speed({"eth9"}, root));                        // link down: unknown
    CHECK_FALSE(sysfs::nic_port_speed({"nothing"}, root));

    Topology t = build_preset("pcie-4gpu-direct");
    auto& nic0 = t.devices.at(*t.find(0, "nic0"));
    nic0.port_bandwidth.reset();
    nic0.interfaces = {"mlx5_0", "ib0"};
    sysfs::annotate_nic_speeds(t, root);
    CHECK(by_name(t, "nic0").port_bandwidth == Approx(25e9));
    CHECK(by_name(t, "nic1").port_bandwidth == Approx(25e9));  // kept: the preset's own 200 Gb/s
}

TEST_CASE("the hwloc handles are move-only and checked", "[import_hwloc]") {
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<HwlocTopology>);
    STATIC_REQUIRE_FALSE(std::is_copy_assignable_v<HwlocTopology>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<HwlocTopology>);
    STATIC_REQUIRE(std::is_nothrow_move_assignable_v<HwlocTopology>);
    STATIC_REQUIRE(std::is_nothrow_destructible_v<HwlocTopology>);
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<HwlocBitmap>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<HwlocBitmap>);

    HwlocTopology first;
    REQUIRE(first.get() != nullptr);
    const hwloc_topology_t raw = first.get();
    HwlocTopology second(std::move(first));
    CHECK(second.get() == raw);
    CHECK(first.get() == nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is what is tested

    HwlocBitmap set;
    set.set(0);
    set.set(2);
    set.set(3);
    CHECK(bitmap_list(set.get()) == "0,2-3");

    errno = EINVAL;
    try {
        check_hwloc(-1, "hwloc_topology_load");
        FAIL("a negative status was accepted");
    } catch (const HwlocError& e) {
        CHECK(e.api() == "hwloc_topology_load");
        CHECK(e.code() == ExitCode::unavailable);
        CHECK(std::string(e.what()) == "hwloc_topology_load failed: Invalid argument");
    }
    CHECK_NOTHROW(check_hwloc(0, "hwloc_topology_load"));
}

TEST_CASE("live discovery of this machine", "[import_hwloc][live]") {
    std::vector<std::string> warnings;
    Topology topo;
    REQUIRE_NOTHROW(topo = import_hwloc_live(warnings));

    CHECK(topo.source.kind == "hwloc");
    REQUIRE(topo.nodes.size() == 1);
    CHECK_FALSE(topo.nodes[0].hostname.empty());
    CHECK(topo.source.name == topo.nodes[0].hostname);
    CHECK(count(topo, DeviceKind::socket) >= 1);
    for (DeviceId socket : topo.devices_of(DeviceKind::socket))
        CHECK(topo.device(socket).cpuset);
    for (const Device& d : topo.devices) {
        if (!d.pci_bus_id) continue;
        INFO(*d.pci_bus_id);
        CHECK(normalize_bus_id(*d.pci_bus_id) == d.pci_bus_id);  // canonical: 4-digit domain, lower case
    }
    for (const Link& l : topo.links)
        CHECK(l.bandwidth > 0);
    if (count(topo, DeviceKind::gpu) == 0) CHECK(contains(warnings, "no GPU found on this machine"));
}
