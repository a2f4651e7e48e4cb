// compass-place: one placement decision for a job in a GPU cluster state under COMPASS-ABS or a baseline policy:
// where each instance goes, the migrations it causes, or that the job must wait (exit 1).
#include <fmt/format.h>

#include "gpuops/core/cli.hpp"
#include "gpuops/core/json_io.hpp"
#include "gpuops/placement/decision.hpp"
#include "gpuops/placement/job.hpp"

using namespace gpuops;

int main(int argc, char** argv) {
    cli::Tool tool("compass-place",
                   "Decide where a job's instances go in a GPU cluster state, under COMPASS-ABS (anchor-based slots,\n"
                   "Compact after every event) or a baseline; exit 1 when the job must wait.",
                   {"json", "text"});
    std::string state_path;
    std::string job_path;
    std::string name = "new-job";
    int instances = 0;
    int gpus = 0;
    std::string policy_name = "compass";
    bool relaxed = false;
    std::uint64_t seed = 1;
    auto& app = tool.app();
    app.add_option("--state", state_path, "The gpuops.cluster-state document (default: standard input)")
        ->type_name("FILE");
    app.add_option("--job", job_path, "The job to place, a gpuops.job document {job, instances, gpus_per_instance}")
        ->type_name("FILE");
    auto* instances_opt = app.add_option("--instances", instances, "Instead of --job: the job's instances")
                              ->check(CLI::Range(1, placement::max_job_instances))
                              ->type_name("N");
    auto* gpus_opt = app.add_option("--gpus", gpus, "Instead of --job: GPUs per instance, all on one node")
                         ->check(CLI::Range(1, placement::max_node_gpus))
                         ->type_name("G");
    auto* name_opt =
        app.add_option("--name", name, "Instead of --job: the job's name (default new-job)")->type_name("NAME");
    app.add_option("--policy", policy_name, "compass (default), first-fit, best-fit, spread, random, fgd or repack")
        ->check(CLI::IsMember(std::vector<std::string>(placement::policy_names.begin(), placement::policy_names.end())))
        ->type_name("POLICY");
    auto* relaxed_opt =
        app.add_flag("--relaxed", relaxed, "compass: when strict ABS has no place, use free GPUs outside the slots");
    auto* seed_opt = app.add_option("--seed", seed, "random: the seed of its choices (default 1)")->type_name("S");

    return tool.run(argc, argv, [&] {
        const bool flags = instances_opt->count() + gpus_opt->count() + name_opt->count() > 0;
        if (!job_path.empty() && flags) throw UsageError("give --job FILE or --instances/--gpus/--name, not both");
        if (job_path.empty() && (instances_opt->count() == 0 || gpus_opt->count() == 0))
            throw UsageError("give --job FILE, or --instances N and --gpus G");
        if ((state_path.empty() || state_path == "-") && job_path == "-")
            throw UsageError("only one of --state and --job can be standard input");
        const auto policy = *placement::policy_from_string(policy_name);
        if (relaxed_opt->count() > 0 && policy != placement::PolicyKind::compass)
            throw UsageError("--relaxed applies to --policy compass only");
        if (seed_opt->count() > 0 && policy != placement::PolicyKind::random)
            throw UsageError("--seed applies to --policy random only");

        const auto state =
            placement::cluster_state_from_json(json_io::read_document(state_path), json_io::display_name(state_path));
        placement::JobRequest job{name, instances, gpus};
        if (!job_path.empty()) job = placement::job_from_json(json_io::read_document(job_path), job_path);
        if (const auto bad = placement::misfit(state, job)) {
            if (!job_path.empty()) throw DataError(bad->reason, {json_io::display_name(job_path), "/" + bad->field, 0});
            const char* option = bad->field == "job" ? "--name" : bad->field == "instances" ? "--instances" : "--gpus";
            throw UsageError(fmt::format("{}: {}", option, bad->reason));
        }

        placement::PolicyOptions options;
        options.relaxed = relaxed;
        options.seed = seed;
        const auto report = placement::decide(state, job, policy, options);
        if (report.abs_before && report.abs_before->pinned_instances > 0) {
            tool.note(fmt::format("{} instances of the state do not fit ABS and stay pinned where they run",
                                  report.abs_before->pinned_instances));
        }
        if (tool.common().format == "text") {
            tool.write(placement::render_text(report));
        } else {
            tool.write(json_io::dump(placement::to_json(report, tool.name()), !tool.common().compact));
        }
        if (!report.decision.wait) return ExitCode::ok;
        tool.warn(fmt::format("job {} must wait: {}", quote(job.name), report.decision.wait_reason));
        return ExitCode::negative;
    });
}
