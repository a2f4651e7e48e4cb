// RAII ownership of hwloc topologies and bitmaps, and the checker that turns failed hwloc calls into typed errors.
#pragma once

#include <string>
#include <string_view>

#include <hwloc.h>

#include "gpuops/core/error.hpp"

namespace gpuops::topo {

/// A failed hwloc C call: the message names the API and the errno text.
class HwlocError : public UnavailableError {
public:
    HwlocError(std::string_view api, int error_number);
    [[nodiscard]] const std::string& api() const noexcept { return api_; }
    [[nodiscard]] int error_number() const noexcept { return error_number_; }

private:
    std::string api_;
    int error_number_;
};

/// Throws HwlocError naming `api` when an hwloc call returned a negative status (errno holds the reason).
void check_hwloc(int status, std::string_view api);

/// Owns one hwloc_topology_t from hwloc_topology_init to hwloc_topology_destroy.
class HwlocTopology {
public:
    HwlocTopology();
    ~HwlocTopology();
    HwlocTopology(HwlocTopology&& other) noexcept;
    HwlocTopology& operator=(HwlocTopology&& other) noexcept;
    HwlocTopology(const HwlocTopology&) = delete;
    HwlocTopology& operator=(const HwlocTopology&) = delete;

    [[nodiscard]] hwloc_topology_t get() const noexcept { return topology_; }

    /// Keeps every bridge, PCI device and OS device; hwloc drops them all by default. Call before load().
    void keep_all_io();
    /// Reads the topology from XML text instead of this machine. `text` must stay alive until load().
    void set_xml_text(const std::string& text);
    void load();
    /// False when the loaded topology is not this machine (XML, synthetic, or HWLOC_XMLFILE in the environment).
    [[nodiscard]] bool is_this_system() const noexcept;
    [[nodiscard]] hwloc_obj_t root() const noexcept;

private:
    hwloc_topology_t topology_ = nullptr;
};

/// Owns one hwloc bitmap.
class HwlocBitmap {
public:
    HwlocBitmap();
    ~HwlocBitmap();
    HwlocBitmap(HwlocBitmap&& other) noexcept;
    HwlocBitmap& operator=(HwlocBitmap&& other) noexcept;
    HwlocBitmap(const HwlocBitmap&) = delete;
    HwlocBitmap& operator=(const HwlocBitmap&) = delete;

    [[nodiscard]] hwloc_bitmap_t get() const noexcept { return bitmap_; }
    void set(unsigned index);

private:
    hwloc_bitmap_t bitmap_ = nullptr;
};

/// A bitmap in hwloc's list format ("0-3,8,10-11"), as Linux and Slurm write CPU lists.
[[nodiscard]] std::string bitmap_list(hwloc_const_bitmap_t bitmap);

}  // namespace gpuops::topo
