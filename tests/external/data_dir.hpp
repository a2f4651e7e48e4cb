// Where the external real-world data lives: ${GPUOPS_EXTERNAL_DATA:-../shared/data}.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>

namespace gpuops::test {

inline std::filesystem::path external_data_dir() {
    if (const char* env = std::getenv("GPUOPS_EXTERNAL_DATA"); env != nullptr && *env != '\0') return env;
    return GPUOPS_DEFAULT_EXTERNAL_DATA;
}

inline std::filesystem::path traces_dir() { return external_data_dir() / "traces"; }

/// Whether a data folder is there; a test without it is skipped with a warning, not failed.
inline bool have(const std::filesystem::path& dir) {
    if (std::filesystem::is_directory(dir)) return true;
    WARN("skipped: no traces in " << dir.string());
    return false;
}

}  // namespace gpuops::test
