// The baselines VarioPath is measured against: direct (everything at once), pairwise (shifted rounds) and
// Birkhoff–von Neumann over a crossbar that ignores the PCIe tree.
#include <algorithm>

#include <fmt/format.h>

#include "gpuops/alltoall/bvn.hpp"
#include "gpuops/alltoall/planner.hpp"
#include "gpuops/core/error.hpp"

namespace gpuops::alltoall {
namespace {

/// Hands out each pair's chunk front to back as steps carry parts of it.
class Cursor {
public:
    explicit Cursor(const Demand& d) : demand_(d), sent_(d.size() * d.size(), 0) {}
    Transfer take(const topo::Router& router, std::size_t i, std::size_t j, std::uint64_t bytes) {
        const auto path = router.route(demand_.gpus[i], demand_.gpus[j]);
        auto& sent = sent_[i * demand_.size() + j];
        auto t = make_transfer(demand_, i, j, path, chunk_offset(demand_, i, j) + sent, bytes);
        sent += bytes;
        return t;
    }

private:
    const Demand& demand_;
    std::vector<std::uint64_t> sent_;
};

}  // namespace

Plan plan_direct(const Demand& demand, const topo::Router& router) {
    Plan plan;
    plan.algorithm = "direct";
    Cursor cursor(demand);
    Step step;
    for (std::size_t i = 0; i < demand.size(); ++i)
        for (std::size_t j = 0; j < demand.size(); ++j)
            if (i != j && demand.at(i, j) > 0) step.transfers.push_back(cursor.take(router, i, j, demand.at(i, j)));
    if (!step.transfers.empty()) plan.steps.push_back(std::move(step));
    return plan;
}

Plan plan_pairwise(const Demand& demand, const topo::Router& router) {
    Plan plan;
    plan.algorithm = "pairwise";
    Cursor cursor(demand);
    const std::size_t n = demand.size();
    for (std::size_t s = 1; s < n; ++s) {
        Step step;
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t j = (i + s) % n;
            if (demand.at(i, j) > 0) step.transfers.push_back(cursor.take(router, i, j, demand.at(i, j)));
        }
        if (!step.transfers.empty()) plan.steps.push_back(std::move(step));
    }
    return plan;
}

Plan plan_bvn(const Demand& demand, const topo::Router& router) {
    // The off-diagonal demand decomposed into weighted permutations (padding is idle time); the real bytes
    // of each permutation are one step.
    const std::size_t n = demand.size();
    std::vector<std::uint64_t> real(n * n, 0);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
            if (i != j) real[i * n + j] = demand.at(i, j);
    Plan plan;
    plan.algorithm = "bvn";
    Cursor cursor(demand);
    for (const auto& perm : birkhoff_von_neumann(real, n)) {
        Step step;
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t j = perm.to[i];
            const std::uint64_t bytes = std::min(perm.weight, real[i * n + j]);
            if (bytes > 0) {
                step.transfers.push_back(cursor.take(router, i, j, bytes));
                real[i * n + j] -= bytes;
            }
        }
        if (!step.transfers.empty()) plan.steps.push_back(std::move(step));
    }
    return plan;
}

}  // namespace gpuops::alltoall
