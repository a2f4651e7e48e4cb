// Facts the README of ../shared/data/topologies states about each real machine, checked through the importers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <set>

#include "gpuops/topo/import_hwloc.hpp"
#include "gpuops/topo/import_nccl.hpp"
#include "gpuops/topo/routing.hpp"
#include "gpuops/topo/topology_json.hpp"

#include "external/data_dir.hpp"
#include "support/topology_helpers.hpp"

using namespace gpuops::topo;
using gpuops::test::count;

namespace {

std::string path_of(const std::string& file) {
    return (gpuops::test::external_data_dir() / "topologies" / file).string();
}

struct Imported {
    Topology topo;
    std::vector<std::string> warnings;
};

Imported load(const std::string& file) {
    Imported r;
    if (file.rfind("nccl-", 0) == 0) {
        r.topo = import_nccl_xml(path_of(file), r.warnings);
    } else {
        r.topo = import_hwloc_xml(path_of(file), r.warnings);
    }
    return r;
}

std::size_t count_where(const Topology& t, DeviceKind kind, const std::function<bool(const Device&)>& pred) {
    std::size_t n = 0;
    for (DeviceId id : t.devices_of(kind))
        n += pred(t.device(id)) ? 1 : 0;
    return n;
}

std::set<DeviceId> parents_of(const Topology& t, DeviceKind kind) {
    std::set<DeviceId> out;
    for (DeviceId id : t.devices_of(kind))
        out.insert(t.device(id).parent);
    return out;
}

bool warned_no_gpu(const Imported& r) {
    return std::any_of(r.warnings.begin(), r.warnings.end(),
                       [](const std::string& w) { return w.find("no GPU") != std::string::npos; });
}

}  // namespace

TEST_CASE("every topology file imports, validates, round-trips and routes every GPU pair", "[external]") {
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(gpuops::test::external_data_dir() / "topologies")) {
        if (entry.path().extension() == ".xml") files.push_back(entry.path().filename().string());
    }
    std::sort(files.begin(), files.end());
    REQUIRE(files.size() >= 15);
    for (const auto& file : files) {
        INFO(file);
        const Imported r = load(file);
        CHECK_NOTHROW(validate(r.topo));
        const auto doc = to_json(r.topo, "test");
        CHECK(to_json(topology_from_json(doc), "test") == doc);  // the document survives a read/write cycle
        CHECK(count(r.topo, DeviceKind::socket) >= 1);
        if (count(r.topo, DeviceKind::gpu) == 0) CHECK(warned_no_gpu(r));
        const Router router(r.topo);
        const auto gpus = r.topo.devices_of(DeviceKind::gpu);
        for (DeviceId a : gpus)
            for (DeviceId b : gpus) {
                if (a == b) continue;
                const Path p = router.route(a, b);
                CHECK(!p.edges.empty());
                CHECK(p.bottleneck > 0);
            }
    }
}

TEST_CASE("DGX-2: 16 V100 behind PLX switch trees, no NIC", "[external]") {
    const auto r = load("hwloc-nvidiaDGX2.xml");
    const auto& t = r.topo;
    CHECK(count(t, DeviceKind::gpu) == 16);
    CHECK(count(t, DeviceKind::socket) == 2);
    CHECK(count(t, DeviceKind::nic) == 0);
    for (DeviceId g : t.devices_of(DeviceKind::gpu)) {
        const Device& gpu = t.device(g);
        CHECK(gpu.device_id == 0x1db8);
        const Device& sw = t.device(gpu.parent);
        CHECK(sw.kind == DeviceKind::pcie_switch);
        CHECK(sw.vendor_id == 0x10b5);                               // PLX
        CHECK(t.device(sw.parent).kind == DeviceKind::pcie_switch);  // leaf switch below a top switch
    }
    CHECK(parents_of(t, DeviceKind::gpu).size() == 8);  // two GPUs per leaf switch
    const Router router(t);
    const auto gpus = t.devices_of(DeviceKind::gpu);
    CHECK(router.relation(gpus[0], gpus[1]) == Relation::pix);
    CHECK(router.relation(gpus[0], gpus[2]) == Relation::pxb);
    CHECK(router.relation(gpus[0], gpus[15]) == Relation::sys);
}

TEST_CASE("AWS p4d, NCCL format: 8 GPUs and 4 EFA NICs under 4 switches", "[external]") {
    const auto r = load("nccl-aws-p4d-24xl-topo.xml");
    const auto& t = r.topo;
    CHECK(count(t, DeviceKind::gpu) == 8);
    CHECK(count(t, DeviceKind::nic) == 4);
    CHECK(count(t, DeviceKind::pcie_switch) == 4);
    CHECK(count(t, DeviceKind::socket) == 2);
    CHECK(count_where(t, DeviceKind::nic, [](const Device& d) { return d.rdma && d.device_id == 0xefa0; }) == 4);
    for (DeviceId sw : t.devices_of(DeviceKind::pcie_switch)) {
        std::size_t gpus = 0, nics = 0;
        for (DeviceId c : t.children(sw)) {
            gpus += t.device(c).kind == DeviceKind::gpu ? 1 : 0;
            nics += t.device(c).kind == DeviceKind::nic ? 1 : 0;
        }
        CHECK(gpus == 2);
        CHECK(nics == 1);
    }
}

TEST_CASE("AWS p4d, real hwloc export: 8 GPUs under 4 host bridges, 4 EFA", "[external]") {
    const auto r = load("hwloc-aws-p4d.xml");
    const auto& t = r.topo;
    CHECK(count(t, DeviceKind::gpu) == 8);
    CHECK(count(t, DeviceKind::socket) == 2);
    const auto gpu_parents = parents_of(t, DeviceKind::gpu);
    CHECK(gpu_parents.size() == 4);
    for (DeviceId p : gpu_parents)
        CHECK(t.device(p).kind == DeviceKind::root_complex);
    CHECK(count_where(t, DeviceKind::nic, [](const Device& d) { return d.rdma; }) == 4);
    CHECK(count_where(t, DeviceKind::gpu, [](const Device& d) { return d.device_id == 0x20b0; }) == 8);
}

TEST_CASE("Azure NDv4: 8 GPUs and 8 InfiniBand NICs under 4 switches", "[external]") {
    const auto r = load("nccl-azure-ndv4-topo.xml");
    const auto& t = r.topo;
    CHECK(count(t, DeviceKind::gpu) == 8);
    CHECK(count(t, DeviceKind::nic) == 8);
    CHECK(count(t, DeviceKind::pcie_switch) == 4);
    CHECK(count(t, DeviceKind::socket) == 4);
    CHECK(count_where(t, DeviceKind::nic, [](const Device& d) { return d.rdma; }) == 8);
}

TEST_CASE("Azure NDv5: 8 switches, each 1 GPU + 1 NIC at Gen5", "[external]") {
    const auto r = load("nccl-azure-ndv5-topo.xml");
    const auto& t = r.topo;
    CHECK(count(t, DeviceKind::gpu) == 8);
    CHECK(count(t, DeviceKind::nic) == 8);
    CHECK(count(t, DeviceKind::pcie_switch) == 8);
    for (DeviceId g : t.devices_of(DeviceKind::gpu)) {
        const auto up = t.uplink(g);
        REQUIRE(up);
        REQUIRE(t.links[*up].pcie);
        CHECK(t.links[*up].pcie->gen == 5);
    }
}

TEST_CASE("Azure NDv2: 8 GPUs directly under the CPUs, 1 NIC", "[external]") {
    const auto r = load("nccl-azure-ndv2-topo.xml");
    const auto& t = r.topo;
    CHECK(count(t, DeviceKind::gpu) == 8);
    CHECK(count(t, DeviceKind::nic) == 1);
    CHECK(count(t, DeviceKind::pcie_switch) == 0);
    for (DeviceId p : parents_of(t, DeviceKind::gpu))
        CHECK(t.device(p).kind == DeviceKind::root_complex);
}

TEST_CASE("Azure NC A100 v4: 4 GPUs on 4 NUMA nodes, eth0", "[external]") {
    const auto r = load("nccl-azure-ncv4-topo.xml");
    const auto& t = r.topo;
    CHECK(count(t, DeviceKind::gpu) == 4);
    CHECK(count(t, DeviceKind::nic) == 1);
    CHECK(count(t, DeviceKind::socket) == 4);
}

TEST_CASE("AWS p5 files: the minimal one lists no GPU, the richer one 8 GPUs and 32 NICs", "[external]") {
    const auto minimal = load("nccl-aws-p5.48xl-topo.xml");
    CHECK(count(minimal.topo, DeviceKind::gpu) == 0);
    CHECK(warned_no_gpu(minimal));
    CHECK(count(minimal.topo, DeviceKind::pcie_switch) == 8);
    CHECK(count(minimal.topo, DeviceKind::pci_device) == 32);
    const auto rich = load("nccl-aws-p5.48xl-topo.79565c0e.xml");
    CHECK(count(rich.topo, DeviceKind::gpu) == 8);
    CHECK(count(rich.topo, DeviceKind::nic) == 32);
    CHECK(count(rich.topo, DeviceKind::pcie_switch) == 8);
}

TEST_CASE("AWS g5: a minimal file that identifies no GPU imports with a warning", "[external]") {
    const auto r = load("nccl-aws-g5.48xl-topo.xml");
    CHECK(count(r.topo, DeviceKind::gpu) == 0);
    CHECK(count(r.topo, DeviceKind::pci_device) == 9);
    CHECK(warned_no_gpu(r));
}

TEST_CASE("hwloc test machines: GPUs, display controllers and InfiniBand NICs are told apart", "[external]") {
    const auto whole = load("hwloc-32em64t-2n8c2t-pci-wholeio.xml");
    CHECK(count_where(whole.topo, DeviceKind::gpu, [](const Device& d) { return d.vendor_id == 0x10de; }) == 3);
    CHECK(count_where(whole.topo, DeviceKind::gpu, [](const Device& d) { return d.vendor_id == 0x1002; }) == 1);
    CHECK(count_where(whole.topo, DeviceKind::gpu, [](const Device& d) { return d.vendor_id == 0x102b; }) ==
          0);  // Matrox
    CHECK(count_where(whole.topo, DeviceKind::nic, [](const Device& d) {
              return d.rdma && std::find(d.interfaces.begin(), d.interfaces.end(), "mlx5_0") != d.interfaces.end();
          }) == 1);

    const auto older = load("hwloc-24em64t-2n6c2t-pci.xml");
    CHECK(count(older.topo, DeviceKind::gpu) == 3);
    CHECK(count_where(older.topo, DeviceKind::nic, [](const Device& d) { return d.rdma; }) == 1);  // mlx4_0, class 0c06

    const auto power = load("hwloc-power8gpudistances.xml");
    CHECK(count(power.topo, DeviceKind::gpu) == 4);
    CHECK(count_where(power.topo, DeviceKind::gpu, [](const Device& d) { return d.uuid.has_value(); }) == 4);
    CHECK(count(power.topo, DeviceKind::socket) == 2);

    const auto vfs = load("hwloc-16intel64-manyVFs.xml");
    CHECK(count(vfs.topo, DeviceKind::gpu) == 0);
    CHECK(warned_no_gpu(vfs));
    CHECK(count(vfs.topo, DeviceKind::nic) == 18);

    const auto vm = load("local-vm-2core-nogpu.xml");
    CHECK(count(vm.topo, DeviceKind::gpu) == 0);
    CHECK(count(vm.topo, DeviceKind::nic) == 1);
    CHECK(warned_no_gpu(vm));
}
