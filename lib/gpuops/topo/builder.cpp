// Node construction with consistent names (gpu0, sw1, ...) and default link numbers from link_defaults.
#include "gpuops/topo/builder.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"

namespace gpuops::topo {
namespace {

std::string_view name_prefix(DeviceKind kind) {
    switch (kind) {
        case DeviceKind::socket: return "socket";
        case DeviceKind::cpu_memory: return "mem";
        case DeviceKind::root_complex: return "rc";
        case DeviceKind::pcie_switch: return "sw";
        case DeviceKind::gpu: return "gpu";
        case DeviceKind::nic: return "nic";
        case DeviceKind::pci_device: return "pci";
        case DeviceKind::network_switch: return "net";
    }
    return "dev";
}

bool all_hex(std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

std::optional<std::string> normalize_bus_id(std::string_view text) {
    // dddd:bb:dd.f or bb:dd.f; NCCL also writes 8-digit domains (fffffff:ff:ff.0) for virtual devices.
    std::string s(text);
    for (auto& c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const auto dot = s.rfind('.');
    if (dot == std::string::npos) return std::nullopt;
    const std::string func = s.substr(dot + 1);
    std::string rest = s.substr(0, dot);
    const auto c2 = rest.rfind(':');
    if (c2 == std::string::npos) return std::nullopt;
    const std::string dev = rest.substr(c2 + 1);
    rest = rest.substr(0, c2);
    std::string domain = "0000";
    std::string bus = rest;
    if (const auto c1 = rest.rfind(':'); c1 != std::string::npos) {
        domain = rest.substr(0, c1);
        bus = rest.substr(c1 + 1);
    }
    if (!all_hex(domain) || domain.size() > 8 || !all_hex(bus) || bus.size() > 2 || !all_hex(dev) || dev.size() > 2 ||
        func.size() != 1 || func[0] < '0' || func[0] > '7') {
        return std::nullopt;
    }
    if (std::stoul(dev, nullptr, 16) > 0x1f) return std::nullopt;
    while (domain.size() < 4)
        domain.insert(domain.begin(), '0');
    if (bus.size() < 2) bus.insert(bus.begin(), '0');
    std::string d = dev;
    if (d.size() < 2) d.insert(d.begin(), '0');
    return fmt::format("{}:{}:{}.{}", domain, bus, d, func);
}

Builder::Builder(Topology& topology, int node) : topo_(topology), node_(node) {
    if (node < 0 || static_cast<std::size_t>(node) >= topology.nodes.size()) {
        throw InternalError("Builder: node index out of range");
    }
    // Continue numbering after devices a previous builder already added to this node.
    for (const auto& d : topology.devices)
        if (d.node == node) ++counters_[d.kind];
}

std::string Builder::next_name(DeviceKind kind) { return fmt::format("{}{}", name_prefix(kind), counters_[kind]++); }

DeviceId Builder::add_socket(const SocketSpec& spec) {
    if (counters_[DeviceKind::socket] >= max_sockets_per_node) {
        throw DataError(
            fmt::format("more than {} sockets (CPU packages or NUMA domains) in one node", max_sockets_per_node));
    }
    Device socket;
    socket.kind = DeviceKind::socket;
    socket.node = node_;
    socket.name = next_name(DeviceKind::socket);
    socket.model = spec.cpu.model_name;
    socket.numa_node = spec.numa_node;
    socket.cpuset = spec.cpuset;
    socket.cores = spec.cores;
    const DeviceId id = topo_.add_device(socket);
    socket_cpus_[id] = spec.cpu;

    Device mem;
    mem.kind = DeviceKind::cpu_memory;
    mem.node = node_;
    mem.name = next_name(DeviceKind::cpu_memory);
    mem.parent = id;
    mem.numa_node = spec.numa_node;
    mem.memory_bytes = spec.memory_bytes;
    const DeviceId mem_id = topo_.add_device(mem);
    const auto value = defaults::memory();
    topo_.add_link(
        Link{0, LinkKind::memory, mem_id, id, value.bandwidth, value.latency_us, std::nullopt, value.source});
    return id;
}

DeviceId Builder::add_root_complex(DeviceId socket, std::optional<std::string> bus_id) {
    Device rc;
    rc.kind = DeviceKind::root_complex;
    rc.node = node_;
    rc.name = next_name(DeviceKind::root_complex);
    rc.parent = socket;
    rc.pci_bus_id = std::move(bus_id);
    return topo_.add_device(rc);  // its host link is added by finish(), once its root ports are known
}

Link Builder::pcie_link(DeviceId child, DeviceId parent, const LinkSpec& spec) const {
    defaults::Value value;
    std::optional<units::PcieLink> pcie;
    if (spec.pcie && spec.pcie->gen > 0) {
        value = defaults::pcie(*spec.pcie);
        pcie = spec.pcie;
        if (!spec.origin.empty()) value.source = spec.origin + ", " + value.source;
    } else if (spec.line_rate && *spec.line_rate > 0) {
        value = defaults::pcie_from_line_rate(*spec.line_rate, spec.origin.empty() ? "source" : spec.origin);
    } else {
        value = defaults::pcie_unknown();
    }
    return Link{0, LinkKind::pcie, child, parent, value.bandwidth, value.latency_us, pcie, value.source};
}

DeviceId Builder::add_switch(DeviceId parent, const PciSpec& pci, const LinkSpec& uplink) {
    return add_endpoint(DeviceKind::pcie_switch, parent, pci, uplink);
}

DeviceId Builder::add_endpoint(DeviceKind kind, DeviceId parent, const PciSpec& pci, const LinkSpec& link) {
    Device d;
    d.kind = kind;
    d.node = node_;
    d.name = next_name(kind);
    d.parent = parent;
    d.pci_bus_id = pci.bus_id;
    d.vendor_id = pci.vendor_id;
    d.device_id = pci.device_id;
    d.model = pci.model;
    d.uuid = pci.uuid;
    d.device_minor = pci.device_minor;
    d.interfaces = pci.interfaces;
    d.rdma = pci.rdma;
    d.port_bandwidth = pci.port_bandwidth;
    const DeviceId id = topo_.add_device(d);
    topo_.add_link(pcie_link(id, parent, link));
    return id;
}

void Builder::finish() {
    const auto sockets = topo_.devices_of(DeviceKind::socket, node_);
    // Root complexes: host link as wide as the root ports below them.
    for (DeviceId rc : topo_.devices_of(DeviceKind::root_complex, node_)) {
        if (topo_.uplink(rc)) continue;
        double sum = 0;
        for (const auto& l : topo_.links)
            if (l.b == rc && l.kind == LinkKind::pcie) sum += l.bandwidth;
        const auto value = defaults::host(sum);
        topo_.add_link(Link{0, LinkKind::host, rc, topo_.device(rc).parent, value.bandwidth, value.latency_us,
                            std::nullopt, value.source});
    }
    // Sockets: full mesh (2- and 4-socket servers are fully connected by UPI/xGMI).
    for (std::size_t i = 0; i < sockets.size(); ++i) {
        for (std::size_t j = i + 1; j < sockets.size(); ++j) {
            bool linked = false;
            for (const auto& l : topo_.links)
                if (l.kind == LinkKind::socket_interconnect &&
                    ((l.a == sockets[i] && l.b == sockets[j]) || (l.a == sockets[j] && l.b == sockets[i])))
                    linked = true;
            if (linked) continue;
            const auto it = socket_cpus_.find(sockets[i]);
            const auto value = defaults::socket_interconnect(it != socket_cpus_.end() ? it->second : defaults::Cpu{});
            topo_.add_link(Link{0, LinkKind::socket_interconnect, sockets[i], sockets[j], value.bandwidth,
                                value.latency_us, std::nullopt, value.source});
        }
    }
    // NUMA node of every device: that of its socket, unless the source said otherwise.
    for (auto& d : topo_.devices) {
        if (d.node != node_ || d.numa_node || d.kind == DeviceKind::socket) continue;
        DeviceId up = d.parent;
        while (up != no_device && topo_.devices[up].kind != DeviceKind::socket)
            up = topo_.devices[up].parent;
        if (up != no_device) d.numa_node = topo_.devices[up].numa_node;
    }
}

}  // namespace gpuops::topo
