// Matching calibration rules against links and rewriting their numbers and sources.
#include "gpuops/topo/link_overrides.hpp"

#include <cmath>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"

namespace gpuops::topo {

std::vector<LinkRule> parse_link_rules(const json_io::Json& doc) {
    json_io::check_header(doc, links_schema, links_schema_version);
    const json_io::View root(doc);
    std::vector<LinkRule> rules;
    for (const auto& v : root.at("links").items()) {
        LinkRule r;
        r.pointer = v.pointer();
        if (auto k = v.find("kind")) {
            r.kind = link_kind_from_string(k->as_string());
            if (!r.kind) throw k->error(fmt::format("unknown link kind {}", quote(k->as_string())));
        }
        if (auto g = v.find("gen")) r.gen = static_cast<int>(g->as_int(1, 7));
        if (auto w = v.find("width")) r.width = static_cast<int>(w->as_int(1, 32));
        if (auto b = v.find("between")) {
            if (b->size() != 2) throw b->error("expected two device names");
            r.between = std::make_pair(b->at(0).as_string(), b->at(1).as_string());
        }
        if (auto bw = v.find("bandwidth_gbytes_per_s")) {
            r.bandwidth = bw->as_number() * 1e9;
            if (!std::isfinite(*r.bandwidth) || *r.bandwidth <= 0)
                throw bw->error("expected a positive, finite bandwidth");
        }
        if (auto lat = v.find("latency_us")) {
            r.latency_us = lat->as_number();
            if (*r.latency_us < 0) throw lat->error("expected a non-negative latency");
        }
        if (!r.bandwidth && !r.latency_us) throw v.error("a rule must set bandwidth_gbytes_per_s or latency_us");
        rules.push_back(std::move(r));
    }
    return rules;
}

std::vector<std::string> apply_link_rules(Topology& t, const std::vector<LinkRule>& rules, std::string_view origin) {
    std::vector<std::string> warnings;
    for (const LinkRule& r : rules) {
        int matched = 0;
        for (auto& l : t.links) {
            if (r.kind && l.kind != *r.kind) continue;
            if (r.gen && (!l.pcie || l.pcie->gen != *r.gen)) continue;
            if (r.width && (!l.pcie || l.pcie->width != *r.width)) continue;
            if (r.between) {
                const auto& a = t.devices[l.a].name;
                const auto& b = t.devices[l.b].name;
                if (!((a == r.between->first && b == r.between->second) ||
                      (a == r.between->second && b == r.between->first))) {
                    continue;
                }
            }
            if (r.bandwidth) l.bandwidth = *r.bandwidth;
            if (r.latency_us) l.latency_us = *r.latency_us;
            l.source = fmt::format("calibration: {} ({})", origin, r.pointer);
            ++matched;
        }
        if (matched == 0)
            warnings.push_back(fmt::format("{}: ({}) the rule matches no link", quote(origin), r.pointer));
    }
    return warnings;
}

}  // namespace gpuops::topo
