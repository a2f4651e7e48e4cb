// gpuops.job documents, jobs that can never fit a state, and the gpuops.placement decision document.
#include <catch2/catch.hpp>

#include "gpuops/placement/decision.hpp"

using namespace gpuops;
using namespace gpuops::placement;
using json_io::Json;

namespace {

Json job_doc(Json body) {
    Json doc = {{"schema", "gpuops.job"}, {"schema_version", 1}};
    for (auto& [k, v] : body.items())
        doc[k] = v;
    return doc;
}

std::string error_of(const Json& doc) {
    try {
        (void)job_from_json(doc, "job.json");
    } catch (const DataError& e) {
        return e.what();
    }
    return "no error";
}

ClusterState two_nodes() {
    ClusterState s;
    s.nodes = {{"a", 8}, {"b", 4}};
    s.instances = {{"run", "a", 4, {}}};
    return s;
}

}  // namespace

TEST_CASE("gpuops.job documents are read, and bad ones named by pointer", "[placement][job]") {
    const auto job = job_from_json(job_doc({{"job", "train"}, {"instances", 3}, {"gpus_per_instance", 4}}), "j");
    CHECK(job == JobRequest{"train", 3, 4});
    CHECK(job_from_json(to_json(job, "test"), "j") == job);
    CHECK(error_of(job_doc({{"job", "t"}, {"instances", 0}, {"gpus_per_instance", 4}})).find("(/instances)") !=
          std::string::npos);
    CHECK(
        error_of(job_doc({{"job", "t"}, {"instances", 1}, {"gpus_per_instance", "4"}})).find("(/gpus_per_instance)") !=
        std::string::npos);
    CHECK(error_of(job_doc({{"job", ""}, {"instances", 1}, {"gpus_per_instance", 4}})).find("(/job)") !=
          std::string::npos);
    CHECK(error_of(job_doc({{"instances", 1}, {"gpus_per_instance", 4}})).find("'job.json'") != std::string::npos);
    CHECK(error_of({{"schema", "gpuops.sif"}, {"schema_version", 1}}).find("gpuops.job") != std::string::npos);
}

TEST_CASE("a job that can never fit the state is told apart from one that must wait", "[placement][job]") {
    const auto s = two_nodes();
    CHECK_FALSE(misfit(s, {"new", 2, 4}));
    CHECK_FALSE(misfit(s, {"new", 3, 4}));  // waits now: 4 + 4 free, but fits the empty cluster
    const auto large = misfit(s, {"new", 1, 9});
    REQUIRE(large);
    CHECK(large->field == "gpus_per_instance");
    CHECK(large->reason == "an instance of 9 GPUs is larger than any node (the largest has 8)");
    const auto many = misfit(s, {"new", 4, 4});
    REQUIRE(many);
    CHECK(many->field == "instances");
    const auto twice = misfit(s, {"run", 1, 1});
    REQUIRE(twice);
    CHECK(twice->field == "job");
}

TEST_CASE("a decision document: placements, migrations, wait and SIF before and after", "[placement][decision]") {
    const auto s = two_nodes();
    const auto placed = decide(s, {"new", 1, 4}, PolicyKind::best_fit, {});
    CHECK_FALSE(placed.decision.wait);
    const auto doc = to_json(placed, "test");
    CHECK(doc["schema"] == "gpuops.placement");
    CHECK(doc["placements"].size() == 1);
    CHECK(doc["placements"][0]["node"] == "a");  // best fit: 4 free on both, the first wins
    CHECK(doc["placements"][0]["gpu_ids"] == Json::array({4, 5, 6, 7}));
    CHECK(doc["wait_reason"].is_null());
    CHECK(doc["abs_before"].is_null());
    CHECK(doc["sif_before"]["phi_pi"] == 1);
    CHECK(doc["sif_after"]["phi_pi"] == 0);
    CHECK(doc["sif_after"]["full_nodes"] == 1);

    const auto waiting = decide(s, {"new", 3, 4}, PolicyKind::compass, {});
    CHECK(waiting.decision.wait);
    CHECK(waiting.after == waiting.before);
    const auto wdoc = to_json(waiting, "test");
    CHECK(wdoc["wait"] == true);
    CHECK(wdoc["placements"].empty());
    CHECK(wdoc["abs_before"]["slotted_nodes"] == 1);
    CHECK(render_text(waiting).find("decision    wait: instance 2 of 3") != std::string::npos);
}
