// The plan: chunk layout, the exactly-once checker of hop chains, the cut lower bound, and the gpuops.plan
// document.
#include "gpuops/alltoall/plan.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"

namespace gpuops::alltoall {
namespace {

using json_io::Json;
using json_io::View;
using topo::DeviceId;
using topo::DeviceKind;
using topo::EdgeId;
using topo::PathKind;
using topo::Topology;

double gbytes(double bytes_per_s) { return std::round(bytes_per_s / 1e3) / 1e6; }

std::optional<PathKind> path_kind(std::string_view name) {
    for (auto k : {PathKind::direct, PathKind::nic_loopback, PathKind::host_staging, PathKind::alternate_nic})
        if (topo::to_string(k) == name) return k;
    return std::nullopt;
}

/// One transfer's bytes [begin, end) of its origin's send buffer: where in the plan, and between which GPUs.
struct Hop {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::size_t step = 0;
    std::size_t index = 0;  ///< in its step
    std::size_t src = 0;
    std::size_t dst = 0;
};

/// What is wrong with the chain of hops that carries one piece of origin o's send buffer (bytes of one chunk,
/// carried by the same hops) to `target`, or "" when it goes from o to target once. `chain` is in plan order.
std::string chain_fault(const std::vector<const Hop*>& chain, std::size_t o, std::size_t target,
                        const std::function<std::string(std::size_t)>& label) {
    std::size_t at = o;
    std::vector<std::pair<std::size_t, std::size_t>> left;  // (GPU, step) the bytes left so far
    std::optional<std::size_t> arrived;                     // the step they arrived on `at` in
    std::optional<std::size_t> delivered;                   // the step they arrived on target in
    for (const Hop* h : chain) {
        if (h->src != at) {
            for (const auto& [gpu, step] : left)
                if (gpu == h->src)
                    return fmt::format("are sent twice from {} (steps {} and {})", label(gpu), step, h->step);
            return fmt::format("leave {} in step {} before they arrive there", label(h->src), h->step);
        }
        if (arrived && h->step <= *arrived) {
            return fmt::format("arrive on {} in step {} and leave it in the same step (a relay forwards them in a "
                               "later one)",
                               label(at), *arrived);
        }
        left.emplace_back(at, h->step);
        at = h->dst;
        arrived = h->step;
        if (at == target) {
            if (delivered) return fmt::format("arrive on {} twice (steps {} and {})", label(at), *delivered, h->step);
            delivered = h->step;
        }
    }
    if (at != target) return fmt::format("end on {}, not on {}", label(at), label(target));
    return "";
}

/// Checks every piece of origin o's send buffer: each byte of an off-diagonal chunk travels one chain of hops
/// to its destination; no byte of o's own chunk, or beyond the buffer, moves. Adjacent pieces with the same
/// fault are one violation.
void check_chains(const Demand& demand, const Topology& t, std::size_t o, std::vector<Hop>& hops,
                  std::vector<std::string>& v, std::size_t max_violations) {
    const std::size_t n = demand.size();
    const auto label = [&](std::size_t i) { return t.label(demand.gpus[i]); };
    std::vector<std::uint64_t> starts(n + 1, 0);  // chunk (o, j) is [starts[j], starts[j + 1])
    for (std::size_t j = 0; j < n; ++j)
        starts[j + 1] = starts[j] + demand.at(o, j);
    std::vector<std::uint64_t> cuts = starts;
    for (const auto& h : hops) {
        cuts.push_back(h.begin);
        cuts.push_back(h.end);
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::sort(hops.begin(), hops.end(), [](const Hop& a, const Hop& b) { return a.begin < b.begin; });
    struct Finding {
        std::string head;  ///< the pair (or the GPU) the bytes belong to
        std::string what;
        std::uint64_t lo = 0;
        std::uint64_t hi = 0;
    };
    std::optional<Finding> pending;
    const auto flush = [&] {
        if (pending && v.size() < max_violations) {
            v.push_back(fmt::format("{}: bytes {}..{} of the send buffer {}", pending->head, pending->lo, pending->hi,
                                    pending->what));
        }
        pending.reset();
    };
    std::size_t next = 0;
    std::vector<const Hop*> active;  // the hops carrying the current piece
    for (std::size_t c = 0; c + 1 < cuts.size() && v.size() < max_violations; ++c) {
        const std::uint64_t lo = cuts[c];
        const std::uint64_t hi = cuts[c + 1];
        std::erase_if(active, [&](const Hop* h) { return h->end <= lo; });
        for (; next < hops.size() && hops[next].begin <= lo; ++next)
            if (hops[next].end > lo) active.push_back(&hops[next]);
        Finding f{"", "", lo, hi};
        if (lo >= starts[n]) {
            if (!active.empty()) f.what = fmt::format("lie beyond its end ({} bytes), yet are sent", starts[n]);
            f.head = label(o);
        } else {
            const auto j =
                static_cast<std::size_t>(std::upper_bound(starts.begin(), starts.end(), lo) - starts.begin() - 1);
            if (j == o) {
                if (!active.empty()) f.what = "are its own chunk (a local copy), yet are sent";
            } else if (active.empty()) {
                f.what = "are never sent";
            } else {
                std::vector<const Hop*> chain = active;
                std::sort(chain.begin(), chain.end(), [](const Hop* a, const Hop* b) {
                    return std::tie(a->step, a->index) < std::tie(b->step, b->index);
                });
                f.what = chain_fault(chain, o, j, label);
            }
            if (!f.what.empty()) f.head = j == o ? label(o) : fmt::format("{}->{}", label(o), label(j));
        }
        if (f.what.empty()) {
            flush();
        } else if (pending && pending->head == f.head && pending->what == f.what && pending->hi == lo) {
            pending->hi = hi;
        } else {
            flush();
            pending = std::move(f);
        }
    }
    flush();
}

}  // namespace

std::uint64_t chunk_offset(const Demand& demand, std::size_t i, std::size_t j) {
    std::uint64_t offset = 0;
    for (std::size_t k = 0; k < j; ++k)
        offset += demand.at(i, k);
    return offset;
}

Transfer make_transfer(const Demand& demand, std::size_t i, std::size_t j, const topo::Path& path, std::uint64_t offset,
                       std::uint64_t bytes) {
    (void)demand;
    Transfer t;
    t.src = i;
    t.dst = j;
    t.kind = path.kind;
    t.via = path.via;
    t.edges = path.edges;
    std::sort(t.edges.begin(), t.edges.end());
    t.rate = path.bottleneck;
    t.offset = offset;
    t.bytes = bytes;
    return t;
}

Transfer make_hop(const Demand& demand, std::size_t origin, std::size_t i, std::size_t j, const topo::Path& path,
                  std::uint64_t offset, std::uint64_t bytes) {
    Transfer t = make_transfer(demand, i, j, path, offset, bytes);
    if (origin != i) t.origin = origin;
    return t;
}

std::vector<std::string> check_plan(const Plan& plan, const Demand& demand, const topo::Router& router,
                                    std::size_t max_violations) {
    std::vector<std::string> v;
    const Topology& t = router.topology();
    const std::size_t n = demand.size();
    const auto pair_text = [&](std::size_t i, std::size_t j) {
        return fmt::format("{}->{}", t.label(demand.gpus[i]), t.label(demand.gpus[j]));
    };
    std::vector<std::vector<Hop>> hops(n);  // per origin: the hops of its send buffer's bytes
    for (std::size_t s = 0; s < plan.steps.size() && v.size() < max_violations; ++s) {
        std::set<EdgeId> edges_used;
        std::set<std::size_t> senders;
        std::set<std::size_t> receivers;
        for (std::size_t k = 0; k < plan.steps[s].transfers.size() && v.size() < max_violations; ++k) {
            const Transfer& tr = plan.steps[s].transfers[k];
            const auto where = fmt::format("step {} transfer {}", s, k);
            if (tr.src >= n || tr.dst >= n || tr.origin_gpu() >= n) {
                v.push_back(fmt::format("{}: no such GPU", where));
                continue;
            }
            if (tr.src == tr.dst) {
                v.push_back(fmt::format("{}: {} sends to itself over a link", where, t.label(demand.gpus[tr.src])));
                continue;
            }
            try {
                auto path = router.path_through(tr.kind, demand.gpus[tr.src], demand.gpus[tr.dst], tr.via);
                std::sort(path.edges.begin(), path.edges.end());
                if (path.edges != tr.edges) {
                    v.push_back(fmt::format("{}: {} does not follow its {} path", where, pair_text(tr.src, tr.dst),
                                            topo::to_string(tr.kind)));
                    continue;
                }
            } catch (const DataError& e) {
                v.push_back(fmt::format("{}: {}: {}", where, pair_text(tr.src, tr.dst), e.reason()));
                continue;
            }
            if (plan.exclusive) {
                if (!senders.insert(tr.src).second) {
                    v.push_back(fmt::format("{}: {} sends twice in one step", where, t.label(demand.gpus[tr.src])));
                }
                if (!receivers.insert(tr.dst).second) {
                    v.push_back(fmt::format("{}: {} receives twice in one step", where, t.label(demand.gpus[tr.dst])));
                }
                for (EdgeId e : tr.edges) {
                    if (!edges_used.insert(e).second) {
                        const auto edge = t.edge(e);
                        v.push_back(fmt::format("{}: the edge {}->{} carries two transfers in one step", where,
                                                t.label(edge.from), t.label(edge.to)));
                        break;
                    }
                }
            }
            if (tr.bytes > 0)
                hops[tr.origin_gpu()].push_back(Hop{tr.offset, tr.offset + tr.bytes, s, k, tr.src, tr.dst});
        }
    }
    // Every byte of every chunk (i, j) travels one chain of hops from i to j: a plain transfer is a chain of one.
    for (std::size_t o = 0; o < n && v.size() < max_violations; ++o)
        check_chains(demand, t, o, hops[o], v, max_violations);
    if (!v.empty()) return v;
    // The numbers: recomputed from the demand, the topology and the plan's model (documents round them to
    // a thousandth of a microsecond).
    const auto close = [](double a, double b) { return std::abs(a - b) <= 0.002 + 1e-9 * std::abs(b); };
    const double bound = cut_lower_bound_us(demand, t);
    if (!close(plan.lower_bound_us, bound)) {
        v.push_back(fmt::format("the lower bound is {:.3f} us, not {:.3f} us", bound, plan.lower_bound_us));
    }
    Plan timed = plan;
    time_plan_steps(timed, t);
    if (!close(plan.predicted_time_us, timed.predicted_time_us)) {
        v.push_back(fmt::format("the model predicts {:.3f} us for these steps, not {:.3f} us", timed.predicted_time_us,
                                plan.predicted_time_us));
    }
    if (v.size() < max_violations && timed.predicted_time_us < bound * (1 - 1e-9)) {
        v.push_back(fmt::format("the predicted time {:.3f} us is below the lower bound {:.3f} us",
                                timed.predicted_time_us, bound));
    }
    return v;
}

void time_plan_steps(Plan& plan, const Topology& topology) {
    plan.predicted_time_us = 0;
    for (auto& step : plan.steps) {
        std::vector<ModelFlow> flows;
        flows.reserve(step.transfers.size());
        // Transfers between the same two GPUs on the same path are one message (a relay forwards what several
        // origins gave it at once): one flow, not several that the model would have contend.
        std::map<std::pair<std::size_t, std::size_t>, std::vector<std::size_t>> messages;  // (src, dst): flows
        for (const auto& tr : step.transfers) {
            auto& same_pair = messages[{tr.src, tr.dst}];
            const auto same = std::find_if(same_pair.begin(), same_pair.end(),
                                           [&](std::size_t f) { return flows[f].edges == tr.edges; });
            if (same != same_pair.end()) {
                flows[*same].bytes += static_cast<double>(tr.bytes);
                continue;
            }
            same_pair.push_back(flows.size());
            double latency = 0;
            for (auto e : tr.edges)
                latency += topology.edge(e).latency_us;
            flows.push_back(ModelFlow{tr.edges, static_cast<double>(tr.bytes), latency});
        }
        step.time_us = plan.model.alpha_us + simulate_phase(topology, flows, plan.model).time_us;
        plan.predicted_time_us += step.time_us;
    }
}

double cut_lower_bound_us(const Demand& demand, const Topology& t) {
    const std::size_t n = demand.size();
    // Per device: traffic leaving/entering its subtree, split by whether the far end is in the same node.
    struct Flow {
        double out_same = 0, out_cross = 0, in_same = 0, in_cross = 0;
    };
    std::vector<Flow> cut(t.devices.size());
    std::vector<std::vector<DeviceId>> chain(n);  // each GPU and its ancestors, bottom-up
    for (std::size_t i = 0; i < n; ++i)
        for (DeviceId d = demand.gpus[i]; d != topo::no_device; d = t.devices[d].parent)
            chain[i].push_back(d);
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
            const auto bytes = static_cast<double>(demand.at(i, j));
            if (i == j || bytes == 0) continue;
            const bool same_node = t.devices[demand.gpus[i]].node == t.devices[demand.gpus[j]].node;
            // Subtrees holding i but not j: everything on i's chain below the lowest common ancestor.
            const auto& ci = chain[i];
            const auto& cj = chain[j];
            for (DeviceId d : ci) {
                if (std::find(cj.begin(), cj.end(), d) != cj.end()) break;
                (same_node ? cut[d].out_same : cut[d].out_cross) += bytes;
            }
            for (DeviceId d : cj) {
                if (std::find(ci.begin(), ci.end(), d) != ci.end()) break;
                (same_node ? cut[d].in_same : cut[d].in_cross) += bytes;
            }
        }
    }
    // Capacities: a subtree's uplink; the fabric ports of the NICs inside it (traffic to other nodes may leave
    // through them instead); a socket's interconnect links (same-node traffic cannot avoid them).
    std::vector<double> port_capacity(t.devices.size(), 0);
    std::vector<double> side_capacity(t.devices.size(), 0);
    for (const auto& l : t.links) {
        if (l.kind == topo::LinkKind::network) {
            for (DeviceId end : {l.a, l.b}) {
                if (t.devices[end].kind != DeviceKind::nic) continue;
                for (DeviceId d = end; d != topo::no_device; d = t.devices[d].parent)
                    port_capacity[d] += l.bandwidth;
            }
        } else if (l.kind == topo::LinkKind::socket_interconnect) {
            side_capacity[l.a] += l.bandwidth;
            side_capacity[l.b] += l.bandwidth;
        }
    }
    const auto uplinks = t.uplink_index();
    double bound = 0;
    const auto consider = [&](double bytes, double capacity) {
        if (bytes > 0 && capacity > 0) bound = std::max(bound, bytes / capacity);
    };
    for (const auto& d : t.devices) {
        const Flow& f = cut[d.id];
        const double up = uplinks[d.id] ? t.links[*uplinks[d.id]].bandwidth : side_capacity[d.id];
        consider(f.out_same, up);
        consider(f.in_same, up);
        consider(f.out_same + f.out_cross, up + port_capacity[d.id]);
        consider(f.in_same + f.in_cross, up + port_capacity[d.id]);
    }
    // A node: everything to other nodes leaves through its fabric ports.
    std::vector<double> node_out(t.nodes.size(), 0);
    std::vector<double> node_in(t.nodes.size(), 0);
    std::vector<double> node_ports(t.nodes.size(), 0);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            const int a = t.devices[demand.gpus[i]].node;
            const int b = t.devices[demand.gpus[j]].node;
            if (a == b) continue;
            node_out[static_cast<std::size_t>(a)] += static_cast<double>(demand.at(i, j));
            node_in[static_cast<std::size_t>(b)] += static_cast<double>(demand.at(i, j));
        }
    for (const auto& l : t.links)
        if (l.kind == topo::LinkKind::network)
            for (DeviceId end : {l.a, l.b})
                if (t.devices[end].kind == DeviceKind::nic)
                    node_ports[static_cast<std::size_t>(t.devices[end].node)] += l.bandwidth;
    for (std::size_t k = 0; k < t.nodes.size(); ++k) {
        consider(node_out[k], node_ports[k]);
        consider(node_in[k], node_ports[k]);
    }
    return bound * 1e6;
}

Json to_json(const Plan& plan, const Demand& demand, const Topology& t) {
    Json doc = json_io::make_header("gpuops.plan", plan_schema_version, "vp-plan");
    doc["algorithm"] = plan.algorithm;
    doc["exclusive"] = plan.exclusive;
    doc["predicted_time_us"] = std::round(plan.predicted_time_us * 1000) / 1000;
    doc["lower_bound_us"] = std::round(plan.lower_bound_us * 1000) / 1000;
    doc["efficiency"] = std::round(plan.efficiency * 1e6) / 1e6;
    doc["planning_time_us"] = std::round(plan.planning_time_us * 1000) / 1000;
    doc["model"] = to_json(plan.model);
    doc["demand"] = to_json(demand, t);  // the whole gpuops.demand: a plan is checkable on its own
    Json steps = Json::array();
    for (const auto& s : plan.steps) {
        Json transfers = Json::array();
        for (const auto& tr : s.transfers) {
            Json via = Json::array();
            for (DeviceId d : tr.via)
                via.push_back(t.label(d));
            Json jt = {{"src", t.label(demand.gpus[tr.src])}, {"dst", t.label(demand.gpus[tr.dst])}};
            // Optional (absent: src), so that version 1 readers of plans without relays see what they did.
            if (tr.origin_gpu() != tr.src) jt["origin"] = t.label(demand.gpus[tr.origin_gpu()]);
            jt["path"] = std::string(topo::to_string(tr.kind));
            jt["via"] = std::move(via);
            jt["offset_bytes"] = tr.offset;
            jt["bytes"] = tr.bytes;
            jt["rate_gbytes_per_s"] = gbytes(tr.rate);
            transfers.push_back(std::move(jt));
        }
        steps.push_back({{"time_us", std::round(s.time_us * 1000) / 1000}, {"transfers", std::move(transfers)}});
    }
    doc["steps"] = std::move(steps);
    return doc;
}

Plan plan_from_json(const Json& doc, const Demand& demand, const topo::Router& router, std::string_view source_name) {
    try {
        json_io::check_header(doc, "gpuops.plan", plan_schema_version);
        const View root(doc);
        const Topology& t = router.topology();
        Plan plan;
        plan.algorithm = root.at("algorithm").as_string();
        plan.exclusive = root.at("exclusive").as_bool();
        plan.predicted_time_us = root.at("predicted_time_us").as_number();
        plan.lower_bound_us = root.at("lower_bound_us").as_number();
        plan.efficiency = root.at("efficiency").as_number();
        plan.planning_time_us = root.at("planning_time_us").as_number();
        const View model = root.at("model");
        try {
            plan.model = read_model(model.json(), source_name);
        } catch (const DataError& e) {
            throw e.where().pointer.empty() ? e : e.under_pointer(model.pointer());
        }
        std::unordered_map<std::string, std::size_t> index;
        for (std::size_t i = 0; i < demand.size(); ++i)
            index.emplace(t.label(demand.gpus[i]), i);
        const auto gpu = [&](const View& v) {
            const auto it = index.find(v.as_string());
            if (it == index.end()) throw v.error(fmt::format("no GPU {} in the topology", quote(v.as_string())));
            return it->second;
        };
        for (const View& js : root.at("steps").items()) {
            Step s;
            s.time_us = js.at("time_us").as_number();
            for (const View& jt : js.at("transfers").items()) {
                Transfer tr;
                tr.src = gpu(jt.at("src"));
                tr.dst = gpu(jt.at("dst"));
                if (const auto origin = jt.find("origin")) {
                    const std::size_t o = gpu(*origin);
                    if (o != tr.src) tr.origin = o;
                }
                const View kind = jt.at("path");
                const auto k = path_kind(kind.as_string());
                if (!k) throw kind.error(fmt::format("unknown path kind {}", quote(kind.as_string())));
                tr.kind = *k;
                for (const View& v : jt.at("via").items()) {
                    const auto name = v.as_string();
                    std::optional<DeviceId> found;
                    for (const auto& d : t.devices)
                        if (t.label(d.id) == name) found = d.id;
                    if (!found) throw v.error(fmt::format("no device {} in the topology", quote(name)));
                    tr.via.push_back(*found);
                }
                tr.offset = static_cast<std::uint64_t>(jt.at("offset_bytes").as_int(0, INT64_MAX));
                tr.bytes = static_cast<std::uint64_t>(jt.at("bytes").as_int(0, INT64_MAX));
                if (tr.src == tr.dst) throw jt.error("a transfer from a GPU to itself");
                try {
                    auto path = router.path_through(tr.kind, demand.gpus[tr.src], demand.gpus[tr.dst], tr.via);
                    std::sort(path.edges.begin(), path.edges.end());
                    tr.edges = std::move(path.edges);
                    tr.rate = path.bottleneck;
                } catch (const DataError& e) {
                    throw jt.error(e.reason());
                }
                s.transfers.push_back(std::move(tr));
            }
            plan.steps.push_back(std::move(s));
        }
        return plan;
    } catch (const DataError& e) {
        if (e.where().file.empty()) throw e.in_file(std::string(source_name));
        throw;
    }
}

std::string render_text(const Plan& plan, const Demand& demand, const Topology& t) {
    const auto plural = [](std::size_t n, std::string_view word) {
        return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
    };
    std::string out = fmt::format("{} plan for {} ({} GPUs, {} bytes): {}\n", plan.algorithm, demand.source,
                                  demand.size(), demand.total(), plural(plan.steps.size(), "step"));
    out += fmt::format("  predicted time   {:.3f} us\n", plan.predicted_time_us);
    out += fmt::format("  lower bound      {:.3f} us\n", plan.lower_bound_us);
    out += fmt::format("  efficiency       {:.3f}\n", plan.efficiency);
    out += fmt::format("  planning time    {:.1f} us\n", plan.planning_time_us);
    for (std::size_t s = 0; s < plan.steps.size(); ++s) {
        const auto& step = plan.steps[s];
        std::uint64_t bytes = 0;
        for (const auto& tr : step.transfers)
            bytes += tr.bytes;
        out += fmt::format("  step {:>3}: {:>9.3f} us  {:>13}  {:>12} bytes", s, step.time_us,
                           plural(step.transfers.size(), "transfer"), bytes);
        if (step.transfers.size() <= 8) {
            for (const auto& tr : step.transfers)
                out += fmt::format(
                    "  {}->{}{}{}", t.label(demand.gpus[tr.src]), t.label(demand.gpus[tr.dst]),
                    tr.kind == topo::PathKind::direct ? "" : fmt::format("({})", topo::to_string(tr.kind)),
                    tr.origin_gpu() != tr.src ? fmt::format("[of {}]", t.label(demand.gpus[tr.origin_gpu()])) : "");
        }
        out += "\n";
    }
    return out;
}

}  // namespace gpuops::alltoall
