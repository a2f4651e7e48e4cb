// The AlltoAllv demand matrix (bytes per GPU pair): gpuops.demand documents, CSV matrices and the generators.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpuops/core/json_io.hpp"
#include "gpuops/topo/topology.hpp"

namespace gpuops::alltoall {

inline constexpr int demand_schema_version = 1;

/// Bytes each GPU sends to each GPU in one AlltoAllv call: n × n, row = source, column = destination, in the
/// order of the topology's GPUs (Topology::devices_of(DeviceKind::gpu)). The diagonal is a GPU's own chunk
/// (a local copy, no link). Every demand that comes out of this module has row sums, column sums and a total
/// (diagonal included) below 2^64, so the sums below never wrap.
struct Demand {
    std::vector<topo::DeviceId> gpus;  ///< the topology's GPUs in order
    std::vector<std::uint64_t> bytes;  ///< row-major n*n
    std::string source;                ///< the file name, or the generator spec it came from
    std::string spec;                  ///< the generator spec it came from (as given, or as a document states it)

    [[nodiscard]] std::size_t size() const noexcept { return gpus.size(); }
    [[nodiscard]] std::uint64_t at(std::size_t i, std::size_t j) const { return bytes.at(i * size() + j); }
    [[nodiscard]] std::uint64_t& at(std::size_t i, std::size_t j) { return bytes.at(i * size() + j); }
    [[nodiscard]] std::uint64_t row_sum(std::size_t i) const;     ///< bytes GPU i sends, its own chunk included
    [[nodiscard]] std::uint64_t column_sum(std::size_t j) const;  ///< bytes GPU j receives, its own chunk included
    [[nodiscard]] std::uint64_t total() const;                    ///< off-diagonal bytes: what crosses links

    bool operator==(const Demand&) const = default;
};

/// A file (a gpuops.demand JSON document, or a CSV matrix: told apart by content — a document starts with
/// '{' — not by extension; "-" is stdin) or a generator spec NAME:key=value,... . A path that exists wins;
/// otherwise text that starts with a generator-like name and ':' and holds a '=' is a spec (so a mistyped
/// generator name is reported as one, not as a missing file). The demand's `source` is the file's display
/// name or the spec.
[[nodiscard]] Demand load_demand(std::string_view file_or_spec, const topo::Topology& topology);

/// Runs a generator spec; every generator is deterministic for a given seed (default 1) and needs ≥ 2 GPUs.
///  - `uniform:bytes=B`: every off-diagonal entry B.
///  - `zipf:s=S,bytes=B[,seed=N]`: each GPU sends B bytes in total to the other GPUs, the destination of rank r
///    (1-based) in a per-source random permutation getting a share ∝ 1/r^S; integer bytes that add up to B
///    exactly (largest-remainder rounding). S = 0 is an even split.
///  - `hot:experts=K,fraction=F[,bytes=B][,seed=N]`: K hot GPUs (1 ≤ K < n, chosen by seed) receive the share
///    F ∈ [0, 1] of every GPU's B bytes (default 64MiB), evenly; the rest goes evenly to the other GPUs. A hot
///    GPU's own row gives F to the other hot GPUs (when K = 1 it has none and spreads evenly).
///  - `moe:experts=E,topk=k,tokens=T,hidden=H[,dtype=bf16|fp8][,zipf=S][,placement=contiguous|round-robin]
///    [,seed=N]`: E experts on the n GPUs (contiguous: expert e on GPU ⌊e·n/E⌋; round-robin: e mod n; with
///    E < n some GPUs own none). Every GPU holds T tokens; each token picks k distinct experts, expert e with
///    popularity ∝ 1/(e+1)^S (S = 0 uniform, default), and is sent once to every GPU that owns one of its
///    experts (deduplicated per destination GPU, as DeepEP does): H × (2 for bf16, the default; 1 for fp8)
///    bytes added to D(i, j). Tokens that stay on their own GPU make the diagonal.
/// Bytes accept units (4096, 64KiB, 1MiB, 1GB = 1e9, 2G = 2 GiB). Randomness: std::mt19937_64 seeded with N
/// (its output is fixed by the C++ standard); doubles from its top 53 bits; integers below m by rejection;
/// shuffles by Fisher–Yates; Zipf draws by inverse CDF over a precomputed table.
/// Unknown generator, unknown/duplicate/missing key or a bad value: DataError naming it, e.g.
/// "uniform: unknown key 'byte' (keys: bytes)".
[[nodiscard]] Demand generate_demand(std::string_view spec, const topo::Topology& topology);

/// The names of the generators, in the order they are documented.
[[nodiscard]] std::vector<std::string_view> demand_generator_names();

/// Reads a gpuops.demand v1 document. DataErrors carry the JSON pointer of the bad value and `source_name`.
[[nodiscard]] Demand demand_from_json(const json_io::Json& doc, const topo::Topology& topology,
                                      std::string_view source_name);

/// Reads a CSV matrix: n lines of n comma-separated non-negative integers, optionally after one header line of
/// the GPU labels in order; blank lines and lines starting with '#' are skipped. DataErrors name the line
/// (and the column in their reason).
[[nodiscard]] Demand demand_from_csv(std::string_view text, const topo::Topology& topology,
                                     std::string_view source_name);

/// The gpuops.demand v1 document of `demand` (generator tool "vp-plan"); "spec" when the demand has one.
[[nodiscard]] json_io::Json to_json(const Demand& demand, const topo::Topology& topology);

}  // namespace gpuops::alltoall
