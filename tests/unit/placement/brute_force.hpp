// The brute-force oracle for Φ*: every assignment of instances to nodes, for states small enough to enumerate.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace gpuops::test {

/// The fewest partial nodes over every assignment of `sizes` to nodes of `capacities`; -1 when none fits.
/// Nodes of the same capacity and load are interchangeable, so only the first of them is tried for each item.
inline int brute_force_phi_star(std::vector<int> sizes, const std::vector<int>& capacities) {
    std::sort(sizes.rbegin(), sizes.rend());
    std::vector<int> load(capacities.size(), 0);
    int best = std::numeric_limits<int>::max();
    std::function<void(std::size_t)> place = [&](std::size_t i) {
        if (i == sizes.size()) {
            int partial = 0;
            for (std::size_t n = 0; n < load.size(); ++n)
                partial += load[n] > 0 && load[n] < capacities[n] ? 1 : 0;
            best = std::min(best, partial);
            return;
        }
        for (std::size_t n = 0; n < load.size(); ++n) {
            if (load[n] + sizes[i] > capacities[n]) continue;
            bool seen = false;
            for (std::size_t m = 0; m < n && !seen; ++m)
                seen = capacities[m] == capacities[n] && load[m] == load[n];
            if (seen) continue;
            load[n] += sizes[i];
            place(i + 1);
            load[n] -= sizes[i];
        }
    };
    place(0);
    return best == std::numeric_limits<int>::max() ? -1 : best;
}

}  // namespace gpuops::test
