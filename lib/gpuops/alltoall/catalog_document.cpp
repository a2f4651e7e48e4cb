// The gpuops.catalog document: writing it, reading it back against a topology, and the text summary.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gpuops/alltoall/catalog.hpp"
#include "gpuops/alltoall/catalog_internal.hpp"
#include "gpuops/core/error.hpp"
#include "gpuops/core/units.hpp"
#include "gpuops/topo/symmetry.hpp"
#include "gpuops/topo/topology_json.hpp"

namespace gpuops::alltoall {

using namespace catalog_detail;

// ---- the document -------------------------------------------------------------------------------------

Json Catalog::to_json(bool with_instances, std::size_t instance_limit) const {
    const Topology& t = *topology_;
    Json doc = json_io::make_header("gpuops.catalog", catalog_schema_version, "vp-catalog");
    doc["topology"] = {{"source", {{"kind", t.source.kind}, {"name", t.source.name}}},
                       {"fingerprint", fingerprint_},
                       {"nodes", t.nodes.size()},
                       {"gpus", t.devices_of(DeviceKind::gpu).size()},
                       {"document", topo::to_json(t, "vp-catalog")}};
    doc["method"] = std::string(to_string(method_));
    doc["stats"] = {{"orbits", stats_.orbits},
                    {"raw_channels", count_json(stats_.raw_channels)},
                    {"raw_channels_log10", std::round(stats_.raw_channels_log10 * 1e6) / 1e6},
                    {"raw_exact", stats_.raw_exact},
                    {"compression", count_json(std::round(stats_.compression * 100) / 100)},
                    {"compression_log10", std::round(stats_.compression_log10 * 1e6) / 1e6},
                    {"build_time_s", std::round(stats_.build_seconds * 1e4) / 1e4}};
    if (pattern_) {
        doc["pattern"] = {{"kind", pattern_->kind},
                          {"rails", pattern_->rails},
                          {"count", count_json(pattern_->count)},
                          {"count_log10", std::round(pattern_->count_log10 * 1e6) / 1e6}};
    } else {
        doc["pattern"] = nullptr;
    }
    Json classes = Json::array();
    std::size_t instances_written = 0;
    for (std::size_t ci = 0; ci < classes_.size(); ++ci) {
        const auto& c = classes_[ci];
        const Topology& l = *c.local;
        Json jc;
        jc["id"] = ci;
        Json domains = Json::array();
        for (std::size_t m : c.members) {
            Json ports = Json::array();
            for (LinkId link : domains_[m].port_links)
                ports.push_back(t.label(t.links[link].a) + "<->" + t.label(t.links[link].b));
            domains.push_back({{"name", domains_[m].name}, {"ports", ports}});
        }
        jc["domains"] = domains;
        jc["symmetry_order"] = c.space->symmetry().order_text();
        Json flows = Json::array();
        for (const auto& f : c.space->flows()) {
            Json via = Json::array();
            for (DeviceId v : f.via)
                via.push_back(l.label(v));
            flows.push_back({{"src", l.label(f.src)},
                             {"dst", l.label(f.dst)},
                             {"path", std::string(topo::to_string(f.kind))},
                             {"via", via},
                             {"rate_gbytes_per_s", gbytes(f.rate)}});
        }
        jc["flows"] = flows;
        Json edge_classes = Json::array();
        for (const auto& ec : c.edge_classes) {
            Json edges = Json::array();
            for (EdgeId e : ec.edges)
                edges.push_back(edge_text(l, e));
            edge_classes.push_back({{"capacity_gbytes_per_s", gbytes(ec.capacity)}, {"edges", edges}});
        }
        jc["edge_classes"] = edge_classes;
        jc["raw_channels"] = count_json(c.raw_channels);
        Json channels = Json::array();
        for (std::size_t k = 0; k < c.channels.size(); ++k) {
            const auto& ch = c.channels[k];
            Json jch = {{"flows", ch.flows},
                        {"orbit_size", count_json(ch.orbit_size)},
                        {"rate_gbytes_per_s", gbytes(ch.rate)},
                        {"shape", ch.shape}};
            if (with_instances) {
                const auto all = instances(ci, k, instance_limit - std::min(instance_limit, instances_written));
                instances_written += all.size();
                jch["instances"] = all;
            }
            channels.push_back(std::move(jch));
        }
        jc["channels"] = std::move(channels);
        classes.push_back(std::move(jc));
    }
    doc["classes"] = std::move(classes);
    return doc;
}

Catalog Catalog::read(const Json& doc, const Topology& topology, std::string_view source_name) {
    try {
        json_io::check_header(doc, "gpuops.catalog", catalog_schema_version);
        const View root(doc);
        const View method_view = root.at("method");
        const auto method_name = method_view.as_string();
        CatalogMethod method = CatalogMethod::exact;
        if (method_name == "hierarchical") {
            method = CatalogMethod::hierarchical;
        } else if (method_name != "exact") {
            throw method_view.error(R"(expected "exact" or "hierarchical")");
        }
        Catalog cat = decompose(topology, method, 0);
        const auto stated = root.at("topology").string_or_null("fingerprint");
        cat.read_fingerprint_ = stated.value_or("");
        const auto classes = root.at("classes").items();
        if (classes.size() != cat.classes_.size()) {
            throw root.at("classes").error(
                fmt::format("{} classes of parts, but this topology has {}", classes.size(), cat.classes_.size()));
        }
        for (std::size_t ci = 0; ci < classes.size(); ++ci) {
            auto& c = cat.classes_[ci];
            const View& jc = classes[ci];
            const auto domains = jc.at("domains").items();
            if (domains.size() != c.members.size()) {
                throw jc.at("domains").error(
                    fmt::format("{} parts in this class, but this topology has {}", domains.size(), c.members.size()));
            }
            for (std::size_t k = 0; k < domains.size(); ++k) {
                const auto name = domains[k].at("name").as_string();
                if (name != cat.domains_[c.members[k]].name) {
                    throw domains[k].at("name").error(fmt::format("expected the part {}, got {}",
                                                                  quote(cat.domains_[c.members[k]].name), quote(name)));
                }
            }
            // Flows resolve by names against the rebuilt space.
            const Topology& l = *c.local;
            std::vector<FlowId> flow_ids;
            for (const View& jf : jc.at("flows").items()) {
                const auto device = [&](const View& v) {
                    const auto name = v.as_string();
                    for (const auto& d : l.devices)
                        if (l.label(d.id) == name) return d.id;
                    throw v.error(fmt::format("no device {} in this part of the topology", quote(name)));
                };
                const DeviceId src = device(jf.at("src"));
                const DeviceId dst = device(jf.at("dst"));
                const View path = jf.at("path");
                std::optional<PathKind> kind;
                for (auto k :
                     {PathKind::direct, PathKind::nic_loopback, PathKind::host_staging, PathKind::alternate_nic})
                    if (topo::to_string(k) == path.as_string()) kind = k;
                if (!kind) throw path.error(fmt::format("unknown path kind {}", quote(path.as_string())));
                std::vector<DeviceId> via;
                for (const View& v : jf.at("via").items())
                    via.push_back(device(v));
                const auto id = c.space->find(src, dst, *kind, via);
                if (!id) throw jf.error("this flow is not a path of the topology");
                flow_ids.push_back(*id);
            }
            c.raw_channels = 0;
            for (const View& jch : jc.at("channels").items()) {
                CatalogChannel ch;
                for (const View& f : jch.at("flows").items()) {
                    const auto k = f.as_int(0, static_cast<std::int64_t>(flow_ids.size()) - 1);
                    ch.flows.push_back(flow_ids[static_cast<std::size_t>(k)]);
                }
                std::sort(ch.flows.begin(), ch.flows.end());
                const View size = jch.at("orbit_size");
                ch.orbit_size = size.as_number();
                if (!(ch.orbit_size >= 1)) throw size.error("expected an orbit size of at least 1");
                ch.rate = jch.at("rate_gbytes_per_s").as_number() * 1e9;
                for (const View& x : jch.at("shape").items())
                    ch.shape.push_back(static_cast<std::uint32_t>(x.as_int(0, 1'000'000)));
                c.raw_channels += ch.orbit_size;
                c.channels.push_back(std::move(ch));
            }
            if (const auto raw = jc.number_or_null("raw_channels")) cat.read_raw_.push_back(*raw);
        }
        cat.stats_.build_seconds = root.at("stats").number_or_null("build_time_s").value_or(0);
        cat.compute_stats();
        return cat;
    } catch (const DataError& e) {
        if (e.where().file.empty()) throw e.in_file(std::string(source_name));
        throw;
    }
}

Catalog Catalog::read(const Json& doc, std::string_view source_name) {
    std::optional<Topology> topology;
    try {
        json_io::check_header(doc, "gpuops.catalog", catalog_schema_version);
        const View document = View(doc).at("topology").at("document");
        try {
            topology = topo::topology_from_json(document.json());
        } catch (const DataError& e) {
            throw e.under_pointer(document.pointer());
        }
    } catch (const DataError& e) {
        if (e.where().file.empty()) throw e.in_file(std::string(source_name));
        throw;
    }
    return read(doc, *topology, source_name);
}

std::string Catalog::summary() const {
    const Topology& t = *topology_;
    std::string out;
    out += fmt::format("catalog of {} ({} GPUs, {} node{}): {} method\n",
                       t.source.name.empty() ? t.source.kind : t.source.name, t.devices_of(DeviceKind::gpu).size(),
                       t.nodes.size(), t.nodes.size() == 1 ? "" : "s", to_string(method_));
    out += fmt::format("  orbits stored       {}\n", stats_.orbits);
    out += fmt::format("  channels represented {}{}\n", count_text(stats_.raw_channels, stats_.raw_channels_log10),
                       stats_.raw_exact ? " (every maximal channel)" : " (compositions of the parts' channels)");
    out += fmt::format("  compression         {}x\n", stats_.compression < 1e6
                                                          ? fmt::format("{:.1f}", stats_.compression)
                                                          : count_text(stats_.compression, stats_.compression_log10));
    if (pattern_) {
        out += fmt::format("  port pattern        {}{}: {} pairings\n", pattern_->kind,
                           pattern_->rails ? fmt::format(" ({} rails)", pattern_->rails) : std::string(),
                           count_text(pattern_->count, pattern_->count_log10));
    }
    out += fmt::format("  build time          {:.3f} s\n", stats_.build_seconds);
    for (std::size_t ci = 0; ci < classes_.size(); ++ci) {
        const auto& c = classes_[ci];
        std::string names;
        for (std::size_t k = 0; k < c.members.size() && k < 4; ++k)
            names += (k ? ", " : "") + domains_[c.members[k]].name;
        if (c.members.size() > 4) names += fmt::format(", ... ({} in all)", c.members.size());
        out += fmt::format("class {}: {}; symmetry {}; {} flows, {} ports, {} edge classes\n", ci, names,
                           c.space->symmetry().order_text(), c.space->flows().size(), c.ports.size(),
                           c.edge_classes.size());
        // Channels by shape: how many orbits and channels share each edge-class usage vector.
        std::map<std::vector<std::uint32_t>, std::pair<std::size_t, double>> by_shape;
        std::map<std::size_t, std::pair<std::size_t, double>> by_flows;
        for (const auto& ch : c.channels) {
            auto& s = by_shape[ch.shape];
            ++s.first;
            s.second += ch.orbit_size;
            auto& f = by_flows[ch.flows.size()];
            ++f.first;
            f.second += ch.orbit_size;
        }
        out += fmt::format("  {} orbits, {} channels, {} shapes\n", c.channels.size(),
                           count_text(c.raw_channels, std::log10(c.raw_channels)), by_shape.size());
        for (const auto& [flows, n] : by_flows)
            out += fmt::format("  {:>3} flows: {:>8} orbits {:>14} channels\n", flows, n.first,
                               count_text(n.second, std::log10(n.second)));
        std::vector<std::pair<std::vector<std::uint32_t>, std::pair<std::size_t, double>>> shapes(by_shape.begin(),
                                                                                                  by_shape.end());
        std::stable_sort(shapes.begin(), shapes.end(),
                         [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
        const std::size_t shown = std::min<std::size_t>(shapes.size(), 5);
        for (std::size_t k = 0; k < shown; ++k) {
            out += fmt::format("  shape [{}]: {} orbits, {} channels\n", fmt::join(shapes[k].first, " "),
                               shapes[k].second.first,
                               count_text(shapes[k].second.second, std::log10(shapes[k].second.second)));
        }
        if (shapes.size() > shown) out += fmt::format("  ... {} more shapes\n", shapes.size() - shown);
        if (!c.channels.empty()) {
            std::string rep;
            for (FlowId id : c.channels.front().flows)
                rep += (rep.empty() ? "" : "  ") + flow_text(*c.local, c.space->flows()[id]);
            out +=
                fmt::format("  largest orbit ({}): {}\n",
                            count_text(c.channels.front().orbit_size, std::log10(c.channels.front().orbit_size)), rep);
        }
    }
    return out;
}

}  // namespace gpuops::alltoall
