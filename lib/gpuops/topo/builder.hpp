// Builds one node of a Topology: sockets, root complexes, switches and endpoints, with default link numbers.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuops/core/units.hpp"
#include "gpuops/topo/link_defaults.hpp"
#include "gpuops/topo/topology.hpp"

namespace gpuops::topo {

/// More CPU packages (or NUMA domains standing in for them) than any real server has: 8-socket boxes exist,
/// and NPS4/SNC4 NUMA domains on those stay well below this.
inline constexpr int max_sockets_per_node = 64;

struct SocketSpec {
    defaults::Cpu cpu;
    std::optional<int> numa_node;
    std::optional<std::string> cpuset;
    std::optional<std::string> cores;
    std::optional<std::uint64_t> memory_bytes;
};

/// What a source says about a PCIe link; the builder turns it into bandwidth and latency.
struct LinkSpec {
    std::optional<units::PcieLink> pcie;  ///< generation/width, when known
    std::optional<double> line_rate;      ///< bytes/s of the encoded link (hwloc), when gen/width are not
    std::string origin;                   ///< who said so: "hwloc", "sysfs max_link_speed", "NCCL XML", "preset"
};

/// Identity of a PCIe device; everything optional except what the caller knows.
struct PciSpec {
    std::optional<std::string> bus_id;
    std::optional<int> vendor_id;
    std::optional<int> device_id;
    std::string model;
    std::optional<std::string> uuid;
    std::optional<int> device_minor;  ///< GPUs: N of /dev/nvidiaN
    std::vector<std::string> interfaces;
    bool rdma = false;
    std::optional<double> port_bandwidth;  ///< NICs: wire speed in bytes/s
};

class Builder {
public:
    /// Adds devices for node `node` of `topology` (the node entry must already exist).
    Builder(Topology& topology, int node);

    DeviceId add_socket(const SocketSpec& spec);
    DeviceId add_root_complex(DeviceId socket, std::optional<std::string> bus_id = std::nullopt);
    DeviceId add_switch(DeviceId parent, const PciSpec& pci, const LinkSpec& uplink);
    DeviceId add_endpoint(DeviceKind kind, DeviceId parent, const PciSpec& pci, const LinkSpec& link);

    /// Joins every pair of sockets of this node, adds host links for the root complexes and sets NUMA
    /// nodes on the devices below each socket. Call once, after all devices were added.
    void finish();

private:
    std::string next_name(DeviceKind kind);
    [[nodiscard]] Link pcie_link(DeviceId child, DeviceId parent, const LinkSpec& spec) const;

    Topology& topo_;
    int node_;
    std::map<DeviceKind, int> counters_;
    std::map<DeviceId, defaults::Cpu> socket_cpus_;
};

/// Canonical PCI bus id "dddd:bb:dd.f" (lower case). Accepts "bb:dd.f" (domain 0) and upper case;
/// nullopt when `text` is not a bus id.
[[nodiscard]] std::optional<std::string> normalize_bus_id(std::string_view text);

}  // namespace gpuops::topo
