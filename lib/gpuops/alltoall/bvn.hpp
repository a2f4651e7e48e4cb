// Birkhoff–von Neumann decomposition of a non-negative integer matrix, shared by the bvn baseline (GPU
// level) and FAST (server level).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpuops::alltoall {

/// One permutation of the decomposition: row i goes to column to[i] for `weight`.
struct Permutation {
    std::vector<std::size_t> to;
    std::uint64_t weight = 0;
};

/// Pads the n×n matrix `m` (row-major) to one whose every line sums to its largest line sum L — padding
/// anywhere, the diagonal included: it is idle time — and peels off perfect matchings on the positive entries
/// (Kuhn's augmenting paths, keeping the matching between rounds so that only rows whose entry ran out
/// re-augment; one exists while the matrix is regular), each for its smallest entry. The weights add up to L.
[[nodiscard]] std::vector<Permutation> birkhoff_von_neumann(std::vector<std::uint64_t> m, std::size_t n);

}  // namespace gpuops::alltoall
