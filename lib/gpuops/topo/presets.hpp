// Synthetic node topologies: the embedded presets (share/gpuops/presets) and user-written spec files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpuops/core/json_io.hpp"
#include "gpuops/topo/topology.hpp"

namespace gpuops::topo {

struct PresetInfo {
    std::string name;
    std::string description;
    std::vector<std::string> sources;  ///< where each number comes from
};

/// The embedded presets, sorted by name.
[[nodiscard]] std::vector<PresetInfo> list_presets();

/// --list-presets: "text" (name and description, with the sources when `verbose`) or "json"
/// (a gpuops.preset_list document).
[[nodiscard]] std::string render_preset_list(std::string_view format, bool verbose, bool compact,
                                             std::string_view tool);

/// Builds an embedded preset by name. Unknown name: UsageError listing the known ones.
[[nodiscard]] Topology build_preset(std::string_view name);

/// Builds a topology from a preset spec document (the format of share/gpuops/presets/*.json);
/// `source_name` is used in error messages and as the topology's source name.
[[nodiscard]] Topology build_from_spec(const json_io::Json& spec, std::string_view source_name);

}  // namespace gpuops::topo
