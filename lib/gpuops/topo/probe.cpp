// The vp-probe pipeline: source selection, import, cluster composition, calibration, rendering.
#include "gpuops/topo/probe.hpp"

#include <set>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"
#include "gpuops/core/hostlist.hpp"
#include "gpuops/core/json_io.hpp"
#include "gpuops/core/version.hpp"
#include "gpuops/topo/cluster.hpp"
#include "gpuops/topo/import_hwloc.hpp"
#include "gpuops/topo/import_nccl.hpp"
#include "gpuops/topo/link_overrides.hpp"
#include "gpuops/topo/presets.hpp"
#include "gpuops/topo/render.hpp"
#include "gpuops/topo/topology_json.hpp"

namespace gpuops::topo {
namespace {

/// Runs `read` on the input `path`; a data error that does not say which file it is about is attributed to it
/// (JSON pointers come from documents parsed in memory, builders know no file at all).
template <typename Read>
auto attributed(std::string_view path, Read&& read) {
    try {
        return read();
    } catch (const DataError& e) {
        if (!e.where().file.empty()) throw;
        throw e.in_file(json_io::display_name(path));
    }
}

Topology load_source(const ProbeOptions& o, std::vector<std::string>& warnings) {
    int sources = 0;
    for (const auto* s : {&o.document, &o.xml, &o.nccl_xml, &o.preset})
        sources += s->empty() ? 0 : 1;
    if (sources > 1) throw UsageError("give at most one of FILE, --xml, --nccl-xml and --preset");
    if (!o.xml.empty()) return attributed(o.xml, [&] { return import_hwloc_xml(o.xml, warnings); });
    if (!o.nccl_xml.empty()) return attributed(o.nccl_xml, [&] { return import_nccl_xml(o.nccl_xml, warnings); });
    if (!o.preset.empty()) {
        if (!o.preset.ends_with(".json")) return build_preset(o.preset);
        return attributed(o.preset, [&] { return build_from_spec(json_io::read_document(o.preset), o.preset); });
    }
    if (!o.document.empty()) {
        return attributed(o.document, [&] { return topology_from_json(json_io::read_document(o.document)); });
    }
    return import_hwloc_live(warnings);
}

}  // namespace

ProbeResult probe(const ProbeOptions& o) {
    ProbeResult result;
    if (o.nodes && *o.nodes < 1) throw UsageError(fmt::format("--nodes: expected at least 1, got {}", *o.nodes));
    if (!o.fabric.empty() && !o.nodes && o.hosts.empty()) throw UsageError("--fabric needs --nodes or --hosts");
    std::vector<std::string> hostnames;
    if (!o.hosts.empty()) {
        try {
            hostnames = hostlist::expand(o.hosts);
        } catch (const DataError& e) {
            throw UsageError("--hosts: " + e.reason());
        }
        std::set<std::string_view> seen;
        for (const auto& h : hostnames) {
            if (!seen.insert(h).second) throw UsageError(fmt::format("--hosts: {} appears twice", quote(h)));
        }
        if (o.nodes && static_cast<std::size_t>(*o.nodes) != hostnames.size()) {
            throw UsageError(fmt::format("--hosts names {} hosts but --nodes is {}", hostnames.size(), *o.nodes));
        }
    }
    // Validate cheap options before a possibly slow import.
    const FabricSpec fabric = parse_fabric(o.fabric.empty() ? std::string("nonblocking") : o.fabric);
    std::vector<LinkRule> rules;
    if (!o.links.empty()) {
        rules = attributed(o.links, [&] { return parse_link_rules(json_io::read_document(o.links)); });
    }

    Topology t = load_source(o, result.warnings);
    const int count = o.nodes ? *o.nodes : static_cast<int>(hostnames.size());
    if (count > 1 || (count == 1 && !o.fabric.empty())) {
        t = compose_cluster(t, count, fabric, hostnames);
    } else if (count == 1 && !hostnames.empty()) {
        if (t.nodes.size() != 1) throw UsageError("--hosts names one host but the input has several nodes");
        t.nodes.front().hostname = hostnames.front();  // one host: a name, not a cluster
    }
    if (!rules.empty()) {
        auto w = apply_link_rules(t, rules, o.links);
        result.warnings.insert(result.warnings.end(), w.begin(), w.end());
    }
    validate(t);
    result.topology = std::move(t);
    return result;
}

std::string render(const Topology& t, std::string_view format, bool compact, std::string_view tool) {
    if (format == "json") {
        const auto doc = to_json(t, tool);
        return json_io::dump(doc, !compact);
    }
    if (format == "text") return render_text(t);
    if (format == "dot") return render_dot(t);
    if (format == "gres-conf") return render_gres_conf(t, fmt::format("{} {}", tool, version()));
    throw UsageError(fmt::format("unknown format {}", quote(format)));
}

}  // namespace gpuops::topo
