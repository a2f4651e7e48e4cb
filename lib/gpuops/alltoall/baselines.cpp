// The baselines VarioPath is measured against: direct (everything at once), pairwise (shifted rounds) and
// Birkhoff–von Neumann over a crossbar that ignores the PCIe tree.
#include <algorithm>
#include <functional>

#include <fmt/format.h>

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
    // Pad the off-diagonal demand to a matrix whose every row and column sums to the largest line sum L
    // (padding anywhere, the diagonal included: it is idle time), then peel off permutations: each is a
    // perfect matching on the positive entries (Birkhoff: one exists while the matrix is L-regular), for the
    // smallest entry it covers. The real bytes of each permutation are one step.
    const std::size_t n = demand.size();
    std::vector<std::uint64_t> real(n * n, 0);
    std::vector<std::uint64_t> rows(n, 0);
    std::vector<std::uint64_t> cols(n, 0);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
            if (i != j) {
                real[i * n + j] = demand.at(i, j);
                rows[i] += demand.at(i, j);
                cols[j] += demand.at(i, j);
            }
    const std::uint64_t line =
        std::max(*std::max_element(rows.begin(), rows.end()), *std::max_element(cols.begin(), cols.end()));
    std::vector<std::uint64_t> full = real;
    for (std::size_t i = 0, j = 0; i < n && j < n;) {
        const std::uint64_t add = std::min(line - rows[i], line - cols[j]);
        full[i * n + j] += add;
        rows[i] += add;
        cols[j] += add;
        if (rows[i] == line) ++i;
        if (j < n && cols[j] == line) ++j;
    }

    Plan plan;
    plan.algorithm = "bvn";
    Cursor cursor(demand);
    std::vector<std::size_t> match_of_row(n, n);
    std::vector<std::size_t> match_of_col(n, n);
    std::vector<char> seen(n);
    // Kuhn's augmenting paths, keeping the matching between rounds: only rows whose edge ran out re-augment.
    std::function<bool(std::size_t)> augment = [&](std::size_t i) {
        for (std::size_t j = 0; j < n; ++j) {
            if (full[i * n + j] == 0 || seen[j] != 0) continue;
            seen[j] = 1;
            if (match_of_col[j] == n || augment(match_of_col[j])) {
                match_of_row[i] = j;
                match_of_col[j] = i;
                return true;
            }
        }
        return false;
    };
    for (std::uint64_t left = line; left > 0;) {
        for (std::size_t i = 0; i < n; ++i) {
            if (match_of_row[i] != n) continue;
            std::fill(seen.begin(), seen.end(), 0);
            if (!augment(i)) throw InternalError("bvn: a regular matrix without a perfect matching");
        }
        std::uint64_t w = left;
        for (std::size_t i = 0; i < n; ++i)
            w = std::min(w, full[i * n + match_of_row[i]]);
        Step step;
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t j = match_of_row[i];
            const std::uint64_t bytes = std::min(w, real[i * n + j]);
            if (bytes > 0) {
                step.transfers.push_back(cursor.take(router, i, j, bytes));
                real[i * n + j] -= bytes;
            }
            full[i * n + j] -= w;
            if (full[i * n + j] == 0) {
                match_of_col[j] = n;
                match_of_row[i] = n;
            }
        }
        left -= w;
        if (!step.transfers.empty()) plan.steps.push_back(std::move(step));
    }
    return plan;
}

}  // namespace gpuops::alltoall
