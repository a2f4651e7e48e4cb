// The topology model of DESIGN.md Pillar A: devices, full-duplex links, and their directed edges.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuops/core/units.hpp"

namespace gpuops::topo {

enum class DeviceKind {
    socket,        ///< a CPU package (or a NUMA domain where that is all the source tells)
    cpu_memory,    ///< the DRAM behind a socket (host staging buffers live here)
    root_complex,  ///< a PCIe host bridge
    pcie_switch,   ///< a PCIe switch (its upstream and downstream ports collapsed into one device)
    gpu,
    nic,
    pci_device,      ///< any other PCIe endpoint (kept so nothing the source listed is lost)
    network_switch,  ///< a fabric switch joining the NICs of several nodes
};

enum class LinkKind {
    pcie,                 ///< a PCIe link (endpoint or switch to its upstream port)
    host,                 ///< a root complex to its socket (the CPU's internal fabric)
    memory,               ///< a socket to its DRAM
    socket_interconnect,  ///< UPI/QPI/xGMI/Infinity Fabric between sockets
    network,              ///< a NIC port or a switch-to-switch cable
};

[[nodiscard]] std::string_view to_string(DeviceKind kind);
[[nodiscard]] std::string_view to_string(LinkKind kind);
[[nodiscard]] std::optional<DeviceKind> device_kind_from_string(std::string_view text);
[[nodiscard]] std::optional<LinkKind> link_kind_from_string(std::string_view text);

using DeviceId = std::uint32_t;
using LinkId = std::uint32_t;
using EdgeId = std::uint32_t;
inline constexpr DeviceId no_device = std::numeric_limits<DeviceId>::max();

struct Device {
    DeviceId id = no_device;
    DeviceKind kind = DeviceKind::pci_device;
    int node = 0;                           ///< index into Topology::nodes
    std::string name;                       ///< unique within its node: gpu0, nic1, sw2, rc0, socket0, mem0, net0
    DeviceId parent = no_device;            ///< the tree parent; none for sockets and network switches
    std::optional<std::string> pci_bus_id;  ///< "0000:1b:00.0", lower case, 4-digit domain
    std::optional<int> vendor_id;
    std::optional<int> device_id;
    std::string model;  ///< e.g. "NVIDIA A100-SXM4-40GB"; may be empty
    std::optional<int> numa_node;
    std::optional<std::string> uuid;            ///< GPU UUID ("GPU-...") where the source knows it
    std::optional<int> device_minor;            ///< /dev/nvidiaN minor from the NVIDIA driver, where known
    std::optional<std::string> cpuset;          ///< sockets: OS processor list in hwloc list format ("0-31,64-95")
    std::optional<std::string> cores;           ///< sockets: Slurm core index list, for gres.conf Cores=
    std::vector<std::string> interfaces;        ///< NICs: OS names (mlx5_0, ib0, eth0); GPUs: cuda0, nvml0, ...
    bool rdma = false;                          ///< NICs: InfiniBand/RoCE/EFA capable
    std::optional<double> port_bandwidth;       ///< NICs: wire speed in bytes/s where known
    std::optional<std::uint64_t> memory_bytes;  ///< cpu_memory: capacity where known

    bool operator==(const Device&) const = default;
};

struct Link {
    LinkId id = 0;
    LinkKind kind = LinkKind::pcie;
    DeviceId a = no_device;  ///< the downstream end (child), or either end for socket/network links
    DeviceId b = no_device;  ///< the upstream end (parent)
    double bandwidth = 0;    ///< bytes/s, each direction
    double latency_us = 0;
    std::optional<units::PcieLink> pcie;  ///< generation and width of PCIe links, where known
    std::string source;                   ///< where bandwidth/latency come from (default table, sysfs, calibration)

    bool operator==(const Link&) const = default;
};

/// One direction of a link. Edge 2·l goes a→b ("up"), edge 2·l+1 goes b→a ("down").
struct Edge {
    EdgeId id = 0;
    LinkId link = 0;
    DeviceId from = no_device;
    DeviceId to = no_device;
    double bandwidth = 0;
    double latency_us = 0;
};

struct Node {
    std::string hostname;
    bool operator==(const Node&) const = default;
};

struct Fabric {
    std::string kind;           ///< nonblocking, rail, rail-only
    double port_bandwidth = 0;  ///< bytes/s per NIC port
    bool operator==(const Fabric&) const = default;
};

struct Source {
    std::string kind;  ///< hwloc, hwloc-xml, nccl-xml, preset, json
    std::string name;  ///< preset name, file path or host name
    bool operator==(const Source&) const = default;
};

/// Plain data: devices and links with dense ids (id == index). Build with add_device/add_link.
struct Topology {
    Source source;
    std::vector<Node> nodes;
    std::optional<Fabric> fabric;
    std::vector<Device> devices;
    std::vector<Link> links;

    DeviceId add_device(Device device);
    LinkId add_link(Link link);

    [[nodiscard]] const Device& device(DeviceId id) const { return devices.at(id); }
    [[nodiscard]] std::vector<DeviceId> devices_of(DeviceKind kind) const;
    [[nodiscard]] std::vector<DeviceId> devices_of(DeviceKind kind, int node) const;
    [[nodiscard]] std::optional<DeviceId> find(int node, std::string_view name) const;
    [[nodiscard]] std::optional<DeviceId> find_by_bus_id(int node, std::string_view bus_id) const;

    [[nodiscard]] std::size_t edge_count() const noexcept { return links.size() * 2; }
    [[nodiscard]] Edge edge(EdgeId id) const;
    [[nodiscard]] static EdgeId up_edge(LinkId link) noexcept { return link * 2; }
    [[nodiscard]] static EdgeId down_edge(LinkId link) noexcept { return link * 2 + 1; }

    /// The link from `device` to its tree parent, if it has one.
    [[nodiscard]] std::optional<LinkId> uplink(DeviceId device) const;
    [[nodiscard]] std::vector<LinkId> links_of(DeviceId device) const;
    [[nodiscard]] std::vector<DeviceId> children(DeviceId device) const;

    /// Indexes for whole-topology walks (renderers, routing): built once in linear time.
    [[nodiscard]] std::vector<std::vector<DeviceId>> devices_by_node() const;  ///< per node, in id order
    [[nodiscard]] std::vector<std::vector<DeviceId>> children_index() const;   ///< per device
    [[nodiscard]] std::vector<std::optional<LinkId>> uplink_index() const;     ///< per device

    /// "gpu3" for a single node; "node02/gpu3" when there are several nodes.
    [[nodiscard]] std::string label(DeviceId id) const;

    bool operator==(const Topology&) const = default;
};

}  // namespace gpuops::topo
