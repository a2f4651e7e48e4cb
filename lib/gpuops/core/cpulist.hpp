// CPU lists in the Linux/hwloc "list" format ("0-23,48-71"), as taskset -c and Slurm's Cores= read them.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuops::cpulist {

/// "0-3,8,10-11" from any set of indexes (order and duplicates do not matter); "" for none.
[[nodiscard]] std::string format(std::span<const int> indexes);

/// The sorted, de-duplicated indexes of a list such as "0-3,8"; DataError for malformed text
/// (descending ranges, negative numbers, more than 1<<20 entries).
[[nodiscard]] std::vector<int> parse(std::string_view text);

}  // namespace gpuops::cpulist
