// hwloc to the gpuops model: packages become sockets, host bridges root complexes, port bridges collapse into switches.
#include "gpuops/topo/import_hwloc.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <fstream>
#include <map>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <unistd.h>

#include "gpuops/core/error.hpp"
#include "gpuops/core/json_io.hpp"
#include "gpuops/core/text.hpp"
#include "gpuops/topo/builder.hpp"
#include "gpuops/topo/hwloc_handle.hpp"
#include "gpuops/topo/hwloc_xml_check.hpp"
#include "gpuops/topo/nvidia_proc.hpp"
#include "gpuops/topo/sysfs_pci.hpp"

namespace gpuops::topo {
namespace {

// ---- hwloc object helpers -------------------------------------------------------------------------------------

using PciAttr = hwloc_obj_attr_u::hwloc_pcidev_attr_s;

std::string info(hwloc_obj_t obj, const char* name) {
    const char* value = hwloc_obj_get_info_by_name(obj, name);
    return value != nullptr ? std::string(value) : std::string();
}

bool is_host_bridge(hwloc_obj_t obj) {
    return obj->type == HWLOC_OBJ_BRIDGE && obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
}

/// The PCI function of a device or of a PCI-to-PCI bridge; null for anything else.
const PciAttr* pci_of(hwloc_obj_t obj) {
    if (obj->type == HWLOC_OBJ_PCI_DEVICE) return &obj->attr->pcidev;
    if (obj->type == HWLOC_OBJ_BRIDGE && obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI)
        return &obj->attr->bridge.upstream.pci;
    return nullptr;
}

std::string bus_id_of(const PciAttr& pci) {
    return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", static_cast<unsigned>(pci.domain), static_cast<unsigned>(pci.bus),
                       static_cast<unsigned>(pci.dev), static_cast<unsigned>(pci.func));
}

std::string host_bridge_range(hwloc_obj_t obj) {
    const auto& down = obj->attr->bridge.downstream.pci;
    return fmt::format("{:04x}:[{:02x}-{:02x}]", static_cast<unsigned>(down.domain),
                       static_cast<unsigned>(down.secondary_bus), static_cast<unsigned>(down.subordinate_bus));
}

using BusKey = std::tuple<unsigned, unsigned, unsigned, unsigned>;

/// Sort key in PCI address order, so devices are numbered in bus order (as nvidia-smi numbers GPUs).
BusKey bus_order(hwloc_obj_t obj) {
    if (is_host_bridge(obj)) {
        const auto& down = obj->attr->bridge.downstream.pci;
        return {down.domain, down.secondary_bus, 0, 0};
    }
    if (const auto* pci = pci_of(obj)) return {pci->domain, pci->bus, pci->dev, pci->func};
    return {UINT_MAX, UINT_MAX, UINT_MAX, UINT_MAX};
}

void sort_by_bus(std::vector<hwloc_obj_t>& objects) {
    std::stable_sort(objects.begin(), objects.end(),
                     [](hwloc_obj_t a, hwloc_obj_t b) { return bus_order(a) < bus_order(b); });
}

std::vector<hwloc_obj_t> io_children(hwloc_obj_t parent) {
    std::vector<hwloc_obj_t> children;
    for (hwloc_obj_t child = parent->io_first_child; child != nullptr; child = child->next_sibling)
        children.push_back(child);
    sort_by_bus(children);
    return children;
}

int bridge_children(hwloc_obj_t obj) {
    int count = 0;
    for (hwloc_obj_t child = obj->io_first_child; child != nullptr; child = child->next_sibling)
        if (child->type == HWLOC_OBJ_BRIDGE) ++count;
    return count;
}

/// The NUMA node of `numas` where the cores' DRAM is: the first with CPUs, since CPU-less ones (HBM, CXL, GPU memory)
/// are not; else the first. `numas` must not be empty.
hwloc_obj_t dram_numa(const std::vector<hwloc_obj_t>& numas) {
    const auto with_cpus = std::find_if(numas.begin(), numas.end(), [](hwloc_obj_t numa) {
        return numa->cpuset != nullptr && !hwloc_bitmap_iszero(numa->cpuset);
    });
    return with_cpus != numas.end() ? *with_cpus : numas.front();
}

hwloc_obj_t package_above(hwloc_obj_t obj) {
    for (hwloc_obj_t up = obj; up != nullptr; up = up->parent)
        if (up->type == HWLOC_OBJ_PACKAGE) return up;
    return nullptr;
}

/// What the OS devices below a PCI function say about it.
struct OsDevices {
    std::vector<std::string> names;  ///< RDMA devices first, then the rest, each in hwloc's order
    bool compute = false;            ///< a CUDA, NVML, OpenCL, ROCm SMI or Level Zero device
    bool openfabrics = false;        ///< an RDMA device (mlx5_0, rdmap*, hfi1_0)
    bool network = false;            ///< a network interface (eth0, ib0)
    std::string uuid;
    std::string gpu_model;
};

bool is_compute_name(std::string_view name) {
    // DRM card0/renderD128 also are GPU OS devices, but BMC graphics have them too.
    for (std::string_view prefix : {"cuda", "nvml", "opencl", "rsmi", "ze"}) {
        if (name.size() > prefix.size() && name.starts_with(prefix) && name[prefix.size()] >= '0' &&
            name[prefix.size()] <= '9')
            return true;
    }
    return false;
}

OsDevices os_devices_of(hwloc_obj_t pci) {
    OsDevices out;
    // nvidia-smi names a NIC by its RDMA device (mlx5_0), and the first name is the one views show.
    std::vector<std::string> others;
    for (hwloc_obj_t child = pci->io_first_child; child != nullptr; child = child->next_sibling) {
        if (child->type != HWLOC_OBJ_OS_DEVICE) continue;
        const std::string name = child->name != nullptr ? child->name : "";
        if (!name.empty())
            (child->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS ? out.names : others).push_back(name);
        switch (child->attr->osdev.type) {
            case HWLOC_OBJ_OSDEV_GPU:
            case HWLOC_OBJ_OSDEV_COPROC: out.compute = out.compute || is_compute_name(name); break;
            case HWLOC_OBJ_OSDEV_OPENFABRICS: out.openfabrics = true; break;
            case HWLOC_OBJ_OSDEV_NETWORK: out.network = true; break;
            default: break;
        }
        if (out.uuid.empty()) out.uuid = info(child, "NVIDIAUUID");
        if (out.gpu_model.empty()) out.gpu_model = info(child, "GPUModel");
    }
    out.names.insert(out.names.end(), others.begin(), others.end());
    return out;
}

constexpr unsigned vendor_nvidia = 0x10de;
constexpr unsigned vendor_amd = 0x1002;
constexpr unsigned vendor_amazon = 0x1d0f;

DeviceKind classify(const PciAttr& pci, const OsDevices& os) {
    const unsigned cls = pci.class_id;
    const unsigned base = cls >> 8;
    // A plain VGA function without a compute OS device is BMC graphics (Matrox, ASPEED), not a GPU.
    // AMD Instinct accelerators are "display controllers" (0380) and get no OS device from Debian's hwloc.
    if ((pci.vendor_id == vendor_nvidia && base == 0x03) || cls == 0x0302 || (base == 0x03 && os.compute) ||
        (pci.vendor_id == vendor_amd && cls == 0x0380))
        return DeviceKind::gpu;
    // 0c06 is the "InfiniBand serial bus" class of ConnectX-2/3.
    if (base == 0x02 || cls == 0x0c06 || os.openfabrics || os.network) return DeviceKind::nic;
    return DeviceKind::pci_device;
}

bool is_rdma(const PciAttr& pci, const OsDevices& os) {
    const bool efa = pci.vendor_id == vendor_amazon && (pci.device_id >> 4) == 0xefa;  // EFA: 1d0f:efa0..efaf
    return os.openfabrics || pci.class_id == 0x0207 || pci.class_id == 0x0c06 || efa;
}

// ---- the import -----------------------------------------------------------------------------------------------

/// How a bridge behaves in the collapsed tree.
enum class Port {
    host_bridge,  ///< the root complex itself
    root_port,    ///< transparent: its children attach to the root complex
    upstream,     ///< a switch's upstream port: becomes the pcie_switch device
    downstream,   ///< transparent: its children attach to the switch
};

class Importer {
public:
    Importer(const HwlocTopology& hwloc, Topology& topology, bool live, std::vector<std::string>& warnings)
        : hwloc_(hwloc), topology_(topology), builder_(topology, 0), live_(live), warnings_(warnings) {}

    void run() {
        add_sockets();
        add_io();
        // Endpoints are numbered in PCI bus id order, as nvidia-smi and CUDA_DEVICE_ORDER=PCI_BUS_ID number GPUs;
        // the tree order differs where firmware numbered the buses behind the ports out of order.
        std::stable_sort(endpoints_.begin(), endpoints_.end(),
                         [](const auto& a, const auto& b) { return bus_order(a.first) < bus_order(b.first); });
        for (std::size_t i = 0; i < endpoints_.size(); ++i) {
            if (i > 0 && bus_order(endpoints_[i - 1].first) == bus_order(endpoints_[i].first)) {
                warnings_.push_back(fmt::format("PCI bus id {} is listed twice; look-ups by bus id find the first",
                                                bus_id_of(endpoints_[i].first->attr->pcidev)));
            }
            add_endpoint(endpoints_[i].first, endpoints_[i].second);
        }
        inherit_root_complex_numa();
        builder_.finish();
    }

private:
    [[nodiscard]] hwloc_topology_t topo() const noexcept { return hwloc_.get(); }

    std::vector<hwloc_obj_t> objects(hwloc_obj_type_t type) const {
        std::vector<hwloc_obj_t> out;
        const int count = hwloc_get_nbobjs_by_type(topo(), type);
        out.reserve(count > 0 ? static_cast<std::size_t>(count) : 0);
        for (int i = 0; i < count; ++i)
            out.push_back(hwloc_get_obj_by_type(topo(), type, static_cast<unsigned>(i)));
        return out;
    }

    /// The package owning a NUMA node: the one above it, else the only one its CPUs overlap; null when shared.
    hwloc_obj_t numa_owner(hwloc_obj_t numa) const {
        if (packages_.empty()) return hwloc_.root();
        if (hwloc_obj_t package = package_above(numa)) return package;
        hwloc_obj_t owner = nullptr;
        for (hwloc_obj_t package : packages_) {
            if (numa->cpuset == nullptr || !hwloc_bitmap_intersects(package->cpuset, numa->cpuset)) continue;
            if (owner != nullptr) return nullptr;
            owner = package;
        }
        return owner;
    }

    void add_sockets() {
        packages_ = objects(HWLOC_OBJ_PACKAGE);
        // Some VMs expose no Package: the whole machine is then one socket.
        const std::vector<hwloc_obj_t> holders =
            packages_.empty() ? std::vector<hwloc_obj_t>{hwloc_.root()} : packages_;
        numas_ = objects(HWLOC_OBJ_NUMANODE);
        std::map<hwloc_obj_t, std::vector<hwloc_obj_t>> numas;
        for (hwloc_obj_t numa : numas_)
            if (hwloc_obj_t owner = numa_owner(numa)) numas[owner].push_back(numa);
        const auto cores = objects(HWLOC_OBJ_CORE);

        for (hwloc_obj_t holder : holders) {
            SocketSpec spec;
            spec.cpu.vendor = info(holder, "CPUVendor");
            spec.cpu.family = text::leading_int(info(holder, "CPUFamilyNumber"));
            spec.cpu.model = text::leading_int(info(holder, "CPUModelNumber"));
            spec.cpu.model_name = info(holder, "CPUModel");
            if (const auto it = numas.find(holder); it != numas.end()) {
                spec.numa_node = static_cast<int>(dram_numa(it->second)->os_index);
                std::uint64_t memory = 0;
                for (hwloc_obj_t numa : it->second) {
                    if (numa->subtype == nullptr || std::string_view(numa->subtype) != "GPUMemory")
                        memory += numa->attr->numanode.local_memory;
                }
                if (memory > 0) spec.memory_bytes = memory;
            } else if (holder->nodeset != nullptr && hwloc_bitmap_first(holder->nodeset) >= 0) {
                spec.numa_node = hwloc_bitmap_first(holder->nodeset);  // memory shared with other packages
            }
            if (holder->cpuset != nullptr && !hwloc_bitmap_iszero(holder->cpuset))
                spec.cpuset = bitmap_list(holder->cpuset);
            // Slurm's gres.conf Cores= counts cores in hwloc's logical order across the machine.
            HwlocBitmap core_set;
            bool any_core = false;
            for (hwloc_obj_t core : cores) {
                if (!packages_.empty() && package_above(core) != holder) continue;
                core_set.set(core->logical_index);
                any_core = true;
            }
            if (any_core) spec.cores = bitmap_list(core_set.get());
            sockets_[holder] = builder_.add_socket(spec);
        }
        first_socket_ = sockets_.at(holders.front());
    }

    /// The socket of a root complex hanging below the CPU-side object `parent`.
    DeviceId socket_for(hwloc_obj_t parent, hwloc_obj_t io) {
        if (packages_.empty()) return first_socket_;
        if (hwloc_obj_t package = package_above(parent)) return sockets_.at(package);
        if (packages_.size() == 1) return first_socket_;
        hwloc_obj_t only = nullptr;
        int matches = 0;
        for (hwloc_obj_t package : packages_) {
            if (parent->cpuset != nullptr && hwloc_bitmap_intersects(package->cpuset, parent->cpuset)) {
                only = package;
                ++matches;
            }
        }
        if (matches == 1) return sockets_.at(only);
        const std::string what = is_host_bridge(io)      ? "host bridge " + host_bridge_range(io)
                                 : pci_of(io) != nullptr ? "PCI device " + bus_id_of(*pci_of(io))
                                                         : std::string("I/O object");
        warnings_.push_back(fmt::format("{} is attached to the {}, not to one of its {} packages; placed under {}",
                                        what, hwloc_obj_type_string(parent->type), packages_.size(),
                                        topology_.device(first_socket_).name));
        return first_socket_;
    }

    /// The NUMA node local to the CPU-side (non-I/O) object `parent` that I/O hangs below; with several NUMA nodes
    /// per package (Intel SNC, AMD EPYC NPS2/NPS4) it is not the socket's. nullopt when `parent` has no nodeset.
    std::optional<int> numa_near(hwloc_obj_t parent) const {
        if (parent->nodeset == nullptr) return std::nullopt;
        std::vector<hwloc_obj_t> local;
        for (hwloc_obj_t numa : numas_) {
            if (numa->nodeset != nullptr && hwloc_bitmap_isincluded(numa->nodeset, parent->nodeset))
                local.push_back(numa);
        }
        if (local.empty()) return std::nullopt;
        return static_cast<int>(dram_numa(local)->os_index);
    }

    /// A root complex for the I/O object `io` below the CPU-side object `parent`, in its socket and local NUMA node.
    DeviceId add_root_complex(hwloc_obj_t parent, hwloc_obj_t io) {
        const DeviceId rc = builder_.add_root_complex(socket_for(parent, io));
        topology_.devices[rc].numa_node = numa_near(parent);
        return rc;
    }

    /// Gives every device below a root complex the root complex's NUMA node (Builder::finish would give the socket's).
    void inherit_root_complex_numa() {
        for (Device& d : topology_.devices) {
            if (d.numa_node) continue;
            DeviceId up = d.parent;
            while (up != no_device && topology_.devices[up].kind != DeviceKind::root_complex)
                up = topology_.devices[up].parent;
            if (up != no_device) d.numa_node = topology_.devices[up].numa_node;
        }
    }

    void add_io() {
        // hwloc hangs host bridges below CPU-side objects (packages, groups, the machine).
        std::vector<std::pair<hwloc_obj_t, hwloc_obj_t>> tops;  // (CPU-side parent, I/O object), depth first
        collect_io(hwloc_.root(), tops);
        // Bus order across the whole machine, not package by package.
        std::stable_sort(tops.begin(), tops.end(),
                         [](const auto& a, const auto& b) { return bus_order(a.second) < bus_order(b.second); });
        std::map<hwloc_obj_t, DeviceId> implicit_root_complexes;
        for (const auto& [parent, io] : tops) {
            if (is_host_bridge(io)) {
                add_below(io, Port::host_bridge, add_root_complex(parent, io));
            } else if (pci_of(io) != nullptr) {
                // hwloc itself puts every PCI object below a host bridge; a hand-written file may not.
                auto [it, fresh] = implicit_root_complexes.try_emplace(parent, no_device);
                if (fresh) it->second = add_root_complex(parent, io);
                add_one(io, Port::host_bridge, it->second);
            }
        }
    }

    static void collect_io(hwloc_obj_t obj, std::vector<std::pair<hwloc_obj_t, hwloc_obj_t>>& tops) {
        for (hwloc_obj_t io = obj->io_first_child; io != nullptr; io = io->next_sibling)
            tops.emplace_back(obj, io);
        for (hwloc_obj_t child = obj->first_child; child != nullptr; child = child->next_sibling)
            collect_io(child, tops);
    }

    void add_below(hwloc_obj_t io_parent, Port role, DeviceId attach) {
        for (hwloc_obj_t child : io_children(io_parent))
            add_one(child, role, attach);
    }

    /// Adds `obj`, whose I/O parent plays `parent_role`, below device `attach`.
    void add_one(hwloc_obj_t obj, Port parent_role, DeviceId attach) {
        if (obj->type == HWLOC_OBJ_PCI_DEVICE) {
            endpoints_.emplace_back(obj, attach);
            return;
        }
        if (obj->type != HWLOC_OBJ_BRIDGE) return;  // OS devices of bridges and anything else carry no PCI function
        const int bridges = bridge_children(obj);
        Port role = parent_role == Port::upstream      ? Port::downstream
                    : parent_role == Port::host_bridge ? Port::root_port
                                                       : Port::upstream;
        // A port with several bridges below it fans out: it is a switch's upstream port (the root port or the
        // downstream port above it is then missing from the source).
        if (role != Port::upstream && bridges >= 2) role = Port::upstream;
        // A switch's upstream port always has downstream ports below it; a bridge without any is a PCIe-to-PCI
        // bridge (BMC graphics behind an ASPEED AST1150, legacy slots): transparent.
        if (role == Port::upstream && bridges == 0) role = Port::downstream;
        if (role != Port::upstream) {
            add_below(obj, role, attach);
            return;
        }
        const auto& pci = obj->attr->bridge.upstream.pci;
        PciSpec spec;
        spec.bus_id = bus_id_of(pci);
        spec.vendor_id = pci.vendor_id;
        spec.device_id = pci.device_id;
        spec.model = info(obj, "PCIDevice");
        const DeviceId sw = builder_.add_switch(attach, spec, link_of(obj, pci));
        add_below(obj, Port::upstream, sw);
    }

    void add_endpoint(hwloc_obj_t obj, DeviceId attach) {
        const auto& pci = obj->attr->pcidev;
        const OsDevices os = os_devices_of(obj);
        const DeviceKind kind = classify(pci, os);
        PciSpec spec;
        spec.bus_id = bus_id_of(pci);
        spec.vendor_id = pci.vendor_id;
        spec.device_id = pci.device_id;
        spec.model = info(obj, "PCIDevice");
        spec.interfaces = os.names;
        if (kind == DeviceKind::gpu) {
            if (!os.gpu_model.empty()) spec.model = os.gpu_model;
            if (!os.uuid.empty()) spec.uuid = os.uuid;
        }
        if (kind == DeviceKind::nic) spec.rdma = is_rdma(pci, os);
        builder_.add_endpoint(kind, attach, spec, link_of(obj, pci));
    }

    /// The link from `obj` up to the port above it.
    LinkSpec link_of(hwloc_obj_t obj, const PciAttr& pci) const {
        if (live_) {
            // hwloc reports the current speed, which drops when the link idles; sysfs knows what the link can do.
            // Both ends bound it: the device, and the port above it (a x16 card in a x8 slot trains to x8).
            if (auto link = sysfs::max_link(bus_id_of(pci))) {
                const hwloc_obj_t up = obj->parent;
                if (up != nullptr && pci_of(up) != nullptr) {
                    if (const auto port = sysfs::max_link(bus_id_of(*pci_of(up)))) {
                        if (link->gen > port->gen) {
                            link->gen = port->gen;
                            link->gts = port->gts;
                        }
                        if (port->width > 0 && (link->width == 0 || port->width < link->width))
                            link->width = port->width;
                    }
                }
                return LinkSpec{link, std::nullopt, "sysfs max_link_speed"};
            }
        }
        if (pci.linkspeed > 0) return LinkSpec{std::nullopt, static_cast<double>(pci.linkspeed) * 1e9, "hwloc"};
        return LinkSpec{};
    }

    const HwlocTopology& hwloc_;
    Topology& topology_;
    Builder builder_;
    bool live_;
    std::vector<std::string>& warnings_;
    std::vector<hwloc_obj_t> packages_;
    std::vector<hwloc_obj_t> numas_;
    std::map<hwloc_obj_t, DeviceId> sockets_;
    DeviceId first_socket_ = no_device;
    std::vector<std::pair<hwloc_obj_t, DeviceId>> endpoints_;  // PCI devices and the device they attach to
};

Topology import_loaded(const HwlocTopology& hwloc, Source source, std::string hostname, bool live,
                       std::vector<std::string>& warnings) {
    Topology topology;
    topology.source = std::move(source);
    topology.nodes = {Node{std::move(hostname)}};
    Importer(hwloc, topology, live, warnings).run();
    return topology;
}

std::string this_hostname() {
    char name[HOST_NAME_MAX + 1] = {};
    if (gethostname(name, sizeof name) != 0)
        throw UnavailableError(fmt::format("gethostname failed: {}", std::strerror(errno)));
    name[HOST_NAME_MAX] = '\0';
    return name;
}

}  // namespace

Topology import_hwloc_xml(std::string_view path, std::vector<std::string>& warnings) {
    const std::string file = json_io::display_name(path);
    const std::string text = json_io::read_text(path);
    check_hwloc_xml_text(text, file);

    HwlocTopology hwloc;
    hwloc.keep_all_io();
    try {
        hwloc.set_xml_text(text);
        hwloc.load();
    } catch (const HwlocError& e) {
        throw DataError(fmt::format("hwloc cannot load this topology ({}); for details run "
                                    "HWLOC_XML_VERBOSE=1 lstopo-no-graphics -i {}",
                                    e.what(), file),
                        {file, "", 0});
    }
    Topology topology =
        import_loaded(hwloc, Source{"hwloc-xml", file}, info(hwloc.root(), "HostName"), false, warnings);
    if (topology.devices_of(DeviceKind::gpu).empty())
        warnings.push_back(fmt::format("no GPU found in {}", quote(file)));
    return topology;
}

Topology import_hwloc_live(std::vector<std::string>& warnings) {
    HwlocTopology hwloc;
    hwloc.keep_all_io();
    hwloc.load();
    const std::string hostname = this_hostname();
    const bool this_system = hwloc.is_this_system();
    if (!this_system) {
        warnings.emplace_back("hwloc did not discover this machine (HWLOC_XMLFILE or HWLOC_SYNTHETIC is set?); "
                              "the topology describes something else");
    }
    Topology topology = import_loaded(hwloc, Source{"hwloc", hostname}, hostname, this_system, warnings);
    // Debian's hwloc has no NVML plugin; the driver's /proc files name the GPUs and their /dev/nvidiaN minors.
    // Only for this machine: an HWLOC_XMLFILE describes another one.
    // NIC wire speeds are not in hwloc either; the kernel knows them for ports that are up.
    if (this_system) {
        nvidia_proc::annotate(topology, warnings);
        sysfs::annotate_nic_speeds(topology);
    }
    if (topology.devices_of(DeviceKind::gpu).empty()) warnings.emplace_back("no GPU found on this machine");
    return topology;
}

}  // namespace gpuops::topo
