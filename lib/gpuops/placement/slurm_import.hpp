// Cluster states from Slurm 22.05 output: sinfo --json and squeue --json (openapi v0.0.38), or the lines of
// scontrol show nodes -d -o, parsed as text so that no Slurm command runs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpuops/core/json_io.hpp"
#include "gpuops/placement/cluster_state.hpp"

namespace gpuops::placement {

/// GPUs in one GRES string: "gpu:8", "gpu:h100:4(S:0-1)", "gpu:2(IDX:0,3)", several entries separated by
/// commas; entries that are not gpu are ignored. ids are the IDX list when one is given.
struct GresGpus {
    int count = 0;
    std::vector<int> ids;
    bool operator==(const GresGpus&) const = default;
};
/// Throws DataError (without location) on a malformed gpu entry.
[[nodiscard]] GresGpus parse_gres_gpus(std::string_view gres);

/// A Slurm document or text as read, with the name to show in messages.
struct SlurmSource {
    const json_io::Json* json = nullptr;  ///< sinfo/squeue --json
    std::string_view text;                ///< scontrol show nodes -d -o
    std::string name;
};

/// What the import skipped, for the tool's notes.
struct SlurmImportNotes {
    int nodes_without_gpus = 0;
    int jobs_without_gpus = 0;
    int jobs_not_running = 0;
};

/// Nodes from sinfo --json (capacity from `gres`), instances from squeue --json when given (one per running job
/// and node, sized by `gres_detail`, else `tres_per_node`), else one per node from its `gres_used`.
/// Nodes without GPUs are left out. Validates the result; errors name the file and the JSON pointer.
[[nodiscard]] ClusterState state_from_sinfo(const SlurmSource& sinfo, const SlurmSource* squeue,
                                            SlurmImportNotes* notes = nullptr);

/// The same from scontrol show nodes -d (one line per node with -o, or the multi-line form): capacity from
/// Gres=, usage from GresUsed=; errors name the file and the line.
[[nodiscard]] ClusterState state_from_scontrol(const SlurmSource& nodes, const SlurmSource* squeue,
                                               SlurmImportNotes* notes = nullptr);

}  // namespace gpuops::placement
