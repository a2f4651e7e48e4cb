// The NVIDIA driver's /proc information files: parsing, reading a folder laid out like /proc, annotating GPUs.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "gpuops/topo/nvidia_proc.hpp"
#include "gpuops/topo/presets.hpp"

#include "support/temp_dir.hpp"
#include "support/topology_helpers.hpp"

using namespace gpuops::topo;
namespace fs = std::filesystem;

namespace {

// As driver 535 writes it: tab-padded keys, a tab and a space before each value.
constexpr const char* a100_sample = "Model: \t\t NVIDIA A100-SXM4-80GB\n"
                                    "IRQ:   \t\t 92\n"
                                    "GPU UUID: \t GPU-3a9e7b2c-1f0d-4c5e-9a8b-7c6d5e4f3a2b\n"
                                    "Video BIOS: \t 92.00.36.00.01\n"
                                    "Bus Type: \t PCIe\n"
                                    "DMA Size: \t 47 bits\n"
                                    "DMA Mask: \t 0x7fffffffffff\n"
                                    "Bus Location: \t 0000:07:00.0\n"
                                    "Device Minor: \t 2\n"
                                    "GPU Excluded:\t No\n";

/// A folder laid out like /proc/driver/nvidia/gpus, removed with the test.
void add_gpu(const gpuops::test::TempDir& proc, const std::string& bus_id, const std::string& text) {
    proc.write(bus_id + "/information", text);
}

}  // namespace

TEST_CASE("the driver's information file is parsed", "[nvidia_proc]") {
    const auto info = nvidia_proc::parse_information(a100_sample);
    CHECK(info.model == "NVIDIA A100-SXM4-80GB");
    CHECK(info.uuid == "GPU-3a9e7b2c-1f0d-4c5e-9a8b-7c6d5e4f3a2b");
    CHECK(info.device_minor == 2);
    CHECK(info.bus_location == "0000:07:00.0");
    CHECK_FALSE(info.excluded);
}

TEST_CASE("CR LF line ends, odd padding and key case are tolerated", "[nvidia_proc]") {
    const auto info = nvidia_proc::parse_information("model:NVIDIA H100 80GB HBM3\r\n"
                                                     "  GPU   UUID :   GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0  \r\n"
                                                     "Bus Location:0000:9A:00.0\r\n"
                                                     "Device Minor:\t\t\t7\r\n"
                                                     "GPU Excluded:   no\r\n");
    CHECK(info.model == "NVIDIA H100 80GB HBM3");
    CHECK(info.uuid == "GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
    CHECK(info.bus_location == "0000:9a:00.0");
    CHECK(info.device_minor == 7);
    CHECK_FALSE(info.excluded);
}

TEST_CASE("an excluded GPU and a UUID the driver has not read yet", "[nvidia_proc]") {
    const auto info = nvidia_proc::parse_information("Model: \t\t NVIDIA L40S\n"
                                                     "GPU UUID: \t "
                                                     R"(GPU-????????-????-????-????-????????????)"
                                                     "\n"
                                                     "Device Minor: \t 0\n"
                                                     "GPU Excluded:\t Yes\n");
    CHECK(info.excluded);
    CHECK_FALSE(info.uuid);
    CHECK(info.device_minor == 0);
}

TEST_CASE("garbage leaves every field absent", "[nvidia_proc]") {
    const nvidia_proc::GpuInfo empty;
    CHECK(nvidia_proc::parse_information("") == empty);
    CHECK(nvidia_proc::parse_information("\x01\x02 no colon here\n:::\n\n") == empty);
    for (const char* minor : {"two", "-1", "256", "2x", "", "99999999999999999999"}) {
        INFO(minor);
        CHECK_FALSE(nvidia_proc::parse_information(std::string("Device Minor: ") + minor).device_minor);
    }
    CHECK_FALSE(nvidia_proc::parse_information("Bus Location: somewhere").bus_location);
    CHECK_FALSE(nvidia_proc::parse_information("GPU UUID: \t \n").uuid);
    CHECK_FALSE(nvidia_proc::parse_information("GPU Excluded: maybe").excluded);
}

TEST_CASE("information files are read from a /proc-shaped folder", "[nvidia_proc]") {
    const gpuops::test::TempDir proc;
    add_gpu(proc, "0000:07:00.0", a100_sample);
    fs::create_directories(proc.path() / "0000:08:00.0" / "information");  // unreadable as a file
    const auto info = nvidia_proc::read("0000:07:00.0", proc.str());
    REQUIRE(info);
    CHECK(info->device_minor == 2);
    CHECK(info->model == "NVIDIA A100-SXM4-80GB");
    CHECK(nvidia_proc::read("07:00.0", proc.str()) == info);  // the folder name is the canonical bus id
    CHECK_FALSE(nvidia_proc::read("0000:08:00.0", proc.str()));
    CHECK_FALSE(nvidia_proc::read("0000:09:00.0", proc.str()));
    CHECK_FALSE(nvidia_proc::read("0000:07:00.0", (proc.path() / "absent").string()));
}

TEST_CASE("annotating a topology gives NVIDIA GPUs the driver's minor, UUID and model", "[nvidia_proc]") {
    auto t = build_preset("pcie-4gpu-direct");
    const auto& gpu0 = gpuops::test::by_name(t, "gpu0");
    const auto& gpu1 = gpuops::test::by_name(t, "gpu1");
    const auto& nic0 = gpuops::test::by_name(t, "nic0");
    REQUIRE(gpu0.pci_bus_id);
    REQUIRE(gpu1.pci_bus_id);
    REQUIRE(nic0.pci_bus_id);
    t.devices[gpu1.id].uuid = "GPU-from-hwloc";

    const gpuops::test::TempDir proc;
    add_gpu(proc, *gpu0.pci_bus_id, a100_sample);
    add_gpu(proc, *gpu1.pci_bus_id,
            "Model: \t\t NVIDIA A100-SXM4-80GB\nGPU UUID: \t GPU-driver\nDevice Minor: \t 0\n"
            "GPU Excluded:\t Yes\n");
    add_gpu(proc, *nic0.pci_bus_id, a100_sample);  // not a GPU: left alone
    std::vector<std::string> warnings;
    nvidia_proc::annotate(t, warnings, proc.str());

    CHECK(gpu0.device_minor == 2);
    CHECK(gpu0.uuid == "GPU-3a9e7b2c-1f0d-4c5e-9a8b-7c6d5e4f3a2b");
    CHECK(gpu0.model == "NVIDIA A100-SXM4-80GB");
    CHECK(gpu1.device_minor == 0);
    CHECK(gpu1.uuid == "GPU-from-hwloc");  // hwloc's UUID is kept
    CHECK_FALSE(nic0.device_minor);
    CHECK(nic0.model == "NVIDIA ConnectX-6 HDR200");
    const auto& gpu2 = gpuops::test::by_name(t, "gpu2");
    CHECK_FALSE(gpu2.device_minor);  // no file for it
    CHECK(gpu2.model == "NVIDIA RTX 6000 Ada Generation");
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0] == "gpu1 (" + *gpu1.pci_bus_id + ") is excluded by the NVIDIA driver");
}
