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

/// The indexes every part of the view needs, built once so the view stays linear in the topology size.
struct View {
    const Topology& t;
    std::vector<std::vector<DeviceId>> by_node = t.devices_by_node();
    std::vector<std::vector<DeviceId>> children = t.children_index();
    std::vector<std::optional<LinkId>> uplinks = t.uplink_index();

    [[nodiscard]] std::vector<DeviceId> of(DeviceKind kind, std::size_t node) const {
        std::vector<DeviceId> out;
        for (DeviceId id : by_node[node])
            if (t.devices[id].kind == kind) out.push_back(id);
        return out;
    }
};

constexpr std::size_t max_matrix_columns = 64;

std::string describe(const View& v, const Device& d) {
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
    if (const auto up = v.uplinks[d.id]) {
        const Link& l = v.t.links[*up];
        parts.push_back(
            l.pcie ? fmt::format("[{}, {}]", units::format_pcie_link(*l.pcie), units::format_bandwidth(l.bandwidth))
                   : fmt::format("[{}]", units::format_bandwidth(l.bandwidth)));
    }
    return d.name + "  " + fmt::format("{}", fmt::join(parts, "  "));
}

void tree(const View& v, DeviceId root, std::ostringstream& out) {
    // Depth-first without recursion: validate() bounds the depth, but a stack of our own costs nothing.
    std::vector<std::pair<DeviceId, std::size_t>> stack{{root, 0}};
    while (!stack.empty()) {
        const auto [id, depth] = stack.back();
        stack.pop_back();
        out << std::string(2 + depth * 2, ' ') << describe(v, v.t.devices[id]) << '\n';
        const auto& kids = v.children[id];
        for (std::size_t i = kids.size(); i-- > 0;)
            stack.emplace_back(kids[i], depth + 1);  // first child on top
    }
}

void matrix(const View& v, const Router& router, std::size_t node, std::ostringstream& out) {
    const Topology& t = v.t;
    const auto gpus = v.of(DeviceKind::gpu, node);
    const auto nics = v.of(DeviceKind::nic, node);
    if (gpus.empty()) {
        out << "  (no GPU: no relationship matrix)\n";
        return;
    }
    if (gpus.size() + nics.size() > max_matrix_columns) {
        out << fmt::format("  ({} and {}: the matrix is shown up to {} columns; --format json has every device)\n",
                           counted(gpus.size(), "GPU"), counted(nics.size(), "NIC"), max_matrix_columns);
        return;
    }
    struct Row {
        std::string label;
        DeviceId id;
        std::string cpus;
        std::string numa;
    };
    std::vector<Row> rows;
    auto add = [&](std::string label, DeviceId id) {
        const DeviceId socket = router.socket_of(id);
        const Device& d = t.devices[id];
        rows.push_back({std::move(label), id,
                        socket != no_device && t.devices[socket].cpuset ? *t.devices[socket].cpuset : "N/A",
                        d.numa_node ? std::to_string(*d.numa_node) : "N/A"});
    };
    for (std::size_t i = 0; i < gpus.size(); ++i)
        add(fmt::format("GPU{}", i), gpus[i]);
    for (std::size_t i = 0; i < nics.size(); ++i)
        add(fmt::format("NIC{}", i), nics[i]);
    std::size_t w = 6;
    std::size_t cpu_w = std::string_view("CPU Affinity").size() + 4;
    for (const auto& r : rows) {
        w = std::max(w, r.label.size() + 2);
        cpu_w = std::max(cpu_w, r.cpus.size() + 4);
    }
    out << fmt::format("{:<{}}", "", w);
    for (const auto& r : rows)
        out << fmt::format("{:<{}}", r.label, w);
    out << fmt::format("{:<{}}NUMA Affinity\n", "CPU Affinity", cpu_w);
    for (const auto& row : rows) {
        out << fmt::format("{:<{}}", row.label, w);
        for (const auto& c : rows)
            out << fmt::format("{:<{}}", to_string(router.relation(row.id, c.id)), w);
        out << fmt::format("{:<{}}{}\n", row.cpus, cpu_w, row.numa);
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
    const View v{t};
    const std::size_t shown = t.nodes.size() > 4 ? 1 : t.nodes.size();
    for (std::size_t n = 0; n < shown; ++n) {
        const std::string host = t.nodes[n].hostname.empty() ? "unnamed node" : t.nodes[n].hostname;
        out << fmt::format("{}  ({} {}; {}, {}, {})\n", host, t.source.kind, t.source.name,
                           counted(v.of(DeviceKind::gpu, n).size(), "GPU"),
                           counted(v.of(DeviceKind::nic, n).size(), "NIC"),
                           counted(v.of(DeviceKind::pcie_switch, n).size(), "PCIe switch"));
        for (DeviceId s : v.of(DeviceKind::socket, n))
            tree(v, s, out);
        for (const auto& l : t.links) {
            if (l.kind != LinkKind::socket_interconnect || t.devices[l.a].node != static_cast<int>(n)) continue;
            out << fmt::format("  {} <-> {}  socket interconnect  [{}]\n", t.devices[l.a].name, t.devices[l.b].name,
                               units::format_bandwidth(l.bandwidth));
        }
        out << '\n';
        matrix(v, router, n, out);
        out << '\n';
    }
    if (shown < t.nodes.size()) {
        out << fmt::format("({} more nodes not shown; --format json lists them all)\n\n", t.nodes.size() - shown);
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
