// What the NVIDIA kernel driver says about each GPU in /proc/driver/nvidia/gpus/<bus id>/information, without NVML.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuops/topo/topology.hpp"

namespace gpuops::topo::nvidia_proc {

inline constexpr std::string_view default_root = "/proc/driver/nvidia/gpus";

struct GpuInfo {
    std::string model;                        ///< "NVIDIA A100-SXM4-80GB"; empty when the driver does not say
    std::optional<std::string> uuid;          ///< "GPU-..."; absent until the driver has read it (it prints "?")
    std::optional<int> device_minor;          ///< N of /dev/nvidiaN, 0..255
    std::optional<std::string> bus_location;  ///< canonical PCI bus id "0000:07:00.0"
    bool excluded = false;                    ///< "GPU Excluded: Yes": the driver will not hand the GPU out

    bool operator==(const GpuInfo&) const = default;
};

/// Parses the text of an `information` file. Tolerant: unknown keys are ignored, any padding of tabs and spaces
/// and CR LF line ends are accepted, and a missing or malformed value leaves its field absent.
[[nodiscard]] GpuInfo parse_information(std::string_view text);

/// Reads <root>/<bus id>/information; nullopt when the file is absent or unreadable (no NVIDIA driver loaded).
[[nodiscard]] std::optional<GpuInfo> read(const std::string& bus_id,
                                          const std::string& root = std::string(default_root));

/// Adds what the driver knows to every NVIDIA GPU of `topology` found under `root`: the device minor, the UUID
/// where the topology has none, and the driver's model name. GPUs the driver excludes get a warning.
void annotate(Topology& topology, std::vector<std::string>& warnings,
              const std::string& root = std::string(default_root));

}  // namespace gpuops::topo::nvidia_proc
