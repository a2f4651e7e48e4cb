// Cluster states from Slurm 22.05 output (our own fixtures in tests/fixtures/slurm, shaped like the real ones).
#include <catch2/catch.hpp>

#include "gpuops/core/error.hpp"
#include "gpuops/placement/slurm_import.hpp"

using namespace gpuops;
using placement::GresGpus;
using placement::parse_gres_gpus;

namespace {

const std::string fixtures = std::string(GPUOPS_FIXTURES_DIR) + "/slurm/";

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const DataError& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("GRES strings give GPU counts and IDX lists", "[placement][slurm]") {
    CHECK(parse_gres_gpus("gpu:8") == GresGpus{8, {}});
    CHECK(parse_gres_gpus("gpu:h100:8(S:0-1)") == GresGpus{8, {}});
    CHECK(parse_gres_gpus("gpu:2(IDX:0,3)") == GresGpus{2, {0, 3}});
    CHECK(parse_gres_gpus("gpu:a100:2(IDX:0-1),gpu:v100:1(IDX:2),mps:100") == GresGpus{3, {0, 1, 2}});
    CHECK(parse_gres_gpus("gpu:(null):0(IDX:N/A)") == GresGpus{0, {}});
    CHECK(parse_gres_gpus("(null)") == GresGpus{0, {}});
    CHECK(parse_gres_gpus("") == GresGpus{0, {}});
    CHECK(parse_gres_gpus("mps:200") == GresGpus{0, {}});
    CHECK_THROWS_WITH(parse_gres_gpus("gpu:h100:x"), "expected a GPU count in 'gpu:h100:x', got 'x'");
    CHECK_THROWS_WITH(parse_gres_gpus("gpu:2(IDX:0-1"), "unbalanced 'gpu:2(IDX:0-1'");
}

TEST_CASE("sinfo + squeue --json: one instance per running job and node, CPU-only nodes left out",
          "[placement][slurm]") {
    const auto sinfo = json_io::read_document(fixtures + "sinfo-3node.json");
    const auto squeue = json_io::read_document(fixtures + "squeue-3node.json");
    const placement::SlurmSource jobs{&squeue, {}, "squeue.json"};
    placement::SlurmImportNotes notes;
    const auto s = placement::state_from_sinfo({&sinfo, {}, "sinfo.json"}, &jobs, &notes);
    REQUIRE(s.nodes.size() == 3);
    CHECK(s.nodes[0] == placement::Node{"gpu01", 8});
    CHECK(s.nodes[2].name == "gpu03");
    CHECK(s.instances_from == placement::InstanceSource::listed);
    REQUIRE(s.instances.size() == 4);
    CHECK(s.instances[0] == placement::Instance{"11", "gpu01", 4, {0, 1, 2, 3}});
    CHECK(s.instances[1] == placement::Instance{"11", "gpu02", 4, {0, 1, 2, 3}});
    CHECK(s.instances[2] == placement::Instance{"12", "gpu01", 2, {4, 5}});
    CHECK(s.instances[3] == placement::Instance{"13", "gpu02", 3, {}});  // tres_per_node, hostlist "nodes"
    CHECK(notes.nodes_without_gpus == 1);
    CHECK(notes.jobs_not_running == 1);
    CHECK(notes.jobs_without_gpus == 1);
}

TEST_CASE("sinfo alone: each node's gres_used is one instance", "[placement][slurm]") {
    const auto sinfo = json_io::read_document(fixtures + "sinfo-3node.json");
    const auto s = placement::state_from_sinfo({&sinfo, {}, "sinfo.json"}, nullptr);
    CHECK(s.instances_from == placement::InstanceSource::node_usage);
    REQUIRE(s.instances.size() == 2);
    CHECK(s.instances[0] == placement::Instance{"", "gpu01", 6, {0, 1, 2, 3, 4, 5}});
    CHECK(s.instances[1] == placement::Instance{"", "gpu02", 3, {}});
}

TEST_CASE("scontrol show nodes -d -o: values with spaces, (null) GRES, with and without squeue", "[placement][slurm]") {
    const auto text = json_io::read_text(fixtures + "scontrol-nodes-3node.txt");
    const auto alone = placement::state_from_scontrol({nullptr, text, "nodes.txt"}, nullptr);
    REQUIRE(alone.nodes.size() == 3);
    REQUIRE(alone.instances.size() == 2);
    CHECK(alone.instances[1] == placement::Instance{"", "gpu02", 3, {0, 1, 2}});
    const auto squeue = json_io::read_document(fixtures + "squeue-3node.json");
    const placement::SlurmSource jobs{&squeue, {}, "squeue.json"};
    const auto both = placement::state_from_scontrol({nullptr, text, "nodes.txt"}, &jobs);
    CHECK(both.instances.size() == 4);
    CHECK(both.nodes == alone.nodes);
    // The multi-line form (scontrol show nodes without -o) reads the same.
    std::string multi = "NodeName=a Arch=x86_64\n   Gres=gpu:4\n   GresUsed=gpu:2(IDX:0-1)\n   OS=Linux 6.1 #1 SMP\n"
                        "NodeName=b\n   Gres=gpu:4\n";
    const auto m = placement::state_from_scontrol({nullptr, multi, "m.txt"}, nullptr);
    CHECK(m.nodes == std::vector<placement::Node>{{"a", 4}, {"b", 4}});
    CHECK(m.instances.size() == 1);
}

TEST_CASE("bad Slurm input names the file and the row or the JSON pointer", "[placement][slurm]") {
    const std::string overfull = "NodeName=a Gres=gpu:4 GresUsed=gpu:2\nNodeName=b Gres=gpu:0 GresUsed=gpu:0\n"
                                 "NodeName=c Gres=gpu:x\n";
    CHECK(error_of([&] {
              (void)placement::state_from_scontrol({nullptr, overfull, "n.txt"}, nullptr);
          }) == "'n.txt' line 3: expected a GPU count in 'gpu:x', got 'x'");
    CHECK(error_of([&] {
              (void)placement::state_from_scontrol({nullptr, "hello world", "n.txt"}, nullptr);
          }) == "'n.txt' line 1: expected scontrol show nodes output, got 'hello'");
    const auto sinfo = json_io::parse_document(R"J({"nodes": [{"name": "a", "gres": "gpu:4"}]})J", "s");
    const auto squeue = json_io::parse_document(
        R"J({"jobs": [{"job_id": 1, "job_state": "RUNNING", "nodes": "a", "gres_detail": ["gpu:2(IDX:0-1)"]
},
                     {"job_id": 2, "job_state": "RUNNING", "nodes": "a", "gres_detail": ["gpu:2(IDX:1-2)"]},
                     {"job_id": 3, "job_state": "RUNNING", "nodes": "zz", "gres_detail": ["gpu:1"]}]
})J",
        "q");
    const placement::SlurmSource jobs{&squeue, {}, "q.json"};
    CHECK(error_of([&] {
              (void)placement::state_from_sinfo({&sinfo, {}, "s.json"}, &jobs);
          }) == "'q.json': (/jobs/2/nodes) job 3 runs on node 'zz', which has no GPUs in the node list");
    const auto squeue2 = json_io::parse_document(
        R"J({"jobs": [{"job_id": 1, "job_state": "RUNNING", "nodes": "a", "gres_detail": ["gpu:2(IDX:0-1)"]
    },
                     {"job_id": 2, "job_state": "RUNNING", "nodes": "a", "gres_detail": ["gpu:2(IDX:1-2)"]}]
    })J",
        "q");
    const placement::SlurmSource jobs2{&squeue2, {}, "q.json"};
    CHECK(error_of([&] {
              (void)placement::state_from_sinfo({&sinfo, {}, "s.json"}, &jobs2);
          }) == "'q.json': (/jobs/1/gres_detail/0) GPU 1 of node 'a' is assigned twice: job '1' and job '2'");
    const auto zero = json_io::parse_document(R"J({"nodes": [{"name": "a", "gres": "mps:100"}]})J", "s");
    CHECK(error_of([&] {
              (void)placement::state_from_sinfo({&zero, {}, "s.json"}, nullptr);
          }) == "no node with GPUs in 's.json'");
}
