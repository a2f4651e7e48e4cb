// Turns a preset spec (sockets × root complexes × nested PCIe devices, with counts) into a Topology.
#include "gpuops/topo/presets.hpp"

#include <fmt/format.h>

#include "gpuops/core/cpulist.hpp"
#include "gpuops/core/embedded.hpp"
#include "gpuops/core/error.hpp"
#include "gpuops/core/units.hpp"
#include "gpuops/topo/builder.hpp"

namespace gpuops::topo {
namespace {

using json_io::View;

constexpr int max_count = 1024;  // per spec entry; a typo must not build a million devices

int count_of(const View& v) {
    if (auto c = v.find("count")) return static_cast<int>(c->as_int(1, max_count));
    return 1;
}

std::optional<int> hex_field(const View& v, std::string_view key) {
    auto f = v.find(key);
    if (!f) return std::nullopt;
    const std::string text = f->as_string();
    try {
        std::size_t used = 0;
        const int value = std::stoi(text, &used, 16);
        if (used == text.size() && value >= 0 && value <= 0xffff) return value;
    } catch (const std::exception&) {
    }
    throw f->error(fmt::format("expected a hex id such as '0x10de', got {}", quote(text)));
}

/// Sequential synthetic bus numbers, so every device of a preset has a plausible, unique PCI address.
struct BusCounter {
    int next = 0x10;
    std::string take(const View& where) {
        if (next > 0xff) throw where.error("too many PCIe devices for one PCI domain (at most 240)");
        return fmt::format("0000:{:02x}:00.0", next++);
    }
};

void add_devices(Builder& b, DeviceId parent, const View& list, BusCounter& bus) {
    for (const auto& item : list.items()) {
        const View kind_v = item.at("kind");
        const auto kind = device_kind_from_string(kind_v.as_string());
        if (!kind || (*kind != DeviceKind::pcie_switch && *kind != DeviceKind::gpu && *kind != DeviceKind::nic &&
                      *kind != DeviceKind::pci_device)) {
            throw kind_v.error(
                fmt::format("expected pcie_switch, gpu, nic or pci_device, got {}", quote(kind_v.as_string())));
        }
        LinkSpec link;
        link.origin = "preset";
        if (auto l = item.find("link")) {
            try {
                link.pcie = units::parse_pcie_link(l->as_string());
            } catch (const DataError& e) {
                throw l->error(e.reason());
            }
        }
        PciSpec pci;
        pci.vendor_id = hex_field(item, "vendor_id");
        pci.device_id = hex_field(item, "device_id");
        pci.model = item.string_or_null("model").value_or("");
        if (auto r = item.find("rdma")) pci.rdma = r->as_bool();
        if (auto s = item.find("port_speed")) {
            try {
                pci.port_bandwidth = units::parse_bandwidth(s->as_string());
            } catch (const DataError& e) {
                throw s->error(e.reason());
            }
        }
        const int n = count_of(item);
        for (int i = 0; i < n; ++i) {
            pci.bus_id = bus.take(item);
            const DeviceId id = *kind == DeviceKind::pcie_switch ? b.add_switch(parent, pci, link)
                                                                 : b.add_endpoint(*kind, parent, pci, link);
            if (auto children = item.find("devices")) {
                if (*kind != DeviceKind::pcie_switch)
                    throw children->error("only a pcie_switch can have devices below it");
                add_devices(b, id, *children, bus);
            }
        }
    }
}

}  // namespace

Topology build_from_spec(const json_io::Json& doc, std::string_view source_name) {
    const View spec(doc);
    Topology t;
    t.source = {"preset", spec.string_or_null("name").value_or(std::string(source_name))};
    t.nodes.push_back(Node{spec.string_or_null("hostname").value_or("")});  // name it with --hosts
    Builder b(t, 0);

    const View sockets = spec.at("sockets");
    const int socket_count = count_of(sockets);
    if (socket_count > max_sockets_per_node) {
        throw sockets.at("count").error(fmt::format("at most {} sockets per node", max_sockets_per_node));
    }
    const View cpu_v = sockets.at("cpu");
    defaults::Cpu cpu;
    cpu.vendor = cpu_v.string_or_null("vendor").value_or("");
    if (auto f = cpu_v.int_or_null("family")) cpu.family = static_cast<int>(*f);
    if (auto m = cpu_v.int_or_null("model")) cpu.model = static_cast<int>(*m);
    cpu.model_name = cpu_v.string_or_null("model_name").value_or("");
    const int cores = static_cast<int>(sockets.at("cores").as_int(1, 4096));
    const int threads =
        sockets.find("threads_per_core") ? static_cast<int>(sockets.at("threads_per_core").as_int(1, 8)) : 1;
    std::optional<std::uint64_t> memory;
    if (auto m = sockets.find("memory")) {
        try {
            memory = units::parse_size(m->as_string());
        } catch (const DataError& e) {
            throw m->error(e.reason());
        }
    }

    BusCounter bus;
    for (int s = 0; s < socket_count; ++s) {
        SocketSpec ss;
        ss.cpu = cpu;
        ss.numa_node = s;
        ss.memory_bytes = memory;
        // Linux numbers the first thread of every core first, then the siblings: socket s owns
        // cores [s·C, (s+1)·C) and their hyperthreads at an offset of (sockets·C).
        std::vector<int> core_ids;
        std::vector<int> cpus;
        for (int c = 0; c < cores; ++c) {
            core_ids.push_back(s * cores + c);
            for (int t_index = 0; t_index < threads; ++t_index)
                cpus.push_back(t_index * socket_count * cores + s * cores + c);
        }
        ss.cores = cpulist::format(core_ids);
        ss.cpuset = cpulist::format(cpus);
        const DeviceId socket = b.add_socket(ss);
        for (const auto& rc_v : sockets.at("root_complexes").items()) {
            const int rc_count = count_of(rc_v);
            for (int r = 0; r < rc_count; ++r) {
                const DeviceId rc = b.add_root_complex(socket, bus.take(rc_v));
                add_devices(b, rc, rc_v.at("devices"), bus);
            }
        }
    }
    b.finish();
    return t;
}

std::vector<PresetInfo> list_presets() {
    std::vector<PresetInfo> out;
    for (const auto& file : embedded::presets()) {
        const auto doc = json_io::parse_document(file.text, file.name);
        PresetInfo info;
        info.name = doc.value("name", std::string(file.name));
        info.description = doc.value("description", "");
        if (doc.contains("sources"))
            for (const auto& s : doc["sources"])
                info.sources.push_back(s.get<std::string>());
        out.push_back(std::move(info));
    }
    return out;
}

std::string render_preset_list(std::string_view format, bool verbose, bool compact, std::string_view tool) {
    const auto presets = list_presets();
    if (format == "json") {
        auto doc = json_io::make_header("gpuops.preset_list", 1, tool);
        auto list = json_io::Json::array();
        for (const auto& p : presets)
            list.push_back({{"name", p.name}, {"description", p.description}, {"sources", p.sources}});
        doc["presets"] = list;
        return json_io::dump(doc, !compact);
    }
    if (format != "text") throw UsageError(fmt::format("--list-presets prints text or json, not {}", quote(format)));
    std::string out;
    for (const auto& p : presets) {
        out += fmt::format("{:<20} {}\n", p.name, p.description);
        if (verbose)
            for (const auto& s : p.sources)
                out += fmt::format("{:<20}   - {}\n", "", s);
    }
    return out;
}

Topology build_preset(std::string_view name) {
    std::vector<std::string> known;
    for (const auto& file : embedded::presets()) {
        if (file.name == name) return build_from_spec(json_io::parse_document(file.text, file.name), name);
        known.emplace_back(file.name);
    }
    throw UsageError(fmt::format("unknown preset {} (known: {})", quote(name), fmt::join(known, ", ")));
}

}  // namespace gpuops::topo
