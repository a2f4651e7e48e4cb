// Cluster states from the real Slurm 22.05.8 samples in ../shared/data/slurm (sinfo/squeue --json, scontrol show
// nodes): every sample parses and gives what the running daemons had; skipped when the folder is absent.
#include <catch2/catch.hpp>

#include <filesystem>

#include "gpuops/core/json_io.hpp"
#include "gpuops/placement/sif.hpp"
#include "gpuops/placement/slurm_import.hpp"

#include "external/data_dir.hpp"

using namespace gpuops;

namespace {

std::filesystem::path slurm_dir() { return test::external_data_dir() / "slurm"; }

}  // namespace

TEST_CASE("real sinfo + squeue --json: one 8-GPU node running a 4-GPU job", "[external][slurm]") {
    if (!std::filesystem::is_directory(slurm_dir())) {
        WARN("skipped: no slurm samples in " << slurm_dir().string());
        return;
    }
    const auto sinfo = json_io::read_document((slurm_dir() / "sinfo.json").string());
    const auto squeue = json_io::read_document((slurm_dir() / "squeue.json").string());
    const placement::SlurmSource jobs{&squeue, {}, "squeue.json"};
    placement::SlurmImportNotes notes;
    const auto s = placement::state_from_sinfo({&sinfo, {}, "sinfo.json"}, &jobs, &notes);
    CHECK(s.nodes == std::vector<placement::Node>{{"localhost", 8}});
    REQUIRE(s.instances.size() == 1);
    CHECK(s.instances[0] == placement::Instance{"4", "localhost", 4, {0, 1, 2, 3}});
    CHECK(notes.jobs_not_running == 3);
    const auto r = placement::score(s);
    CHECK(r.phi_pi == 1);
    CHECK(r.phi_star.value == 1);  // one 4-GPU instance: T mod 8 = 4
    CHECK(r.n_sif == 0);
    // sinfo's gres_used alone says the same: 4 GPUs in use.
    const auto usage = placement::state_from_sinfo({&sinfo, {}, "sinfo.json"}, nullptr);
    REQUIRE(usage.instances.size() == 1);
    CHECK(usage.instances[0].gpus == 4);
}

TEST_CASE("real scontrol show nodes, one-line and multi-line, and the 4-node set-up", "[external][slurm]") {
    if (!std::filesystem::is_directory(slurm_dir())) {
        WARN("skipped: no slurm samples in " << slurm_dir().string());
        return;
    }
    for (const char* file : {"scontrol-show-nodes-oneliner.txt", "scontrol-show-nodes.txt"}) {
        INFO(file);
        const auto text = json_io::read_text((slurm_dir() / file).string());
        const auto s = placement::state_from_scontrol({nullptr, text, file}, nullptr);
        CHECK(s.nodes == std::vector<placement::Node>{{"localhost", 8}});
        REQUIRE(s.instances.size() == 1);
        CHECK(s.instances[0].gpus == 4);
    }
    const auto text = json_io::read_text((slurm_dir() / "scontrol-show-nodes-4node-oneliner.txt").string());
    const auto squeue = json_io::read_document((slurm_dir() / "squeue-4node.json").string());
    const placement::SlurmSource jobs{&squeue, {}, "squeue-4node.json"};
    const auto s = placement::state_from_scontrol({nullptr, text, "4node"}, &jobs);
    REQUIRE(s.nodes.size() == 4);
    CHECK(s.nodes[2] == placement::Node{"n3", 8});  // drained, still a node of the cluster
    CHECK(s.instances.empty());                     // both jobs had completed
    const auto sinfo = json_io::read_document((slurm_dir() / "sinfo-4node.json").string());
    CHECK(placement::state_from_sinfo({&sinfo, {}, "sinfo-4node.json"}, &jobs).nodes == s.nodes);
}
