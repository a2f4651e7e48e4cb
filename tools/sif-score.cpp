// sif-score: Scheduler-Induced Fragmentation of a cluster state (COMPASS-ABS): partial nodes now against the fewest
// any packing of the same instances could leave, from a gpuops.cluster-state or from Slurm's own output.
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "gpuops/core/cli.hpp"
#include "gpuops/core/json_io.hpp"
#include "gpuops/placement/sif.hpp"
#include "gpuops/placement/slurm_import.hpp"

using namespace gpuops;

namespace {

/// --check-max: a number, or K/N for K avoidable partial nodes (N·SIF <= K).
struct Limit {
    bool given = false;
    double sif = 0;
    std::optional<std::int64_t> n_sif;
};

Limit parse_limit(const std::string& text) {
    Limit limit;
    limit.given = true;
    try {
        if (text.size() > 2 && text.ends_with("/N")) {
            std::size_t used = 0;
            const long long k = std::stoll(text, &used);
            if (used == text.size() - 2 && k >= 0) {
                limit.n_sif = k;
                return limit;
            }
        } else {
            std::size_t used = 0;
            limit.sif = std::stod(text, &used);
            if (used == text.size() && std::isfinite(limit.sif) && limit.sif >= 0) return limit;
        }
    } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): reported below
    }
    throw UsageError(fmt::format("--check-max: expected a number >= 0 or K/N, got {}", quote(text)));
}

}  // namespace

int main(int argc, char** argv) {
    cli::Tool tool("sif-score",
                   "Score the fragmentation of a GPU cluster: partial nodes now (phi_pi) against the fewest any\n"
                   "packing of the same instances leaves (phi_star), SIF = (phi_pi - phi_star) / N, with WCC and FGD.",
                   {"json", "text", "state"});
    std::string state_path;
    std::string sinfo_path;
    std::string squeue_path;
    std::string scontrol_path;
    std::string check_max;
    std::int64_t max_states = placement::default_state_budget;
    auto& app = tool.app();
    app.add_option("STATE", state_path, "A gpuops.cluster-state document (default: standard input)")->type_name("FILE");
    app.add_option("--sinfo", sinfo_path, "Nodes from Slurm's sinfo --json output (22.05, openapi v0.0.38)")
        ->type_name("FILE");
    app.add_option("--squeue", squeue_path, "Instances from squeue --json output: one per running job and node")
        ->type_name("FILE");
    app.add_option("--scontrol-nodes", scontrol_path, "Nodes from scontrol show nodes -d -o output")->type_name("FILE");
    app.add_option("--check-max", check_max,
                   "Exit 1 when SIF exceeds LIMIT: a number, or K/N for K avoidable partial nodes")
        ->type_name("LIMIT");
    app.add_option("--max-states", max_states,
                   "Search at most N states for phi_star, else report its lower bound (default 200000)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{100'000'000}))
        ->type_name("N");

    return tool.run(argc, argv, [&] {
        const auto& common = tool.common();
        const bool slurm = !sinfo_path.empty() || !scontrol_path.empty();
        if (!sinfo_path.empty() && !scontrol_path.empty())
            throw UsageError("give --sinfo or --scontrol-nodes, not both");
        if (!squeue_path.empty() && !slurm)
            throw UsageError("--squeue needs --sinfo or --scontrol-nodes for the nodes");
        if (slurm && !state_path.empty()) throw UsageError("give a STATE file or Slurm output, not both");
        const auto stdin_uses = (sinfo_path == "-") + (squeue_path == "-") + (scontrol_path == "-");
        if (stdin_uses > 1) throw UsageError("only one input can be standard input");
        const Limit limit = check_max.empty() ? Limit{} : parse_limit(check_max);

        placement::ClusterState state;
        if (slurm) {
            placement::SlurmImportNotes notes;
            std::optional<json_io::Json> squeue_doc;
            placement::SlurmSource squeue;
            if (!squeue_path.empty()) {
                squeue_doc = json_io::read_document(squeue_path);
                squeue = {&*squeue_doc, {}, json_io::display_name(squeue_path)};
            }
            const auto* jobs = squeue_doc ? &squeue : nullptr;
            if (!sinfo_path.empty()) {
                const auto doc = json_io::read_document(sinfo_path);
                state = placement::state_from_sinfo({&doc, {}, json_io::display_name(sinfo_path)}, jobs, &notes);
            } else {
                const auto text = json_io::read_text(scontrol_path);
                state =
                    placement::state_from_scontrol({nullptr, text, json_io::display_name(scontrol_path)}, jobs, &notes);
            }
            if (notes.nodes_without_gpus > 0)
                tool.note(fmt::format("{} nodes without GPUs left out", notes.nodes_without_gpus));
            if (notes.jobs_not_running > 0)
                tool.note(fmt::format("{} jobs not running left out", notes.jobs_not_running));
            if (notes.jobs_without_gpus > 0)
                tool.note(fmt::format("{} running jobs without GPUs left out", notes.jobs_without_gpus));
            if (state.instances_from == placement::InstanceSource::node_usage && common.format != "state") {
                tool.warn("no --squeue: each node's GPUs in use count as one instance, so phi_star may be too high "
                          "and SIF too low");
            }
        } else {
            state = placement::cluster_state_from_json(json_io::read_document(state_path),
                                                       json_io::display_name(state_path));
        }

        const auto report = placement::score(state, max_states);
        tool.note(fmt::format("phi_star by {} ({} search states)", placement::to_string(report.phi_star.method),
                              report.phi_star.states));
        if (!report.phi_star.exact) {
            tool.warn(fmt::format("phi_star search stopped after {} states: phi_star = {} is a lower bound, SIF an "
                                  "upper estimate",
                                  report.phi_star.states, report.phi_star.value));
        }
        if (common.format == "text") {
            tool.write(placement::render_text(report));
        } else if (common.format == "state") {
            tool.write(json_io::dump(placement::to_json(state, tool.name()), !common.compact));
        } else {
            tool.write(json_io::dump(placement::to_json(report, tool.name()), !common.compact));
        }
        if (!limit.given) return ExitCode::ok;
        const bool over = limit.n_sif ? report.n_sif > *limit.n_sif : report.sif > limit.sif + 1e-12;
        if (!over) return ExitCode::ok;
        tool.warn(fmt::format("SIF {:.6g} ({} avoidable partial node{}) exceeds --check-max {}", report.sif,
                              report.n_sif, report.n_sif == 1 ? "" : "s", check_max));
        return ExitCode::negative;
    });
}
