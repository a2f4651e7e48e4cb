// vp-probe: discover a node's PCIe topology (hwloc, hwloc/NCCL XML, presets, clusters) as gpuops.topology JSON.
#include <iostream>

#include <fmt/format.h>

#include "gpuops/core/cli.hpp"
#include "gpuops/topo/presets.hpp"
#include "gpuops/topo/probe.hpp"

int main(int argc, char** argv) {
    gpuops::cli::Tool tool("vp-probe",
                           "Discover a node's PCIe topology (GPUs, NICs, PCIe switches, sockets) and print it as JSON.\n"
                           "Without a source it asks hwloc about this machine.",
                           {"json", "text", "dot", "gres-conf"});
    gpuops::topo::ProbeOptions opts;
    bool list_presets = false;
    int nodes = 0;
    auto& app = tool.app();
    app.add_option("FILE", opts.document, "Read a gpuops.topology document instead of probing ('-' = stdin)");
    app.add_option("--xml", opts.xml, "Import an hwloc XML file (lstopo --of xml; format 1.x or 2.x)")->type_name("FILE");
    app.add_option("--nccl-xml", opts.nccl_xml, "Import an NCCL topology XML file (NCCL_TOPO_FILE format)")->type_name("FILE");
    app.add_option("--preset", opts.preset, "Build an embedded preset (see --list-presets) or a preset spec FILE.json")
        ->type_name("NAME");
    app.add_flag("--list-presets", list_presets, "List the embedded presets and where their numbers come from");
    auto* nodes_opt = app.add_option("--nodes", nodes, "Compose a cluster of N identical nodes")->type_name("N");
    app.add_option("--fabric", opts.fabric, "Fabric joining the nodes: nonblocking|rail|rail-only[:BANDWIDTH]")
        ->type_name("SPEC");
    app.add_option("--hosts", opts.hosts, "Name the nodes with a Slurm hostlist, e.g. gpu[01-04]")->type_name("HOSTLIST");
    app.add_option("--links", opts.links, "Override link bandwidth/latency from a gpuops.links calibration file")
        ->type_name("FILE");

    return tool.run(argc, argv, [&] {
        if (list_presets) {
            std::string out;
            for (const auto& p : gpuops::topo::list_presets()) {
                out += fmt::format("{:<20} {}\n", p.name, p.description);
                if (tool.common().verbose > 0)
                    for (const auto& s : p.sources) out += fmt::format("{:<20}   - {}\n", "", s);
            }
            auto output = tool.open_output();
            output.stream() << out;
            output.commit();
            return gpuops::ExitCode::ok;
        }
        if (nodes_opt->count() > 0) opts.nodes = nodes;
        auto result = gpuops::topo::probe(opts);
        for (const auto& w : result.warnings) tool.warn(w);
        const std::string text = gpuops::topo::render(result.topology, tool.common().format, tool.common().compact, tool.name());
        auto output = tool.open_output();
        output.stream() << text;
        output.commit();
        return gpuops::ExitCode::ok;
    });
}
