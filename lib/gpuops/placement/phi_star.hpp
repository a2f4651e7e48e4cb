// Φ*: the fewest partial nodes any packing of the running instances can leave (COMPASS-ABS §3, Appendix C).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace gpuops::placement {

/// What Φ* depends on: how many instances of each size, how many nodes of each capacity. Both are indexed by GPU
/// count (index 0 unused); instances larger than every node have no packing and are rejected by min_partial_nodes.
struct PackingProblem {
    std::vector<std::int64_t> instances_by_size;
    std::vector<std::int64_t> nodes_by_capacity;
};

/// The workload composition condition of Theorem 1 (G = 8): n1 >= n3 + 3*n5 + 2*n6 + n7.
struct Wcc {
    bool holds = false;
    std::int64_t deficit = 0;  ///< 1-GPU instances missing for it to hold: max(0, n3 + 3n5 + 2n6 + n7 - n1)
    bool operator==(const Wcc&) const = default;
};
[[nodiscard]] Wcc check_wcc(std::span<const std::int64_t> instances_by_size);

enum class PhiStarMethod {
    closed_form,  ///< G = 8 and WCC: Φ* = 1[T mod 8 != 0]
    search,       ///< exact: safe pairings, bounds, then a memoised bin-completion search
    lower_bound,  ///< the search ran past its budget: the value is a lower bound, not Φ*
};
[[nodiscard]] std::string_view to_string(PhiStarMethod method);

struct PhiStar {
    std::int64_t value = 0;  ///< Φ*, or a lower bound of it when !exact
    bool exact = true;
    PhiStarMethod method = PhiStarMethod::closed_form;
    std::int64_t states = 0;  ///< search states solved (0 when none were needed)
};

/// The search gives up beyond this many states (each memoised: a few tens of MB) and reports its lower bound.
inline constexpr std::int64_t default_state_budget = 200'000;

/// Φ*: the minimum number of partial nodes (0 < used < capacity) over all packings of the instances into the nodes,
/// every instance whole on one node, at most the given number of nodes of each capacity. Throws DataError when no
/// packing exists (more GPUs than nodes, or an instance larger than every node).
[[nodiscard]] PhiStar min_partial_nodes(const PackingProblem& problem,
                                        std::int64_t state_budget = default_state_budget);

}  // namespace gpuops::placement
