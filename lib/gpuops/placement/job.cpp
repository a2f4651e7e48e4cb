// Reading gpuops.job documents and checking a job against the nodes of a state.
#include "gpuops/placement/job.hpp"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

namespace gpuops::placement {

JobRequest job_from_json(const json_io::Json& doc, std::string_view file) {
    try {
        json_io::check_header(doc, job_schema, job_version);
        const json_io::View root(doc);
        JobRequest job;
        job.name = root.at("job").as_string();
        if (job.name.empty()) throw root.at("job").error("a job needs a name");
        job.instances = static_cast<int>(root.at("instances").as_int(1, max_job_instances));
        job.gpus_per_instance = static_cast<int>(root.at("gpus_per_instance").as_int(1, max_node_gpus));
        return job;
    } catch (const DataError& e) {
        throw e.in_file(std::string(file));
    }
}

json_io::Json to_json(const JobRequest& job, std::string_view tool) {
    auto doc = json_io::make_header(job_schema, job_version, tool);
    doc["job"] = job.name;
    doc["instances"] = job.instances;
    doc["gpus_per_instance"] = job.gpus_per_instance;
    return doc;
}

std::optional<JobMisfit> misfit(const ClusterState& state, const JobRequest& job) {
    if (job.name.empty()) return JobMisfit{"job", "a job needs a name"};
    if (std::any_of(state.instances.begin(), state.instances.end(),
                    [&](const Instance& i) { return i.job == job.name; }))
        return JobMisfit{"job", fmt::format("job {} is already running in the state", quote(job.name))};
    const int g = job.gpus_per_instance;
    int largest = 0;
    std::int64_t fit = 0;  // instances of g GPUs the empty cluster holds
    for (const auto& n : state.nodes) {
        largest = std::max(largest, n.gpus);
        fit += n.gpus / std::max(g, 1);
    }
    if (g < 1) return JobMisfit{"gpus_per_instance", fmt::format("an instance needs at least one GPU, got {}", g)};
    if (g > largest) {
        return JobMisfit{"gpus_per_instance", fmt::format("an instance of {} GPUs is larger than any node (the "
                                                          "largest has {})",
                                                          g, largest)};
    }
    if (job.instances < 1)
        return JobMisfit{"instances", fmt::format("a job needs at least one instance, got {}", job.instances)};
    if (job.instances > fit) {
        return JobMisfit{"instances",
                         fmt::format("{} instances of {} GPUs never fit: the state's {} nodes hold at most "
                                     "{}, even empty",
                                     job.instances, g, state.nodes.size(), fit)};
    }
    return std::nullopt;
}

}  // namespace gpuops::placement
