// Scheduler-Induced Fragmentation of a cluster state: Φ^π, Φ*, F^π, F*, SIF, WCC, and FGD for comparison.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuops/core/json_io.hpp"
#include "gpuops/placement/cluster_state.hpp"
#include "gpuops/placement/phi_star.hpp"

namespace gpuops::placement {

inline constexpr std::string_view sif_schema = "gpuops.sif";
inline constexpr int sif_version = 1;

/// FGD's fragmentation (Weng et al., ATC'23) reduced to whole-GPU instances: a node's free GPUs count as fragment
/// weighted by the share of instances larger than what is free, the shares being those of the running instances.
struct Fgd {
    double fragment_gpus = 0;  ///< Σ_n free_n · Σ_{g > free_n} p_g
    std::int64_t free_gpus = 0;
    double fragment_ratio = 0;  ///< fragment_gpus / free_gpus (0 when nothing is free)
};

struct SifReport {
    std::int64_t nodes = 0;            ///< N: every node of the state
    std::optional<int> gpus_per_node;  ///< G when all nodes have the same capacity
    std::int64_t capacity_gpus = 0;
    std::int64_t used_gpus = 0;  ///< T
    std::optional<std::int64_t> used_gpus_mod_g;
    std::int64_t instances = 0;
    std::vector<std::int64_t> instances_by_gpus;  ///< index g: running instances of g GPUs
    InstanceSource instances_from = InstanceSource::listed;
    std::int64_t phi_pi = 0;  ///< partial nodes now: 0 < used < capacity
    std::int64_t full_nodes = 0;
    std::int64_t empty_nodes = 0;
    PhiStar phi_star;
    double f_pi = 0;                               ///< Φ^π / N
    double f_star = 0;                             ///< Φ* / N
    double sif = 0;                                ///< F^π − F*
    std::int64_t n_sif = 0;                        ///< N·SIF = Φ^π − Φ*: avoidable partial nodes
    std::optional<Wcc> wcc;                        ///< only for G = 8, where the condition is defined
    std::vector<std::int64_t> nodes_by_free_gpus;  ///< index f: nodes with f free GPUs
    Fgd fgd;
};

/// Scores a validated state. `state_budget` bounds the exact search for Φ* (see min_partial_nodes).
[[nodiscard]] SifReport score(const ClusterState& state, std::int64_t state_budget = default_state_budget);

[[nodiscard]] json_io::Json to_json(const SifReport& report, std::string_view tool);
[[nodiscard]] std::string render_text(const SifReport& report);

}  // namespace gpuops::placement
