// Data files compiled into the tools (share/gpuops/presets), so nothing is read from disk at run time.
#pragma once

#include <string_view>
#include <vector>

namespace gpuops::embedded {

struct File {
    std::string_view name;  ///< file name without directory and extension
    std::string_view text;
};

/// share/gpuops/presets/*.json, sorted by name.
const std::vector<File>& presets();

}  // namespace gpuops::embedded
