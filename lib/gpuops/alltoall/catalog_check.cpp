// The catalog checker: every channel, the totals, completeness where it can be listed, and a composition.
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

// ---- the checker --------------------------------------------------------------------------------------

std::vector<std::string> Catalog::check(std::size_t brute_force_limit, std::size_t max_violations) const {
    std::vector<std::string> v;
    const auto full = [&] { return v.size() >= max_violations; };
    if (!read_fingerprint_.empty() && read_fingerprint_ != fingerprint_) {
        v.push_back(fmt::format("the catalog was built for another topology (fingerprint {}, this one is {})",
                                read_fingerprint_, fingerprint_));
    }
    for (std::size_t ci = 0; ci < classes_.size() && !full(); ++ci) {
        const auto& c = classes_[ci];
        const auto& space = *c.space;
        const auto index = edge_class_index(c);
        std::set<std::vector<int>> certificates;
        double sum = 0;
        for (std::size_t k = 0; k < c.channels.size() && !full(); ++k) {
            const auto& ch = c.channels[k];
            const auto where = fmt::format("class {} channel {}", ci, k);
            const Channel concrete = space.channel(ch.flows);
            if (auto why = contention(*c.local, concrete)) {
                v.push_back(fmt::format("{}: not contention-free: {}", where, *why));
                continue;
            }
            if (!is_maximal(concrete, space.flows())) {
                v.push_back(fmt::format("{}: not maximal: another flow fits", where));
                continue;
            }
            if (method_ == CatalogMethod::hierarchical && !saturates_ports(c, ch.flows)) {
                v.push_back(fmt::format("{}: does not use every port in both directions", where));
                continue;
            }
            auto canon = space.canonical(ch.flows);
            const double size = space.orbit_size(canon);
            if (size != ch.orbit_size) {
                v.push_back(fmt::format("{}: orbit size {} stated, {} found", where, ch.orbit_size, size));
                continue;
            }
            if (!certificates.insert(std::move(canon.certificate)).second) {
                v.push_back(fmt::format("{}: the same orbit as an earlier channel", where));
                continue;
            }
            if (shape_of(c, ch.flows, index) != ch.shape) v.push_back(fmt::format("{}: wrong shape", where));
            sum += ch.orbit_size;
        }
        if (full()) break;
        if (ci < read_raw_.size() && read_raw_[ci] != sum) {
            v.push_back(
                fmt::format("class {}: raw_channels {} stated, the orbits add up to {}", ci, read_raw_[ci], sum));
        }
        // Completeness, where the channels can be listed: the expanded orbits are exactly the maximal channels.
        if (method_ == CatalogMethod::exact && sum <= static_cast<double>(brute_force_limit) && v.empty()) {
            std::set<FlowIds> expanded;
            for (const auto& ch : c.channels)
                for (auto& inst : expand_orbit(space, ch.flows, brute_force_limit))
                    expanded.insert(std::move(inst));
            const auto all = all_maximal(space, brute_force_limit);
            for (const auto& m : all) {
                if (!expanded.contains(m)) {
                    std::string text;
                    for (FlowId id : m)
                        text += (text.empty() ? "" : "  ") + flow_text(*c.local, space.flows()[id]);
                    v.push_back(fmt::format("class {}: the maximal channel {} is in no orbit", ci, text));
                    break;
                }
            }
            if (v.empty() && all.size() != expanded.size()) {
                v.push_back(fmt::format("class {}: {} channels in the orbits, {} maximal channels exist", ci,
                                        expanded.size(), all.size()));
            }
        }
    }
    if (!v.empty() || method_ != CatalogMethod::hierarchical) return v;

    // One composed channel of the whole topology: channel (i mod count) of each part, every rail shifted by one
    // node. It must be contention-free and maximal among all the topology's paths.
    std::vector<FlowIds> per_domain;
    std::vector<std::size_t> used_in_class(classes_.size(), 0);
    for (const auto& d : domains_) {
        const auto& c = classes_[d.domain_class];
        per_domain.push_back(c.channels[used_in_class[d.domain_class]++ % c.channels.size()].flows);
    }
    std::vector<std::vector<std::size_t>> peers;
    if (pattern_ && pattern_->kind == "rail-aligned") {
        for (std::size_t r = 0; r < pattern_->rails; ++r) {
            std::vector<std::size_t> shift(domains_.size());
            for (std::size_t i = 0; i < domains_.size(); ++i)
                shift[i] =
                    (i + 1 + r) % domains_.size() == i ? (i + 1) % domains_.size() : (i + 1 + r) % domains_.size();
            peers.push_back(std::move(shift));
        }
    }
    Channel composed;
    try {
        composed = compose(per_domain, peers);
    } catch (const DataError& e) {
        v.push_back(fmt::format("composing the parts' channels fails: {}", e.reason()));
        return v;
    }
    const Topology& t = *topology_;
    if (auto why = contention(t, composed)) {
        v.push_back(fmt::format("a composed channel is not contention-free: {}", *why));
        return v;
    }
    std::vector<bool> sending(t.devices.size(), false);
    std::vector<bool> receiving(t.devices.size(), false);
    std::vector<bool> used(t.edge_count(), false);
    for (const auto& f : composed.flows) {
        sending[f.src] = receiving[f.dst] = true;
        for (EdgeId e : f.edges)
            used[e] = true;
    }
    const auto gpus = t.devices_of(DeviceKind::gpu);
    for (DeviceId s : gpus) {
        if (sending[s]) continue;
        for (DeviceId d : gpus) {
            if (d == s || receiving[d]) continue;
            std::vector<topo::Path> paths = router_->alternatives(s, d);
            if (t.devices[s].node != t.devices[d].node) {
                for (DeviceId a : t.devices_of(DeviceKind::nic, t.devices[s].node))
                    for (DeviceId b : t.devices_of(DeviceKind::nic, t.devices[d].node)) {
                        try {
                            const DeviceId via[] = {a, b};
                            paths.push_back(router_->path_through(PathKind::alternate_nic, s, d, via));
                        } catch (const DataError&) {
                        }
                    }
            }
            for (const auto& p : paths) {
                if (!blocked(sending, receiving, used, p)) {
                    v.push_back(fmt::format("a composed channel is not maximal: {}->{} ({}) still fits", t.label(s),
                                            t.label(d), topo::to_string(p.kind)));
                    return v;
                }
            }
        }
    }
    return v;
}

}  // namespace gpuops::alltoall
