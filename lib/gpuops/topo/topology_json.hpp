// The gpuops.topology JSON document (schema version 1): writing, reading and structural validation.
#pragma once

#include <string_view>

#include "gpuops/core/json_io.hpp"
#include "gpuops/topo/topology.hpp"

namespace gpuops::topo {

inline constexpr std::string_view topology_schema = "gpuops.topology";
inline constexpr int topology_schema_version = 1;

/// The whole document, header included, with stable key order.
[[nodiscard]] json_io::Json to_json(const Topology& topology, std::string_view tool);

/// Reads and validates a gpuops.topology document; errors carry the JSON pointer of the bad value.
[[nodiscard]] Topology topology_from_json(const json_io::Json& doc);

/// Deeper device trees are rejected: real PCIe trees are under a dozen levels (DGX-2: 7).
inline constexpr int max_tree_depth = 64;

/// Structural checks every importer's result must pass: dense ids, known parents without cycles,
/// an uplink for every tree child, positive bandwidths. Throws DataError with a JSON pointer.
void validate(const Topology& topology);

/// "0x10de"
[[nodiscard]] std::string hex_id(int id);

}  // namespace gpuops::topo
