// The Graphviz view: clusters per node, one edge per full-duplex link labelled with its bandwidth.
#include <sstream>

#include <fmt/format.h>

#include "gpuops/core/units.hpp"
#include "gpuops/topo/render.hpp"

namespace gpuops::topo {
namespace {

/// Text from a document may hold anything: quote what DOT's quoted strings treat specially, drop controls.
std::string escape(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) < ' ') {
            out += ' ';
            continue;
        }
        out += c;
    }
    return out;
}

std::string_view shape(DeviceKind kind) {
    switch (kind) {
        case DeviceKind::gpu: return "box, style=filled, fillcolor=\"#b7e1a1\"";
        case DeviceKind::nic: return "box, style=filled, fillcolor=\"#a1c9e1\"";
        case DeviceKind::pcie_switch: return "diamond";
        case DeviceKind::root_complex: return "trapezium";
        case DeviceKind::socket: return "box3d";
        case DeviceKind::cpu_memory: return "cylinder";
        case DeviceKind::network_switch: return "doubleoctagon";
        case DeviceKind::pci_device: return "box, style=dashed";
    }
    return "box";
}

}  // namespace

std::string render_dot(const Topology& t) {
    std::ostringstream out;
    out << "graph topology {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n"
           "  edge [fontname=\"Helvetica\", fontsize=8];\n";
    const auto by_node = t.devices_by_node();
    for (std::size_t n = 0; n < t.nodes.size(); ++n) {
        out << fmt::format("  subgraph cluster_node{} {{\n    label=\"{}\";\n", n,
                           escape(t.nodes[n].hostname.empty() ? fmt::format("node {}", n) : t.nodes[n].hostname));
        for (DeviceId id : by_node[n]) {
            const Device& d = t.devices[id];
            if (d.kind == DeviceKind::network_switch) continue;
            std::string label = escape(d.name);
            if (!d.model.empty()) label += "\\n" + escape(d.model);
            if (d.pci_bus_id) label += "\\n" + escape(*d.pci_bus_id);
            out << fmt::format("    d{} [label=\"{}\", shape={}];\n", d.id, label, shape(d.kind));
        }
        out << "  }\n";
    }
    for (const auto& d : t.devices) {
        if (d.kind == DeviceKind::network_switch) {
            out << fmt::format("  d{} [label=\"{}\", shape={}];\n", d.id, escape(d.name), shape(d.kind));
        }
    }
    for (const auto& l : t.links) {
        const std::string label =
            l.pcie ? fmt::format("{}\\n{}", units::format_pcie_link(*l.pcie), units::format_bandwidth(l.bandwidth))
                   : units::format_bandwidth(l.bandwidth);
        const char* style = l.kind == LinkKind::socket_interconnect ? ", style=bold"
                            : l.kind == LinkKind::network           ? ", style=dashed"
                                                                    : "";
        out << fmt::format("  d{} -- d{} [label=\"{}\"{}];\n", l.b, l.a, label, style);
    }
    out << "}\n";
    return out.str();
}

}  // namespace gpuops::topo
