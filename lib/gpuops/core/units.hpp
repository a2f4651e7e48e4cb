// Parsing and printing of the quantities operators type: bandwidths, PCIe links, sizes and durations.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpuops::units {

// ---- bandwidth ------------------------------------------------------------------------------------------------

/// Bytes per second from text such as `25GB/s`, `200Gb/s`, `400Gbps`, `100 Gbit/s`, `12.5GiB/s`, `1.5TB/s`.
/// `B` means bytes and `b`/`bit` means bits; k/K, M, G, T, P are powers of 1000 and Ki, Mi, Gi, Ti, Pi powers
/// of 1024. The value must be finite and greater than zero. Throws DataError otherwise.
[[nodiscard]] double parse_bandwidth(std::string_view text);

/// Human text in decimal bytes with at most 4 significant digits: `25 GB/s`, `1.5 GB/s`, `400 MB/s`.
/// Negative values keep their sign; NaN and infinities print as `n/a`.
[[nodiscard]] std::string format_bandwidth(double bytes_per_s);

// ---- PCIe links -----------------------------------------------------------------------------------------------

/// A PCIe link's speed and width. Zero means unknown.
struct PcieLink {
    int gen = 0;     ///< PCIe generation, 1..7
    int width = 0;   ///< lanes: 1, 2, 4, 8, 12, 16 or 32
    double gts = 0;  ///< transfer rate per lane in GT/s, normalised to the generation's nominal rate
    bool operator==(const PcieLink&) const = default;
};

/// Parses `16GT/s x16`, `16 GT/s x16`, `16.0 GT/s PCIe x8`, `32 GT/s PCIe/s x16` (NCCL), `Gen4 x16`, `gen5x8`,
/// `Gen4` or `8 GT/s` (width 0 = unknown). Case-insensitive. Throws DataError on anything else, on an unknown
/// speed or generation, and on a width PCIe does not have.
[[nodiscard]] PcieLink parse_pcie_link(std::string_view text);

/// Nominal GT/s per lane of a generation (2.5, 5, 8, 16, 32, 64, 128); 0 when the generation is unknown.
[[nodiscard]] double pcie_gts_for_gen(int gen) noexcept;

/// Generation for a transfer rate, tolerating float noise (15.99 -> 4); 0 when the rate matches none.
[[nodiscard]] int pcie_gen_for_gts(double gts) noexcept;

/// Bytes per second per direction after line encoding (8b/10b for gen 1-2, 128b/130b for gen 3-5, 242/256 FLIT
/// for gen 6-7), ignoring packet overhead. 0 when the generation is unknown or the width is not positive.
[[nodiscard]] double pcie_raw_bandwidth(int gen, int width) noexcept;

/// `16GT/s x16`, or `16GT/s` when the width is unknown; `unknown` when neither speed nor generation is known.
[[nodiscard]] std::string format_pcie_link(const PcieLink& link);

// ---- sizes ----------------------------------------------------------------------------------------------------

/// Bytes from `4096`, `4KiB`, `1.5MiB`, `1GB` (1e9), `64k`/`64K` (KiB, as dd and MPI benchmarks read it),
/// `2G` (GiB). A bare letter (k, m, g, t, p, e in either case) is binary, `<letter>B` is decimal and
/// `<letter>iB` is binary. The result must be a whole number of bytes below 2^64. Throws DataError otherwise.
[[nodiscard]] std::uint64_t parse_size(std::string_view text);

/// Human text in binary units with at most 4 significant digits: `512 B`, `4 KiB`, `1.5 MiB`.
[[nodiscard]] std::string format_size(std::uint64_t bytes);

// ---- durations ------------------------------------------------------------------------------------------------

/// Parses `30s`, `250ms`, `1.5s`, `2m`, `1h`, `100us` (or `µs`), `10ns` and sums of them such as `1m30s`;
/// a bare number is seconds. Fractions are rounded to the nearest nanosecond. Throws DataError on negative
/// values, on overflow of the nanosecond count and on junk.
[[nodiscard]] std::chrono::nanoseconds parse_duration(std::string_view text);

/// `0s`, `12us`, `250ms`, `1.5s` (at most 4 significant digits below a minute), `2m30s`, `1h5s` (whole seconds
/// from a minute up, zero parts left out).
[[nodiscard]] std::string format_duration(std::chrono::nanoseconds duration);

}  // namespace gpuops::units
