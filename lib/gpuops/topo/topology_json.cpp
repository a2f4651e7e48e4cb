// Serialisation of the topology model to and from gpuops.topology documents.
#include "gpuops/topo/topology_json.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"

namespace gpuops::topo {
namespace {

using json_io::Json;
using json_io::View;

constexpr double bytes_per_gb = 1e9;

/// Nine significant digits are plenty for GB/s and µs and keep documents diffable; unlike a fixed number
/// of decimals they keep tiny values (1e-9 GB/s) from rounding to zero.
double tidy(double v) {
    if (v == 0 || !std::isfinite(v)) return v;
    const double scale = std::pow(10.0, 8 - static_cast<int>(std::floor(std::log10(std::abs(v)))));
    return std::round(v * scale) / scale;
}

Json device_json(const Device& d) {
    Json j;
    j["id"] = d.id;
    j["kind"] = to_string(d.kind);
    j["node"] = d.node;
    j["name"] = d.name;
    j["parent"] = d.parent == no_device ? Json(nullptr) : Json(d.parent);
    if (d.pci_bus_id) j["pci_bus_id"] = *d.pci_bus_id;
    if (d.vendor_id) j["vendor_id"] = hex_id(*d.vendor_id);
    if (d.device_id) j["device_id"] = hex_id(*d.device_id);
    if (!d.model.empty()) j["model"] = d.model;
    if (d.numa_node) j["numa_node"] = *d.numa_node;
    if (d.uuid) j["uuid"] = *d.uuid;
    if (d.device_minor) j["device_minor"] = *d.device_minor;
    if (d.cpuset) j["cpuset"] = *d.cpuset;
    if (d.cores) j["cores"] = *d.cores;
    if (!d.interfaces.empty()) j["interfaces"] = d.interfaces;
    if (d.kind == DeviceKind::nic) j["rdma"] = d.rdma;
    if (d.port_bandwidth) j["port_bandwidth_gbytes_per_s"] = tidy(*d.port_bandwidth / bytes_per_gb);
    if (d.memory_bytes) j["memory_bytes"] = *d.memory_bytes;
    return j;
}

Json link_json(const Link& l) {
    Json j;
    j["id"] = l.id;
    j["kind"] = to_string(l.kind);
    j["a"] = l.a;
    j["b"] = l.b;
    j["bandwidth_gbytes_per_s"] = tidy(l.bandwidth / bytes_per_gb);
    j["latency_us"] = tidy(l.latency_us);
    if (l.pcie) {
        j["pcie"] = {{"gen", l.pcie->gen}, {"width", l.pcie->width}, {"speed", units::format_pcie_link(*l.pcie)}};
    }
    j["source"] = l.source;
    return j;
}

std::optional<int> parse_hex_id(const View& v) {
    const std::string text = v.as_string();
    if (text.size() < 3 || text.size() > 6 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) {
        throw v.error(fmt::format("expected a hex id such as '0x10de', got {}", quote(text)));
    }
    std::size_t used = 0;
    int value = 0;
    try {
        value = std::stoi(text.substr(2), &used, 16);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size() - 2) throw v.error(fmt::format("expected a hex id such as '0x10de', got {}", quote(text)));
    return value;
}

Device device_from_json(const View& v, std::size_t index, std::size_t node_count) {
    Device d;
    d.id = static_cast<DeviceId>(v.at("id").as_int(static_cast<std::int64_t>(index), static_cast<std::int64_t>(index)));
    const View kind = v.at("kind");
    const auto k = device_kind_from_string(kind.as_string());
    if (!k) throw kind.error(fmt::format("unknown device kind {}", quote(kind.as_string())));
    d.kind = *k;
    d.node = static_cast<int>(v.at("node").as_int(0, static_cast<std::int64_t>(node_count) - 1));
    d.name = v.at("name").as_string();
    if (auto p = v.find("parent"))
        d.parent = static_cast<DeviceId>(p->as_int(0, std::numeric_limits<DeviceId>::max() - 1));
    if (auto b = v.find("pci_bus_id")) d.pci_bus_id = b->as_string();
    if (auto x = v.find("vendor_id")) d.vendor_id = parse_hex_id(*x);
    if (auto x = v.find("device_id")) d.device_id = parse_hex_id(*x);
    if (auto m = v.find("model")) d.model = m->as_string();
    if (auto n = v.find("numa_node")) d.numa_node = static_cast<int>(n->as_int(0, 1 << 20));
    d.uuid = v.string_or_null("uuid");
    if (auto m = v.find("device_minor")) d.device_minor = static_cast<int>(m->as_int(0, 255));
    d.cpuset = v.string_or_null("cpuset");
    d.cores = v.string_or_null("cores");
    if (auto list = v.find("interfaces"))
        for (const auto& item : list->items())
            d.interfaces.push_back(item.as_string());
    if (auto r = v.find("rdma")) d.rdma = r->as_bool();
    if (auto p = v.find("port_bandwidth_gbytes_per_s")) {
        const double gbs = p->as_number();
        if (!std::isfinite(gbs * bytes_per_gb) || gbs <= 0) throw p->error("expected a positive, finite bandwidth");
        d.port_bandwidth = gbs * bytes_per_gb;
    }
    if (auto m = v.find("memory_bytes"))
        d.memory_bytes = static_cast<std::uint64_t>(m->as_int(0, std::numeric_limits<std::int64_t>::max()));
    return d;
}

Link link_from_json(const View& v, std::size_t index, std::size_t device_count) {
    Link l;
    const auto max_device = static_cast<std::int64_t>(device_count) - 1;
    l.id = static_cast<LinkId>(v.at("id").as_int(static_cast<std::int64_t>(index), static_cast<std::int64_t>(index)));
    const View kind = v.at("kind");
    const auto k = link_kind_from_string(kind.as_string());
    if (!k) throw kind.error(fmt::format("unknown link kind {}", quote(kind.as_string())));
    l.kind = *k;
    l.a = static_cast<DeviceId>(v.at("a").as_int(0, max_device));
    l.b = static_cast<DeviceId>(v.at("b").as_int(0, max_device));
    if (l.a == l.b) throw v.at("b").error("a link must join two different devices");
    const View bw = v.at("bandwidth_gbytes_per_s");
    l.bandwidth = bw.as_number() * bytes_per_gb;
    if (!std::isfinite(l.bandwidth) || l.bandwidth <= 0) throw bw.error("expected a positive, finite bandwidth");
    const View lat = v.at("latency_us");
    l.latency_us = lat.as_number();
    if (l.latency_us < 0) throw lat.error("expected a non-negative latency");
    if (auto p = v.find("pcie")) {
        units::PcieLink pcie;
        pcie.gen = static_cast<int>(p->at("gen").as_int(1, 7));
        pcie.width = static_cast<int>(p->at("width").as_int(0, 32));
        pcie.gts = units::pcie_gts_for_gen(pcie.gen);
        l.pcie = pcie;
    }
    if (auto s = v.find("source")) l.source = s->as_string();
    return l;
}

}  // namespace

std::string hex_id(int id) { return fmt::format("0x{:04x}", id); }

Json to_json(const Topology& t, std::string_view tool) {
    Json doc = json_io::make_header(topology_schema, topology_schema_version, tool);
    doc["source"] = {{"kind", t.source.kind}, {"name", t.source.name}};
    doc["summary"] = {{"nodes", t.nodes.size()},
                      {"sockets", t.devices_of(DeviceKind::socket).size()},
                      {"gpus", t.devices_of(DeviceKind::gpu).size()},
                      {"nics", t.devices_of(DeviceKind::nic).size()},
                      {"pcie_switches", t.devices_of(DeviceKind::pcie_switch).size()},
                      {"root_complexes", t.devices_of(DeviceKind::root_complex).size()}};
    Json nodes = Json::array();
    for (std::size_t i = 0; i < t.nodes.size(); ++i)
        nodes.push_back({{"index", i}, {"hostname", t.nodes[i].hostname}});
    doc["nodes"] = nodes;
    if (t.fabric) {
        doc["fabric"] = {{"kind", t.fabric->kind},
                         {"port_bandwidth_gbytes_per_s", tidy(t.fabric->port_bandwidth / bytes_per_gb)}};
    } else {
        doc["fabric"] = nullptr;
    }
    Json devices = Json::array();
    for (const auto& d : t.devices)
        devices.push_back(device_json(d));
    doc["devices"] = devices;
    Json links = Json::array();
    for (const auto& l : t.links)
        links.push_back(link_json(l));
    doc["links"] = links;
    return doc;
}

Topology topology_from_json(const Json& doc) {
    json_io::check_header(doc, topology_schema, topology_schema_version);
    const View root(doc);
    Topology t;
    if (auto s = root.find("source")) {
        t.source.kind = s->string_or_null("kind").value_or("json");
        t.source.name = s->string_or_null("name").value_or("");
    }
    const View nodes = root.at("nodes");
    for (const auto& n : nodes.items())
        t.nodes.push_back(Node{n.at("hostname").as_string()});
    if (t.nodes.empty()) throw nodes.error("a topology needs at least one node");
    if (auto f = root.find("fabric")) {
        Fabric fabric;
        const View kind = f->at("kind");
        fabric.kind = kind.as_string();
        if (fabric.kind != "nonblocking" && fabric.kind != "rail" && fabric.kind != "rail-only") {
            throw kind.error(
                fmt::format("unknown fabric {} (expected nonblocking, rail or rail-only)", quote(fabric.kind)));
        }
        const View port = f->at("port_bandwidth_gbytes_per_s");
        fabric.port_bandwidth = port.as_number() * bytes_per_gb;
        if (!std::isfinite(fabric.port_bandwidth) || fabric.port_bandwidth < 0) {
            throw port.error("expected a non-negative, finite bandwidth (0: each NIC's own speed)");
        }
        t.fabric = fabric;
    }
    const auto devices = root.at("devices").items();
    for (std::size_t i = 0; i < devices.size(); ++i)
        t.devices.push_back(device_from_json(devices[i], i, t.nodes.size()));
    const auto links = root.at("links").items();
    for (std::size_t i = 0; i < links.size(); ++i)
        t.links.push_back(link_from_json(links[i], i, t.devices.size()));
    validate(t);
    return t;
}

void validate(const Topology& t) {
    const auto device_count = t.devices.size();
    std::set<std::string> hostnames;
    for (std::size_t n = 0; n < t.nodes.size(); ++n) {
        const std::string& host = t.nodes[n].hostname;
        const std::string where = fmt::format("/nodes/{}/hostname", n);
        if (std::any_of(host.begin(), host.end(),
                        [](char c) { return static_cast<unsigned char>(c) <= ' ' || c == 0x7f; })) {
            throw DataError(fmt::format("host name {} contains whitespace or control characters", quote(host)),
                            {{}, where, 0});
        }
        if (!host.empty() && !hostnames.insert(host).second) {
            throw DataError(fmt::format("host name {} appears twice", quote(host)), {{}, where, 0});
        }
    }
    std::set<std::pair<DeviceId, DeviceId>> joined;
    for (const auto& l : t.links) {
        if (l.a >= device_count || l.b >= device_count || l.a == l.b) {
            throw DataError("a link must join two different existing devices", {{}, fmt::format("/links/{}", l.id), 0});
        }
        if (!std::isfinite(l.bandwidth) || l.bandwidth <= 0 || !std::isfinite(l.latency_us) || l.latency_us < 0) {
            throw DataError("bandwidth must be positive and latency non-negative",
                            {{}, fmt::format("/links/{}", l.id), 0});
        }
        joined.emplace(l.a, l.b);
    }
    // First every reference, so the walks below never leave the device list.
    std::set<std::pair<int, std::string>> names;
    for (const auto& d : t.devices) {
        const std::string where = fmt::format("/devices/{}", d.id);
        if (d.node < 0 || static_cast<std::size_t>(d.node) >= t.nodes.size()) {
            throw DataError(fmt::format("node {} does not exist", d.node), {{}, where + "/node", 0});
        }
        if (!names.emplace(d.node, d.name).second) {
            throw DataError(fmt::format("duplicate device name {} in node {}", quote(d.name), d.node),
                            {{}, where + "/name", 0});
        }
        const bool root_kind = d.kind == DeviceKind::socket || d.kind == DeviceKind::network_switch;
        if (d.parent == no_device) {
            if (!root_kind)
                throw DataError(fmt::format("a {} needs a parent", to_string(d.kind)), {{}, where + "/parent", 0});
            continue;
        }
        if (root_kind)
            throw DataError(fmt::format("a {} has no parent", to_string(d.kind)), {{}, where + "/parent", 0});
        if (d.parent >= device_count) {
            throw DataError(fmt::format("parent {} does not exist", d.parent), {{}, where + "/parent", 0});
        }
        const Device& parent = t.devices[d.parent];
        if (parent.kind != DeviceKind::socket && parent.kind != DeviceKind::root_complex &&
            parent.kind != DeviceKind::pcie_switch) {
            throw DataError(fmt::format("a {} cannot be the parent of a {}", to_string(parent.kind), to_string(d.kind)),
                            {{}, where + "/parent", 0});
        }
        if (parent.node != d.node) throw DataError("parent is in another node", {{}, where + "/parent", 0});
        if (!joined.contains({d.id, d.parent})) {
            throw DataError(fmt::format("no link joins {} to its parent", quote(d.name)), {{}, where + "/parent", 0});
        }
    }
    // Then the shape: no cycle, bounded depth (routing and the text view walk these chains). Each device is
    // resolved once, so this is linear in the number of devices.
    std::vector<int> depth(device_count, -1);  // -1 unknown, -2 on the current walk
    std::vector<DeviceId> chain;
    for (const auto& d : t.devices) {
        chain.clear();
        DeviceId x = d.id;
        while (x != no_device && depth[x] == -1) {
            depth[x] = -2;
            chain.push_back(x);
            x = t.devices[x].parent;
        }
        if (x != no_device && depth[x] == -2) {
            throw DataError("the parent chain forms a cycle", {{}, fmt::format("/devices/{}/parent", d.id), 0});
        }
        int level = x == no_device ? -1 : depth[x];
        for (std::size_t i = chain.size(); i-- > 0;) {  // from the known end down
            const DeviceId c = chain[i];
            depth[c] = ++level;
            if (level > max_tree_depth) {
                throw DataError(fmt::format("the device tree is deeper than {} levels", max_tree_depth),
                                {{}, fmt::format("/devices/{}/parent", c), 0});
            }
        }
    }
}

}  // namespace gpuops::topo
