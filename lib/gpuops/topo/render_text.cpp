// The text view: an indented device tree and the relationship matrix operators know from nvidia-smi.
#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "gpuops/core/units.hpp"
#include "gpuops/topo/render.hpp"
#include "gpuops/topo/routing.hpp"

namespace gpuops::topo {
namespace {

std::string counted(std::size_t n, std::string_view noun) {
    const bool sibilant = noun.ends_with("ch") || noun.ends_with("s");
    return fmt::format("{} {}{}", n, noun, n == 1 ? "" : sibilant ? "es" : "s");
}

std::string describe(const Topology& t, const Device& d) {
    std::string line = d.name;
    std::vector<std::string> parts;
    switch (d.kind) {
        case DeviceKind::socket: parts.emplace_back("socket"); break;
        case DeviceKind::cpu_memory: parts.emplace_back("memory"); break;
        case DeviceKind::root_complex: parts.emplace_back("root complex"); break;
        case DeviceKind::pcie_switch: parts.emplace_back("PCIe switch"); break;
        case DeviceKind::gpu: parts.emplace_back("GPU"); break;
        case DeviceKind::nic: parts.emplace_back(d.rdma ? "NIC (RDMA)" : "NIC"); break;
        case DeviceKind::pci_device: parts.emplace_back("PCI device"); break;
        case DeviceKind::network_switch: parts.emplace_back("network switch"); break;
    }
    if (!d.model.empty()) parts.push_back(d.model);
    if (d.pci_bus_id) parts.push_back(*d.pci_bus_id);
    if (d.kind == DeviceKind::socket) {
        if (d.numa_node) parts.push_back(fmt::format("NUMA {}", *d.numa_node));
        if (d.cpuset) parts.push_back(fmt::format("cpus {}", *d.cpuset));
    }
    if (d.memory_bytes) parts.push_back(units::format_size(*d.memory_bytes));
    if (!d.interfaces.empty()) parts.push_back(fmt::format("{}", fmt::join(d.interfaces, ",")));
    if (d.port_bandwidth) parts.push_back(fmt::format("port {}", units::format_bandwidth(*d.port_bandwidth)));
    if (const auto up = t.uplink(d.id)) {
        const Link& l = t.links[*up];
        parts.push_back(
            l.pcie ? fmt::format("[{}, {}]", units::format_pcie_link(*l.pcie), units::format_bandwidth(l.bandwidth))
                   : fmt::format("[{}]", units::format_bandwidth(l.bandwidth)));
    }
    return line + "  " + fmt::format("{}", fmt::join(parts, "  "));
}

void tree(const Topology& t, DeviceId id, int depth, std::ostringstream& out) {
    out << std::string(static_cast<std::size_t>(2 + depth * 2), ' ') << describe(t, t.devices[id]) << '\n';
    for (DeviceId c : t.children(id))
        tree(t, c, depth + 1, out);
}

void matrix(const Topology& t, const Router& router, int node, std::ostringstream& out) {
    const auto gpus = t.devices_of(DeviceKind::gpu, node);
    const auto nics = t.devices_of(DeviceKind::nic, node);
    if (gpus.empty()) {
        out << "  (no GPU: no relationship matrix)\n";
        return;
    }
    std::vector<std::pair<std::string, DeviceId>> cols;
    for (std::size_t i = 0; i < gpus.size(); ++i)
        cols.emplace_back(fmt::format("GPU{}", i), gpus[i]);
    for (std::size_t i = 0; i < nics.size(); ++i)
        cols.emplace_back(fmt::format("NIC{}", i), nics[i]);
    std::size_t w = 6;
    for (const auto& c : cols)
        w = std::max(w, c.first.size() + 2);
    out << fmt::format("{:<{}}", "", w);
    for (const auto& c : cols)
        out << fmt::format("{:<{}}", c.first, w);
    out << "CPU Affinity    NUMA Affinity\n";
    for (const auto& row : cols) {
        out << fmt::format("{:<{}}", row.first, w);
        for (const auto& c : cols)
            out << fmt::format("{:<{}}", to_string(router.relation(row.second, c.second)), w);
        const DeviceId socket = router.socket_of(row.second);
        const Device& d = t.devices[row.second];
        const std::string cpus = socket != no_device && t.devices[socket].cpuset ? *t.devices[socket].cpuset : "N/A";
        const std::string numa = d.numa_node ? std::to_string(*d.numa_node) : "N/A";
        out << fmt::format("{:<16}{}\n", cpus, numa);
    }
    if (!nics.empty()) {
        out << "\nNIC Legend:\n";
        for (std::size_t i = 0; i < nics.size(); ++i) {
            const Device& n = t.devices[nics[i]];
            out << fmt::format("  NIC{}: {}\n", i, n.interfaces.empty() ? n.name : n.interfaces.front());
        }
    }
}

}  // namespace

std::string render_text(const Topology& t) {
    std::ostringstream out;
    const Router router(t);
    for (std::size_t n = 0; n < t.nodes.size(); ++n) {
        const int node = static_cast<int>(n);
        const std::string host = t.nodes[n].hostname.empty() ? "unnamed node" : t.nodes[n].hostname;
        out << fmt::format("{}  ({} {}; {}, {}, {})\n", host, t.source.kind, t.source.name,
                           counted(t.devices_of(DeviceKind::gpu, node).size(), "GPU"),
                           counted(t.devices_of(DeviceKind::nic, node).size(), "NIC"),
                           counted(t.devices_of(DeviceKind::pcie_switch, node).size(), "PCIe switch"));
        for (DeviceId s : t.devices_of(DeviceKind::socket, node))
            tree(t, s, 0, out);
        for (const auto& l : t.links) {
            if (l.kind != LinkKind::socket_interconnect || t.devices[l.a].node != node) continue;
            out << fmt::format("  {} <-> {}  socket interconnect  [{}]\n", t.devices[l.a].name, t.devices[l.b].name,
                               units::format_bandwidth(l.bandwidth));
        }
        out << '\n';
        matrix(t, router, node, out);
        out << '\n';
        if (t.nodes.size() > 4 && n == 0) {
            out << fmt::format("({} more nodes not shown; --format json lists them all)\n\n", t.nodes.size() - 1);
            break;
        }
    }
    if (t.fabric) {
        out << fmt::format("fabric: {}", t.fabric->kind);
        if (t.fabric->port_bandwidth > 0)
            out << fmt::format(", {} per port", units::format_bandwidth(t.fabric->port_bandwidth));
        out << fmt::format(", {}\n\n", counted(t.devices_of(DeviceKind::network_switch).size(), "switch"));
    }
    out << "Legend:\n"
           "  X    = Self\n"
           "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
           "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA "
           "node\n"
           "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
           "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
           "  PIX  = Connection traversing at most a single PCIe bridge\n";
    return out.str();
}

}  // namespace gpuops::topo
