// gpuops.cluster-state documents: round trip, and every bad state named by its JSON pointer.
#include <catch2/catch.hpp>

#include "gpuops/core/error.hpp"
#include "gpuops/placement/cluster_state.hpp"

using namespace gpuops;
using placement::cluster_state_from_json;

namespace {

json_io::Json doc_of(const std::string& nodes, const std::string& instances) {
    return json_io::parse_document(R"({"schema": "gpuops.cluster-state", "schema_version": 1, "nodes": )" + nodes +
                                       R"(, "instances": )" + instances + "}",
                                   "test");
}

std::string error_of(const json_io::Json& doc) {
    try {
        (void)cluster_state_from_json(doc, "s.json");
    } catch (const DataError& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("a cluster state survives to_json and back, gpu ids included", "[placement][state]") {
    placement::ClusterState s;
    s.nodes = {{"a", 8}, {"b", 4}};
    s.instances = {{"j1", "a", 2, {0, 1}}, {"j2", "b", 4, {}}};
    const auto doc = placement::to_json(s, "test");
    CHECK(doc["schema"] == "gpuops.cluster-state");
    CHECK(doc["instances"][1].count("gpu_ids") == 0);
    CHECK(cluster_state_from_json(doc, "x") == s);
    s.instances_from = placement::InstanceSource::node_usage;
    CHECK(cluster_state_from_json(placement::to_json(s, "test"), "x").instances_from ==
          placement::InstanceSource::node_usage);
}

TEST_CASE("bad states are one-line errors naming the file and the JSON pointer", "[placement][state]") {
    CHECK(error_of(doc_of(R"([{"name": "a", "gpus": 8}, {"name": "b", "gpus": 0}])", "[]")) ==
          "'s.json': (/nodes/1/gpus) node 'b' needs 1 to 1024 GPUs, got 0");
    CHECK(error_of(doc_of(R"([{"name": "a", "gpus": 8}])", R"([{"job": "1", "node": "a", "gpus": 16}])")) ==
          "'s.json': (/instances/0/gpus) an instance of 16 GPUs is larger than any node (the largest has 8)");
    CHECK(error_of(doc_of(R"([{"name": "a", "gpus": 8}])",
                          R"([{"job": "1", "node": "a", "gpus": 2, "gpu_ids": [0, 1]},
                              {"job": "2", "node": "a", "gpus": 2, "gpu_ids": [2, 1]}])")) ==
          "'s.json': (/instances/1/gpu_ids/1) GPU 1 of node 'a' is assigned twice: job '1' and job '2'");
    CHECK(error_of(doc_of(R"([{"name": "a", "gpus": 8}])",
                          R"([{"job": "1", "node": "a", "gpus": 6}, {"job": "2", "node": "a", "gpus": 4}])")) ==
          "'s.json': (/instances/1) node 'a' has 8 GPUs, but its instances hold 10");
    CHECK(error_of(doc_of(R"([{"name": "a", "gpus": 8}])", R"([{"job": "1", "node": "z", "gpus": 1}])")) ==
          "'s.json': (/instances/0/node) no node 'z' in the state");
    CHECK(error_of(doc_of(R"([{"name": "a", "gpus": 8}, {"name": "a", "gpus": 8}])", "[]")) ==
          "'s.json': (/nodes/1/name) node 'a' is listed twice");
    CHECK(error_of(
              doc_of(R"([{"name": "a", "gpus": 4}])", R"([{"job": "1", "node": "a", "gpus": 1, "gpu_ids": [4]}])")) ==
          "'s.json': (/instances/0/gpu_ids/0) GPU 4 does not exist on node 'a' (GPUs 0-3)");
    CHECK(error_of(doc_of("[]", "[]")) == "'s.json': (/nodes) a cluster state needs at least one node");
    CHECK(error_of(doc_of(R"([{"name": "a", "gpus": "8"}])", "[]")) ==
          "'s.json': (/nodes/0/gpus) expected an integer, got string");
    CHECK(error_of(json_io::parse_document(R"({"schema": "gpuops.plan", "schema_version": 1})", "t")) ==
          "'s.json': (/schema) expected a 'gpuops.cluster-state' document, got 'gpuops.plan'");
}
