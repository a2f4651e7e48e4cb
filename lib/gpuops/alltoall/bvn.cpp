// Birkhoff–von Neumann decomposition: stuffing to a regular matrix, then perfect matchings peeled off.
#include "gpuops/alltoall/bvn.hpp"

#include <algorithm>
#include <functional>

#include "gpuops/core/error.hpp"

namespace gpuops::alltoall {

std::vector<Permutation> birkhoff_von_neumann(std::vector<std::uint64_t> m, std::size_t n) {
    std::vector<std::uint64_t> rows(n, 0);
    std::vector<std::uint64_t> cols(n, 0);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            rows[i] += m[i * n + j];
            cols[j] += m[i * n + j];
        }
    std::uint64_t line = 0;
    for (std::size_t i = 0; i < n; ++i)
        line = std::max({line, rows[i], cols[i]});
    for (std::size_t i = 0, j = 0; i < n && j < n;) {
        const std::uint64_t add = std::min(line - rows[i], line - cols[j]);
        m[i * n + j] += add;
        rows[i] += add;
        cols[j] += add;
        if (rows[i] == line) ++i;
        if (cols[j] == line) ++j;
    }
    std::vector<std::size_t> match_of_row(n, n);
    std::vector<std::size_t> match_of_col(n, n);
    std::vector<char> seen(n);
    std::function<bool(std::size_t)> augment = [&](std::size_t i) {
        for (std::size_t j = 0; j < n; ++j) {
            if (m[i * n + j] == 0 || seen[j] != 0) continue;
            seen[j] = 1;
            if (match_of_col[j] == n || augment(match_of_col[j])) {
                match_of_row[i] = j;
                match_of_col[j] = i;
                return true;
            }
        }
        return false;
    };
    std::vector<Permutation> perms;
    for (std::uint64_t left = line; left > 0;) {
        for (std::size_t i = 0; i < n; ++i) {
            if (match_of_row[i] != n) continue;
            std::fill(seen.begin(), seen.end(), 0);
            if (!augment(i)) throw InternalError("birkhoff_von_neumann: a regular matrix without a perfect matching");
        }
        std::uint64_t w = left;
        for (std::size_t i = 0; i < n; ++i)
            w = std::min(w, m[i * n + match_of_row[i]]);
        perms.push_back(Permutation{match_of_row, w});
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t j = match_of_row[i];
            m[i * n + j] -= w;
            if (m[i * n + j] == 0) {
                match_of_col[j] = n;
                match_of_row[i] = n;
            }
        }
        left -= w;
    }
    return perms;
}

}  // namespace gpuops::alltoall
