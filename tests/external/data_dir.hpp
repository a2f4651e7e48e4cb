// Where the external real-world data lives: ${GPUOPS_EXTERNAL_DATA:-../shared/data}.
#pragma once

#include <cstdlib>
#include <filesystem>

namespace gpuops::test {

inline std::filesystem::path external_data_dir() {
    if (const char* env = std::getenv("GPUOPS_EXTERNAL_DATA"); env != nullptr && *env != '\0') return env;
    return GPUOPS_DEFAULT_EXTERNAL_DATA;
}

}  // namespace gpuops::test
