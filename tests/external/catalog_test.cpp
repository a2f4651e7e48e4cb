// Catalogs of the real machines in ../shared/data/topologies: every file with a PCIe tree and GPUs gets a
// catalog whose every channel is contention-free and maximal; where the channels can be listed, the orbits
// expand to exactly the maximal channels Bron–Kerbosch finds.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include "gpuops/alltoall/catalog.hpp"
#include "gpuops/topo/import_hwloc.hpp"
#include "gpuops/topo/import_nccl.hpp"

#include "external/data_dir.hpp"

using namespace gpuops;

namespace {

topo::Topology import(const std::filesystem::path& file) {
    std::vector<std::string> warnings;
    const auto name = file.filename().string();
    return name.rfind("nccl-", 0) == 0 ? topo::import_nccl_xml(file.string(), warnings)
                                       : topo::import_hwloc_xml(file.string(), warnings);
}

}  // namespace

TEST_CASE("every real topology with GPUs gets a catalog the checker accepts", "[external][catalog]") {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(gpuops::test::external_data_dir() / "topologies"))
        if (e.path().extension() == ".xml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    int cataloged = 0;
    int complete = 0;
    for (const auto& file : files) {
        INFO(file.filename().string());
        const auto t = import(file);
        if (t.devices_of(topo::DeviceKind::gpu).size() < 2) {
            CHECK_THROWS_AS(alltoall::Catalog::build(t), DataError);  // nothing to catalog: said so, not crashed
            continue;
        }
        const auto c = alltoall::Catalog::build(t);
        CHECK(c.stats().orbits > 0);
        // Completeness against Bron–Kerbosch up to half a million channels (the 8-GPU machines' 237k and
        // 443k included); beyond, every channel is still checked for contention and maximality.
        const auto violations =
            alltoall::Catalog::read(c.to_json(false, 0), t, file.filename().string()).check(500'000, 3);
        for (const auto& v : violations)
            FAIL_CHECK(v);
        ++cataloged;
        if (c.stats().raw_exact && c.stats().raw_channels <= 500'000) ++complete;
    }
    CHECK(cataloged >= 10);
    CHECK(complete >= 7);
}

TEST_CASE("DGX-2's 16 GPUs are cataloged by socket; p4d's 8 exactly, with more than 100x compression",
          "[external][catalog]") {
    const auto dir = gpuops::test::external_data_dir() / "topologies";
    const auto dgx2 = alltoall::Catalog::build(import(dir / "hwloc-nvidiaDGX2.xml"));
    CHECK(dgx2.method() == alltoall::CatalogMethod::hierarchical);
    CHECK(dgx2.domains().size() == 2);
    // Not one class: sw7, the top switch of socket1's first tree, reports another PCI device id (0x9797)
    // than its three peers (0x9781), and symmetry never equates different hardware.
    CHECK(dgx2.classes().size() == 2);
    const auto p4d = alltoall::Catalog::build(import(dir / "hwloc-aws-p4d.xml"));
    CHECK(p4d.method() == alltoall::CatalogMethod::exact);
    CHECK(p4d.stats().raw_channels == 443465);
    CHECK(p4d.stats().compression > 100);
}
