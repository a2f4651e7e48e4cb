// NCCL topology XML → Topology: <cpu> becomes a socket, nested <pci> become switches, GPUs, NICs and other devices.
#include "gpuops/topo/import_nccl.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <tinyxml2.h>

#include "gpuops/core/cpulist.hpp"
#include "gpuops/core/error.hpp"
#include "gpuops/core/json_io.hpp"
#include "gpuops/core/text.hpp"
#include "gpuops/core/units.hpp"
#include "gpuops/topo/builder.hpp"
#include "gpuops/topo/xml_document.hpp"

namespace gpuops::topo {
namespace {

using tinyxml2::XMLElement;

constexpr std::string_view link_origin = "NCCL XML";
constexpr int nvidia_vendor = 0x10de;
constexpr int amazon_vendor = 0x1d0f;
constexpr int mellanox_vendor = 0x15b3;

struct KnownModel {
    int device;
    std::string_view name;
};

// NVIDIA GPUs common in the clusters NCCL topology files describe, named as nvidia-smi names them.
constexpr std::array<KnownModel, 12> nvidia_gpu_models{{
    {0x1db1, "Tesla V100-SXM2-16GB"},
    {0x1db5, "Tesla V100-SXM2-32GB"},
    {0x1db8, "Tesla V100-SXM3-32GB"},
    {0x20b0, "NVIDIA A100-SXM4-40GB"},
    {0x20b2, "NVIDIA A100-SXM4-80GB"},
    {0x20b5, "NVIDIA A100 80GB PCIe"},
    {0x20f1, "NVIDIA A100-PCIE-40GB"},
    {0x2237, "NVIDIA A10G"},
    {0x2330, "NVIDIA H100 80GB HBM3"},
    {0x2331, "NVIDIA H100 PCIe"},
    {0x26b5, "NVIDIA L40"},
    {0x26b9, "NVIDIA L40S"},
}};

// Elastic Fabric Adapter generations 1-3.
constexpr std::array<int, 3> efa_devices{0xefa0, 0xefa1, 0xefa2};

using text::trim;

std::optional<long long> parse_integer(std::string_view text, int base) {
    long long value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

// Linux cpumask text (what NCCL copies from /sys/devices/system/node/nodeN/cpumap): 32-bit hex groups,
// most significant first. "000000ff,ffff0000,00ffffff" -> "0-23,48-71". nullopt when malformed.
std::optional<std::string> cpulist_from_mask(std::string_view mask) {
    std::vector<std::uint32_t> groups;  // least significant first once reversed
    std::size_t start = 0;
    while (start <= mask.size()) {
        const auto comma = mask.find(',', start);
        const auto group =
            trim(mask.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (group.empty() || group.size() > 8) return std::nullopt;
        const auto value = parse_integer(group, 16);
        if (!value || *value < 0) return std::nullopt;
        groups.push_back(static_cast<std::uint32_t>(*value));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    std::reverse(groups.begin(), groups.end());

    std::vector<int> cpus;
    const std::size_t bits = groups.size() * 32;
    for (std::size_t bit = 0; bit < bits; ++bit) {
        if ((groups[bit / 32] >> (bit % 32)) & 1U) cpus.push_back(static_cast<int>(bit));
    }
    return cpulist::format(cpus);
}

// NCCL writes familyid as family + (extended family << 4) (src/graph/xml.cc), so AMD family 19h appears as 175
// where /proc/cpuinfo and hand-written files say 25. Decode that form; x86 has no family with low nibble 0xf above 0xf.
std::optional<int> cpu_family(std::optional<int> familyid) {
    if (familyid && *familyid > 0xf && (*familyid & 0xf) == 0xf) return 0xf + (*familyid >> 4);
    return familyid;
}

// 0xffff (no device) and 0x0000 stand for "unknown" in hand-written files; they are not ids.
std::optional<int> known_id(std::optional<int> id) {
    if (id && (*id == 0xffff || *id == 0)) return std::nullopt;
    return id;
}

// NCCL and hand-written files give switches that do not exist on the VM bus ids in domain ffff (ffff:ff:01.0).
bool is_fake_bus_id(std::string_view normalized) {
    const auto domain = normalized.substr(0, normalized.find(':'));
    return std::all_of(domain.begin(), domain.end(), [](char c) { return c == 'f'; });
}

std::optional<units::PcieLink> try_parse_link(const std::string& text) {
    try {
        return units::parse_pcie_link(text);
    } catch (const DataError&) {
        return std::nullopt;
    }
}

/// Notes that may repeat once per element become one warning per distinct text, with the first line.
class Notes {
public:
    void add(std::string text, int line) {
        const auto [it, inserted] = index_.try_emplace(text, entries_.size());
        if (inserted) {
            entries_.push_back({std::move(text), line, 1});
        } else {
            ++entries_[it->second].count;
        }
    }

    void append_to(std::string_view file, std::vector<std::string>& out) const {
        for (const auto& e : entries_) {
            std::string message = fmt::format("{} line {}: {}", gpuops::quote(file), e.line, e.text);
            if (e.count > 1) message += fmt::format(" (and {} more like it)", e.count - 1);
            out.push_back(std::move(message));
        }
    }

private:
    struct Entry {
        std::string text;
        int line = 0;
        int count = 0;
    };
    std::vector<Entry> entries_;
    std::map<std::string, std::size_t> index_;
};

class Importer {
public:
    Importer(std::string file, Topology& topology, Builder& builder)
        : file_(std::move(file)), topo_(topology), builder_(builder) {}

    void import_system(const XMLElement& system, std::vector<std::string>& warnings) {
        const char* version = system.Attribute("version");
        if (!version) {
            warnings.push_back(fmt::format("{} line {}: <system> has no version attribute; read as version 1",
                                           gpuops::quote(file_), system.GetLineNum()));
        } else if (trim(version) != "1") {
            warnings.push_back(fmt::format("{} line {}: NCCL topology version {} is not supported; read as version 1",
                                           gpuops::quote(file_), system.GetLineNum(), gpuops::quote(version)));
        }
        for (const XMLElement* child = system.FirstChildElement(); child; child = child->NextSiblingElement()) {
            const std::string_view name = child->Name();
            if (name == "cpu") {
                import_cpu(*child);
            } else if (name == "pci" || name == "nic") {
                ignore(*child, "outside any <cpu>");
            } else {
                ignore(*child, "unknown element");
            }
        }
    }

    /// Warnings that need the whole file: repeated notes, and the absence of GPUs.
    void finish(std::vector<std::string>& warnings) const {
        notes_.append_to(file_, warnings);
        if (!topo_.devices_of(DeviceKind::gpu).empty()) return;
        std::string message = fmt::format("no GPU identified in {}", gpuops::quote(file_));
        if (unclassified_ > 0)
            message += fmt::format(" (the file lists {} PCI device{} without a class)", unclassified_,
                                   unclassified_ == 1 ? "" : "s");
        warnings.push_back(std::move(message));
    }

private:
    [[noreturn]] void fail(const XMLElement& at, std::string reason) const {
        throw DataError(std::move(reason), {file_, "", at.GetLineNum()});
    }

    void ignore(const XMLElement& element, std::string_view why) {
        notes_.add(fmt::format("ignored <{}>: {}", element.Name(), why), element.GetLineNum());
    }

    /// The attribute's trimmed text; nullopt when absent.
    static std::optional<std::string_view> text_attr(const XMLElement& element, const char* name) {
        const char* value = element.Attribute(name);
        if (!value) return std::nullopt;
        return trim(value);
    }

    /// A decimal integer attribute; absent or empty is nullopt, anything else not an int is a DataError.
    std::optional<int> int_attr(const XMLElement& element, const char* name) const {
        const auto text = text_attr(element, name);
        if (!text || text->empty()) return std::nullopt;
        const auto value = parse_integer(*text, 10);
        if (!value || *value < std::numeric_limits<int>::min() || *value > std::numeric_limits<int>::max())
            fail(element, fmt::format("malformed {} {} (expected an integer)", name, gpuops::quote(*text)));
        return static_cast<int>(*value);
    }

    /// A hex attribute as NCCL writes them ("0x10de", "0x030200"); the 0x prefix is optional.
    std::optional<int> hex_attr(const XMLElement& element, const char* name) const {
        const auto text = text_attr(element, name);
        if (!text || text->empty()) return std::nullopt;
        std::string_view digits = *text;
        if (digits.starts_with("0x") || digits.starts_with("0X")) digits.remove_prefix(2);
        const auto value = digits.size() <= 8 ? parse_integer(digits, 16) : std::nullopt;
        if (!value || *value < 0 || *value > std::numeric_limits<int>::max())
            fail(element,
                 fmt::format("malformed {} {} (expected a hex number such as 0x10de)", name, gpuops::quote(*text)));
        return static_cast<int>(*value);
    }

    std::optional<double> number_attr(const XMLElement& element, const char* name) const {
        const auto text = text_attr(element, name);
        if (!text || text->empty()) return std::nullopt;
        double value = 0;
        const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
        if (ec != std::errc{} || end != text->data() + text->size() || !std::isfinite(value))
            fail(element, fmt::format("malformed {} {} (expected a number)", name, gpuops::quote(*text)));
        return value;
    }

    void import_cpu(const XMLElement& cpu) {
        SocketSpec spec;
        if (const auto numa = int_attr(cpu, "numaid"); numa && *numa >= 0) spec.numa_node = numa;  // -1: unknown
        if (const auto mask = text_attr(cpu, "affinity"); mask && !mask->empty()) {
            auto list = cpulist_from_mask(*mask);
            if (!list)
                fail(cpu, fmt::format("malformed affinity {} (expected comma-separated 32-bit hex groups such as "
                                      "000000ff,ffff0000)",
                                      gpuops::quote(*mask)));
            if (!list->empty()) spec.cpuset = std::move(*list);
        }
        spec.cpu.vendor = std::string(text_attr(cpu, "vendor").value_or(""));
        spec.cpu.family = cpu_family(int_attr(cpu, "familyid"));
        spec.cpu.model = int_attr(cpu, "modelid");
        const DeviceId socket = builder_.add_socket(spec);

        std::optional<DeviceId> rc;
        const auto root_complex = [&] {
            if (!rc) rc = builder_.add_root_complex(socket);
            return *rc;
        };
        for (const XMLElement* child = cpu.FirstChildElement(); child; child = child->NextSiblingElement()) {
            const std::string_view name = child->Name();
            if (name == "pci") {
                import_pci(*child, root_complex());
            } else if (name == "nic") {
                import_bare_nic(*child, root_complex());
            } else {
                ignore(*child, "unknown element");
            }
        }
    }

    /// The link from a <pci> to its parent. An empty or unrecognised speed leaves it unknown (Gen4 x16 assumed).
    LinkSpec link_of(const XMLElement& pci) {
        int width = 0;
        if (const auto text = text_attr(pci, "link_width"); text && !text->empty()) {
            const auto value = parse_integer(*text, 10);
            if (!value || *value < 0 || *value > 64)
                fail(pci,
                     fmt::format("malformed link_width {} (expected a lane count such as 16)", gpuops::quote(*text)));
            width = static_cast<int>(*value);
        }
        const std::string speed(text_attr(pci, "link_speed").value_or(""));
        if (speed.empty()) return {};
        if (width > 0) {
            if (auto link = try_parse_link(fmt::format("{} x{}", speed, width)))
                return LinkSpec{.pcie = link, .line_rate = std::nullopt, .origin = std::string(link_origin)};
        }
        if (auto link = try_parse_link(speed)) {
            if (width > 0) notes_.add(fmt::format("unsupported link_width {}; width unknown", width), pci.GetLineNum());
            return LinkSpec{.pcie = link, .line_rate = std::nullopt, .origin = std::string(link_origin)};
        }
        notes_.add(fmt::format("unrecognised link_speed {}; PCIe Gen4 x16 assumed", gpuops::quote(speed)),
                   pci.GetLineNum());
        return {};
    }

    void import_pci(const XMLElement& pci, DeviceId parent) {
        PciSpec spec;
        bool fake = false;
        if (const auto text = text_attr(pci, "busid"); text && !text->empty()) {
            auto bus = normalize_bus_id(*text);
            if (!bus) fail(pci, fmt::format("malformed PCI bus id {}", gpuops::quote(*text)));
            fake = is_fake_bus_id(*bus);
            if (!fake) {
                const auto [seen, inserted] = bus_lines_.try_emplace(*bus, pci.GetLineNum());
                if (!inserted)
                    fail(pci,
                         fmt::format("duplicate PCI bus id {} (first at line {})", gpuops::quote(*bus), seen->second));
            }
            spec.bus_id = std::move(bus);
        }
        const auto pci_class = hex_attr(pci, "class");
        spec.vendor_id = known_id(hex_attr(pci, "vendor"));
        spec.device_id = known_id(hex_attr(pci, "device"));
        if (fake) {  // whatever ids a made-up switch carries are made up too
            spec.vendor_id.reset();
            spec.device_id.reset();
        }
        const LinkSpec link = link_of(pci);

        const XMLElement* gpu = pci.FirstChildElement("gpu");
        const bool has_nic = pci.FirstChildElement("nic") != nullptr;
        const auto class_is = [&](int value, int shift) { return pci_class && (*pci_class >> shift) == value; };

        if (pci.FirstChildElement("pci") || class_is(0x0604, 8)) {
            import_switch(pci, parent, spec, link);
            return;
        }
        DeviceKind kind = DeviceKind::pci_device;
        if (gpu || class_is(0x03, 16)) {
            kind = DeviceKind::gpu;
            spec.model = gpu_model(spec, gpu);
        } else if (has_nic || class_is(0x02, 16) || class_is(0x0c06, 8)) {
            kind = DeviceKind::nic;
            spec.rdma = true;  // NCCL lists the network devices its net transport (IB verbs, EFA) drives
            spec.model = nic_model(spec);
        } else if (!pci_class) {
            ++unclassified_;
        }

        for (const XMLElement* child = pci.FirstChildElement(); child; child = child->NextSiblingElement()) {
            const std::string_view name = child->Name();
            if (name == "gpu" && kind == DeviceKind::gpu) {
                if (child == gpu) {
                    read_gpu_children(*child);
                } else {
                    ignore(*child, "a second <gpu> in one <pci>");
                }
            } else if (name == "nic" && kind == DeviceKind::nic) {
                read_nets(*child, spec);
            } else if (name == "gpu" || name == "nic") {
                ignore(*child, fmt::format("inside the <pci> of a {}", to_string(kind)));
            } else {
                ignore(*child, "unknown element");
            }
        }
        builder_.add_endpoint(kind, parent, spec, link);
    }

    void import_switch(const XMLElement& pci, DeviceId parent, const PciSpec& spec, const LinkSpec& link) {
        const DeviceId sw = builder_.add_switch(parent, spec, link);
        for (const XMLElement* child = pci.FirstChildElement(); child; child = child->NextSiblingElement()) {
            const std::string_view name = child->Name();
            if (name == "pci") {
                import_pci(*child, sw);
            } else if (name == "nic") {
                import_bare_nic(*child, sw);
            } else if (name == "gpu") {
                ignore(*child, "inside the <pci> of a PCIe switch");
            } else if (name == "pcilink") {
                ignore(*child, "PCIe switch peer links are not imported");
            } else {
                ignore(*child, "unknown element");
            }
        }
    }

    /// A <nic> with no <pci> of its own: NCCL attaches net devices without a PCI path (virtual interfaces of its
    /// socket transport) straight to a CPU. RDMA only where a <net> says GPUDirect RDMA works.
    void import_bare_nic(const XMLElement& nic, DeviceId parent) {
        PciSpec spec;
        spec.rdma = read_nets(nic, spec);
        builder_.add_endpoint(DeviceKind::nic, parent, spec, LinkSpec{});
    }

    /// Interfaces and port speed from the <net> children of a <nic>; true when any says gdr="1".
    bool read_nets(const XMLElement& nic, PciSpec& spec) {
        bool gdr = false;
        for (const XMLElement* net = nic.FirstChildElement(); net; net = net->NextSiblingElement()) {
            if (std::string_view(net->Name()) != "net") {
                ignore(*net, "unknown element");
                continue;
            }
            if (const auto name = text_attr(*net, "name"); name && !name->empty()) spec.interfaces.emplace_back(*name);
            if (const auto mbps = number_attr(*net, "speed"); mbps && *mbps > 0)  // Mb/s; -1 when the OS did not know
                spec.port_bandwidth = std::max(spec.port_bandwidth.value_or(0), *mbps * 1e6 / 8);
            gdr = gdr || int_attr(*net, "gdr") == 1;
        }
        return gdr;
    }

    void read_gpu_children(const XMLElement& gpu) {
        for (const XMLElement* child = gpu.FirstChildElement(); child; child = child->NextSiblingElement()) {
            const std::string_view name = child->Name();
            if (name == "nvlink") {
                ignore(*child, "NVLink connections are not imported");
            } else if (name == "c2c") {
                ignore(*child, "C2C links are not imported");
            } else {
                ignore(*child, "unknown element");
            }
        }
    }

    std::string gpu_model(const PciSpec& spec, const XMLElement* gpu) const {
        const bool nvidia_or_unknown = !spec.vendor_id || *spec.vendor_id == nvidia_vendor;
        if (spec.device_id && nvidia_or_unknown) {
            for (const auto& known : nvidia_gpu_models)
                if (known.device == *spec.device_id) return std::string(known.name);
        }
        if (gpu && nvidia_or_unknown) {
            if (const auto sm = int_attr(*gpu, "sm"); sm && *sm > 0) return fmt::format("NVIDIA GPU (sm_{})", *sm);
        }
        return {};
    }

    static std::string nic_model(const PciSpec& spec) {
        if (spec.vendor_id == amazon_vendor && spec.device_id &&
            std::find(efa_devices.begin(), efa_devices.end(), *spec.device_id) != efa_devices.end())
            return "Amazon EFA";
        if (spec.vendor_id == mellanox_vendor) return "Mellanox/NVIDIA ConnectX";
        return {};
    }

    std::string file_;
    Topology& topo_;
    Builder& builder_;
    Notes notes_;
    std::map<std::string, int> bus_lines_;  ///< real bus id -> line of its <pci>
    int unclassified_ = 0;                  ///< leaf <pci> without a class
};

}  // namespace

Topology import_nccl_xml(std::string_view path, std::vector<std::string>& warnings) {
    const std::string text = json_io::read_text(path);
    return import_nccl_xml_text(text, json_io::display_name(path), warnings);
}

Topology import_nccl_xml_text(std::string_view text, std::string_view source_name, std::vector<std::string>& warnings) {
    const std::string file(source_name);
    tinyxml2::XMLDocument doc;
    parse_xml(doc, text, file);
    const XMLElement* root = doc.RootElement();
    if (!root) throw DataError("not an NCCL topology file (no root element)", {file, "", 0});
    const std::string_view root_name = root->Name();
    if (root_name != "system") {
        std::string reason = fmt::format("not an NCCL topology file (root element is {})", gpuops::quote(root_name));
        if (root_name == "topology") reason += "; use --xml for hwloc XML";
        throw DataError(std::move(reason), {file, "", root->GetLineNum()});
    }

    Topology topo;
    topo.nodes = {Node{""}};
    topo.source = {"nccl-xml", file};
    Builder builder(topo, 0);
    Importer importer(file, topo, builder);
    importer.import_system(*root, warnings);
    builder.finish();
    importer.finish(warnings);
    return topo;
}

}  // namespace gpuops::topo
