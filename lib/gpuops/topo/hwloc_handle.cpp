// The hwloc C API behind move-only handles: every failing call throws HwlocError with the API name.
#include "gpuops/topo/hwloc_handle.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

#include <fmt/format.h>

namespace gpuops::topo {
namespace {

std::string describe(std::string_view api, int error_number) {
    if (error_number == 0) return fmt::format("{} failed", api);
    return fmt::format("{} failed: {}", api, std::strerror(error_number));
}

}  // namespace

HwlocError::HwlocError(std::string_view api, int error_number)
    : UnavailableError(describe(api, error_number)), api_(api), error_number_(error_number) {}

void check_hwloc(int status, std::string_view api) {
    if (status < 0) throw HwlocError(api, errno);
}

HwlocTopology::HwlocTopology() { check_hwloc(hwloc_topology_init(&topology_), "hwloc_topology_init"); }

HwlocTopology::~HwlocTopology() {
    if (topology_ != nullptr) hwloc_topology_destroy(topology_);
}

HwlocTopology::HwlocTopology(HwlocTopology&& other) noexcept : topology_(std::exchange(other.topology_, nullptr)) {}

HwlocTopology& HwlocTopology::operator=(HwlocTopology&& other) noexcept {
    if (this != &other) {
        if (topology_ != nullptr) hwloc_topology_destroy(topology_);
        topology_ = std::exchange(other.topology_, nullptr);
    }
    return *this;
}

void HwlocTopology::keep_all_io() {
    check_hwloc(hwloc_topology_set_io_types_filter(topology_, HWLOC_TYPE_FILTER_KEEP_ALL),
                "hwloc_topology_set_io_types_filter");
}

void HwlocTopology::set_xml_text(const std::string& text) {
    // hwloc takes the length including the terminating NUL, as hwloc_topology_export_xmlbuffer reports it.
    if (text.size() >= static_cast<std::size_t>(INT_MAX)) throw HwlocError("hwloc_topology_set_xmlbuffer", EFBIG);
    check_hwloc(hwloc_topology_set_xmlbuffer(topology_, text.c_str(), static_cast<int>(text.size() + 1)),
                "hwloc_topology_set_xmlbuffer");
}

void HwlocTopology::load() { check_hwloc(hwloc_topology_load(topology_), "hwloc_topology_load"); }

bool HwlocTopology::is_this_system() const noexcept { return hwloc_topology_is_thissystem(topology_) != 0; }

hwloc_obj_t HwlocTopology::root() const noexcept { return hwloc_get_root_obj(topology_); }

HwlocBitmap::HwlocBitmap() : bitmap_(hwloc_bitmap_alloc()) {
    if (bitmap_ == nullptr) throw HwlocError("hwloc_bitmap_alloc", ENOMEM);
}

HwlocBitmap::~HwlocBitmap() {
    if (bitmap_ != nullptr) hwloc_bitmap_free(bitmap_);
}

HwlocBitmap::HwlocBitmap(HwlocBitmap&& other) noexcept : bitmap_(std::exchange(other.bitmap_, nullptr)) {}

HwlocBitmap& HwlocBitmap::operator=(HwlocBitmap&& other) noexcept {
    if (this != &other) {
        if (bitmap_ != nullptr) hwloc_bitmap_free(bitmap_);
        bitmap_ = std::exchange(other.bitmap_, nullptr);
    }
    return *this;
}

void HwlocBitmap::set(unsigned index) { check_hwloc(hwloc_bitmap_set(bitmap_, index), "hwloc_bitmap_set"); }

std::string bitmap_list(hwloc_const_bitmap_t bitmap) {
    char* text = nullptr;
    check_hwloc(hwloc_bitmap_list_asprintf(&text, bitmap), "hwloc_bitmap_list_asprintf");
    const std::unique_ptr<char, decltype(&std::free)> owner(text, &std::free);
    return text != nullptr ? std::string(text) : std::string();
}

}  // namespace gpuops::topo
