// vp-probe: discover a node's PCIe topology (hwloc, hwloc/NCCL XML, presets, clusters) as gpuops.topology JSON.
#include <chrono>
#include <map>

#include <fmt/format.h>

#include "gpuops/core/cli.hpp"
#include "gpuops/topo/presets.hpp"
#include "gpuops/topo/probe.hpp"

namespace {

/// -v: what was found and where its numbers come from, for operators checking a probe.
void explain(const gpuops::cli::Tool& tool, const gpuops::topo::Topology& t, std::chrono::steady_clock::duration took) {
    using gpuops::topo::DeviceKind;
    const auto ms = std::chrono::duration<double, std::milli>(took).count();
    tool.note(fmt::format("{} {}: {} node(s), {} GPUs, {} NICs, {} PCIe switches, {} links in {:.1f} ms", t.source.kind,
                          t.source.name, t.nodes.size(), t.devices_of(DeviceKind::gpu).size(),
                          t.devices_of(DeviceKind::nic).size(), t.devices_of(DeviceKind::pcie_switch).size(),
                          t.links.size(), ms));
    std::map<std::string, int> sources;
    for (const auto& l : t.links)
        ++sources[l.source];
    for (const auto& [source, n] : sources)
        tool.note(fmt::format("{} link(s): {}", n, source));
}

}  // namespace

int main(int argc, char** argv) {
    gpuops::cli::Tool tool(
        "vp-probe",
        "Discover a node's PCIe topology (GPUs, NICs, PCIe switches, sockets) and print it as JSON.\n"
        "Without a source it asks hwloc about this machine.",
        {"json", "text", "dot", "gres-conf"});
    gpuops::topo::ProbeOptions opts;
    bool list_presets = false;
    int nodes = 0;
    auto& app = tool.app();
    app.add_option("FILE", opts.document, "Read a gpuops.topology document instead of probing ('-' = stdin)")
        ->type_name("");
    app.add_option("--xml", opts.xml, "Import an hwloc XML file (lstopo --of xml; format 1.x or 2.x)")
        ->type_name("FILE");
    app.add_option("--nccl-xml", opts.nccl_xml, "Import an NCCL topology XML file (NCCL_TOPO_FILE format)")
        ->type_name("FILE");
    app.add_option("--preset", opts.preset, "Build an embedded preset (see --list-presets) or a preset spec FILE.json")
        ->type_name("NAME");
    app.add_flag("--list-presets", list_presets, "List the embedded presets and where their numbers come from");
    auto* nodes_opt = app.add_option("--nodes", nodes, "Compose a cluster of N identical nodes")->type_name("N");
    app.add_option("--fabric", opts.fabric, "Fabric joining the nodes: nonblocking|rail|rail-only[:BANDWIDTH]")
        ->type_name("SPEC");
    app.add_option("--hosts", opts.hosts, "Name the nodes with a Slurm hostlist, e.g. gpu[01-04]")
        ->type_name("HOSTLIST");
    app.add_option("--links", opts.links, "Override link bandwidth/latency from a gpuops.links calibration file")
        ->type_name("FILE");

    return tool.run(argc, argv, [&] {
        const auto& common = tool.common();
        if (list_presets) {
            const std::string format = tool.format_given() ? common.format : "text";
            tool.write(gpuops::topo::render_preset_list(format, common.verbose > 0, common.compact, tool.name()));
            return gpuops::ExitCode::ok;
        }
        if (nodes_opt->count() > 0) opts.nodes = nodes;
        const auto start = std::chrono::steady_clock::now();
        auto result = gpuops::topo::probe(opts);
        for (const auto& w : result.warnings)
            tool.warn(w);
        explain(tool, result.topology, std::chrono::steady_clock::now() - start);
        tool.write(gpuops::topo::render(result.topology, common.format, common.compact, tool.name()));
        return gpuops::ExitCode::ok;
    });
}
