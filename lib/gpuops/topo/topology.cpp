// Topology container operations: ids, lookups, directed edges and labels.
#include "gpuops/topo/topology.hpp"

#include <array>
#include <utility>

#include "gpuops/core/error.hpp"

namespace gpuops::topo {
namespace {

constexpr std::array<std::pair<DeviceKind, std::string_view>, 8> device_kind_names{{
    {DeviceKind::socket, "socket"},
    {DeviceKind::cpu_memory, "cpu_memory"},
    {DeviceKind::root_complex, "root_complex"},
    {DeviceKind::pcie_switch, "pcie_switch"},
    {DeviceKind::gpu, "gpu"},
    {DeviceKind::nic, "nic"},
    {DeviceKind::pci_device, "pci_device"},
    {DeviceKind::network_switch, "network_switch"},
}};

constexpr std::array<std::pair<LinkKind, std::string_view>, 5> link_kind_names{{
    {LinkKind::pcie, "pcie"},
    {LinkKind::host, "host"},
    {LinkKind::memory, "memory"},
    {LinkKind::socket_interconnect, "socket_interconnect"},
    {LinkKind::network, "network"},
}};

}  // namespace

std::string_view to_string(DeviceKind kind) {
    for (const auto& [k, name] : device_kind_names)
        if (k == kind) return name;
    return "unknown";
}

std::string_view to_string(LinkKind kind) {
    for (const auto& [k, name] : link_kind_names)
        if (k == kind) return name;
    return "unknown";
}

std::optional<DeviceKind> device_kind_from_string(std::string_view text) {
    for (const auto& [k, name] : device_kind_names)
        if (name == text) return k;
    return std::nullopt;
}

std::optional<LinkKind> link_kind_from_string(std::string_view text) {
    for (const auto& [k, name] : link_kind_names)
        if (name == text) return k;
    return std::nullopt;
}

DeviceId Topology::add_device(Device device) {
    device.id = static_cast<DeviceId>(devices.size());
    devices.push_back(std::move(device));
    return devices.back().id;
}

LinkId Topology::add_link(Link link) {
    if (link.a >= devices.size() || link.b >= devices.size() || link.a == link.b) {
        throw InternalError("add_link: link endpoints must be two distinct existing devices");
    }
    link.id = static_cast<LinkId>(links.size());
    links.push_back(std::move(link));
    return links.back().id;
}

std::vector<DeviceId> Topology::devices_of(DeviceKind kind) const {
    std::vector<DeviceId> out;
    for (const auto& d : devices)
        if (d.kind == kind) out.push_back(d.id);
    return out;
}

std::vector<DeviceId> Topology::devices_of(DeviceKind kind, int node) const {
    std::vector<DeviceId> out;
    for (const auto& d : devices)
        if (d.kind == kind && d.node == node) out.push_back(d.id);
    return out;
}

std::optional<DeviceId> Topology::find(int node, std::string_view name) const {
    for (const auto& d : devices)
        if (d.node == node && d.name == name) return d.id;
    return std::nullopt;
}

std::optional<DeviceId> Topology::find_by_bus_id(int node, std::string_view bus_id) const {
    for (const auto& d : devices)
        if (d.node == node && d.pci_bus_id && *d.pci_bus_id == bus_id) return d.id;
    return std::nullopt;
}

Edge Topology::edge(EdgeId id) const {
    const Link& l = links.at(id / 2);
    const bool up = id % 2 == 0;
    return Edge{id, l.id, up ? l.a : l.b, up ? l.b : l.a, l.bandwidth, l.latency_us};
}

std::optional<LinkId> Topology::uplink(DeviceId device) const {
    const DeviceId parent = devices.at(device).parent;
    if (parent == no_device) return std::nullopt;
    for (const auto& l : links)
        if (l.a == device && l.b == parent) return l.id;
    return std::nullopt;
}

std::vector<LinkId> Topology::links_of(DeviceId device) const {
    std::vector<LinkId> out;
    for (const auto& l : links)
        if (l.a == device || l.b == device) out.push_back(l.id);
    return out;
}

std::vector<DeviceId> Topology::children(DeviceId device) const {
    std::vector<DeviceId> out;
    for (const auto& d : devices)
        if (d.parent == device) out.push_back(d.id);
    return out;
}

std::vector<std::vector<DeviceId>> Topology::devices_by_node() const {
    std::vector<std::vector<DeviceId>> out(nodes.size());
    for (const auto& d : devices)
        if (d.node >= 0 && static_cast<std::size_t>(d.node) < out.size())
            out[static_cast<std::size_t>(d.node)].push_back(d.id);
    return out;
}

std::vector<std::vector<DeviceId>> Topology::children_index() const {
    std::vector<std::vector<DeviceId>> out(devices.size());
    for (const auto& d : devices)
        if (d.parent != no_device && d.parent < devices.size()) out[d.parent].push_back(d.id);
    return out;
}

std::vector<std::optional<LinkId>> Topology::uplink_index() const {
    std::vector<std::optional<LinkId>> out(devices.size());
    for (const auto& l : links)
        if (l.a < devices.size() && devices[l.a].parent == l.b) out[l.a] = l.id;
    return out;
}

std::string Topology::label(DeviceId id) const {
    const Device& d = devices.at(id);
    if (d.kind == DeviceKind::network_switch) return d.name;  // fabric switches belong to no one node
    if (nodes.size() <= 1 || d.node < 0 || static_cast<std::size_t>(d.node) >= nodes.size()) return d.name;
    return nodes[static_cast<std::size_t>(d.node)].hostname + "/" + d.name;
}

}  // namespace gpuops::topo
