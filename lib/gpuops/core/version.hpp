// The gpuops version and the build facts that `--version --format json` reports.
#pragma once

#include <span>
#include <string_view>

#include "gpuops/core/json_io.hpp"

namespace gpuops {

/// Semantic version of this build, e.g. "0.1.0".
[[nodiscard]] std::string_view version();

/// Document schemas this build reads and writes, with their newest major version.
struct SchemaVersion {
    std::string_view schema;
    int major;
};
[[nodiscard]] std::span<const SchemaVersion> supported_schemas();

/// {"tool", "version", "git_sha", "hwloc": {...}, "mpi": ..., "cuda": ..., "schemas": {...}}.
[[nodiscard]] json_io::Json build_info(std::string_view tool);

}  // namespace gpuops
