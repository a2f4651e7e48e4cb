// Helpers shared by the demand's reading (demand.cpp) and its generators (demand_generators.cpp); not an API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "gpuops/alltoall/demand.hpp"

namespace gpuops::alltoall::demand_detail {

inline constexpr std::uint64_t max_u64 = std::numeric_limits<std::uint64_t>::max();
/// A dense n × n matrix of 2^28 entries is 2 GiB; past that the topology wants a hierarchical demand.
inline constexpr std::size_t max_gpus = 16384;
/// Generators split byte counts in doubles; below 2^53 every count is exact.
inline constexpr std::uint64_t max_generated_bytes = std::uint64_t{1} << 53;
inline constexpr std::uint64_t max_moe_picks = std::uint64_t{1} << 30;
inline constexpr std::uint64_t default_seed = 1;

/// a + b into `out`; false when it does not fit 64 bits.
[[nodiscard]] bool checked_add(std::uint64_t a, std::uint64_t b, std::uint64_t& out);
/// a · b into `out`; false when it does not fit 64 bits.
[[nodiscard]] bool checked_mul(std::uint64_t a, std::uint64_t b, std::uint64_t& out);
/// The sum of every entry, diagonal included; nullopt when it does not fit 64 bits (then some row or
/// column sum might not either).
[[nodiscard]] std::optional<std::uint64_t> checked_total(const Demand& d);
/// Without leading and trailing blanks (space, tab, CR).
[[nodiscard]] std::string_view trim(std::string_view s);
/// Every field between separators, empty ones included.
[[nodiscard]] std::vector<std::string_view> split(std::string_view s, char separator);
/// Decimal digits only (no sign, no space) that fit 64 bits.
[[nodiscard]] std::optional<std::uint64_t> parse_u64(std::string_view s);
/// An all-zero demand over the topology's GPUs; DataError for fewer than two GPUs or too many.
[[nodiscard]] Demand empty_demand(const topo::Topology& t, std::string_view source);
/// Text that should be read as a generator spec rather than a path: NAME:..., where NAME is a known generator,
/// or a generator-like word with a key=value after the colon.
[[nodiscard]] bool looks_like_spec(std::string_view text);

}  // namespace gpuops::alltoall::demand_detail
