// Parsing the NVIDIA driver's per-GPU information file, and applying it to a live topology.
#include "gpuops/topo/nvidia_proc.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "gpuops/core/text.hpp"
#include "gpuops/topo/builder.hpp"

namespace gpuops::topo::nvidia_proc {
namespace {

constexpr int vendor_nvidia = 0x10de;
constexpr int max_minor = 255;  // character device minors of the driver are 8 bits

/// A key in one canonical form: lower case, inner runs of blanks as one space ("GPU  uuid" → "gpu uuid").
std::string canonical_key(std::string_view key) {
    std::string out;
    for (char c : text::trim(key)) {
        if (text::is_space(c)) {
            if (!out.empty() && out.back() != ' ') out += ' ';
        } else {
            out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
    }
    return out;
}

std::optional<int> parse_minor(std::string_view value) {
    const auto minor = text::leading_int(value);
    const bool whole = !value.empty() && std::all_of(value.begin(), value.end(), text::is_digit);
    if (!minor || !whole || *minor < 0 || *minor > max_minor) return std::nullopt;
    return minor;
}

std::optional<std::string> parse_uuid(std::string_view value) {
    // Before the GPU was first initialised the driver prints "GPU-????????-????-...".
    if (value.empty() || value.find('?') != std::string_view::npos || value == "N/A") return std::nullopt;
    return std::string(value);
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

}  // namespace

GpuInfo parse_information(std::string_view text) {
    GpuInfo info;
    while (!text.empty()) {
        const auto end = text.find('\n');
        const std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        // The first colon ends the key: values such as "0000:07:00.0" contain colons of their own.
        const auto colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string key = canonical_key(line.substr(0, colon));
        const std::string_view value = text::trim(line.substr(colon + 1));
        if (key == "model") {
            info.model = std::string(value);
        } else if (key == "gpu uuid") {
            info.uuid = parse_uuid(value);
        } else if (key == "device minor") {
            info.device_minor = parse_minor(value);
        } else if (key == "bus location") {
            info.bus_location = normalize_bus_id(value);
        } else if (key == "gpu excluded") {
            info.excluded = equals_ignoring_case(value, "yes");
        }
    }
    return info;
}

std::optional<GpuInfo> read(const std::string& bus_id, const std::string& root) {
    // The driver names the folders by lower-case bus id with a 4-digit domain.
    const std::string folder = normalize_bus_id(bus_id).value_or(bus_id);
    const std::string path = root + "/" + folder + "/information";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
    std::ifstream in(path);
    if (!in) return std::nullopt;
    // Files under /proc report size 0, so read to the end rather than by size.
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (in.bad()) return std::nullopt;
    return parse_information(text);
}

void annotate(Topology& topology, std::vector<std::string>& warnings, const std::string& root) {
    for (Device& d : topology.devices) {
        if (d.kind != DeviceKind::gpu || d.vendor_id != vendor_nvidia || !d.pci_bus_id) continue;
        const auto info = read(*d.pci_bus_id, root);
        if (!info) continue;
        // The driver's name is the marketing one ("NVIDIA A100-SXM4-80GB"); hwloc's PCI name is the chip's.
        if (!info->model.empty()) d.model = info->model;
        if (!d.uuid && info->uuid) d.uuid = info->uuid;
        d.device_minor = info->device_minor;
        if (info->excluded)
            warnings.push_back(fmt::format("{} ({}) is excluded by the NVIDIA driver", d.name, *d.pci_bus_id));
    }
}

}  // namespace gpuops::topo::nvidia_proc
