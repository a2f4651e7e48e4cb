// A single placement decision and its gpuops.placement document.
#include "gpuops/placement/decision.hpp"

#include <fmt/format.h>

namespace gpuops::placement {
namespace {

json_io::Json sif_summary(const SifReport& r) {
    return {
        {"phi_pi", r.phi_pi}, {"phi_star", r.phi_star.value}, {"phi_star_exact", r.phi_star.exact}, {"n_sif", r.n_sif},
        {"sif", r.sif},       {"empty_nodes", r.empty_nodes}, {"full_nodes", r.full_nodes}};
}

json_io::Json abs_summary(const AbsStats& s) {
    return {{"empty_nodes", s.empty},
            {"pool_nodes", s.pool},
            {"slotted_nodes", s.slotted},
            {"outside_nodes", s.outside},
            {"partial_pool_nodes", s.partial_pool},
            {"partial_slotted_nodes", s.partial_slotted},
            {"vacant_slots", s.vacant_slots},
            {"pinned_instances", s.pinned_instances}};
}

/// GPU ids for a human: 0-3,6.
std::string id_list(const std::vector<int>& ids) {
    std::string out;
    for (std::size_t k = 0; k < ids.size();) {
        std::size_t e = k;
        while (e + 1 < ids.size() && ids[e + 1] == ids[e] + 1)
            ++e;
        if (!out.empty()) out += ',';
        out += e > k ? fmt::format("{}-{}", ids[k], ids[e]) : std::to_string(ids[k]);
        k = e + 1;
    }
    return out;
}

}  // namespace

DecisionReport decide(const ClusterState& state, const JobRequest& job, PolicyKind policy, const PolicyOptions& options,
                      std::int64_t state_budget) {
    DecisionReport r;
    r.policy = policy;
    r.options = options;
    r.job = job;
    auto p = make_policy(policy, state, options);
    r.before = p->snapshot();
    if (const auto* compass = dynamic_cast<const CompassPolicy*>(p.get())) r.abs_before = compass->abs().stats();
    std::vector<Migration> first;
    if (policy == PolicyKind::repack) first = p->rebalance();
    r.decision = p->place(job);
    r.decision.migrations.insert(r.decision.migrations.begin(), first.begin(), first.end());
    r.after = p->snapshot();
    if (const auto* compass = dynamic_cast<const CompassPolicy*>(p.get())) r.abs_after = compass->abs().stats();
    r.sif_before = score(r.before, state_budget);
    r.sif_after = score(r.after, state_budget);
    return r;
}

json_io::Json to_json(const DecisionReport& r, std::string_view tool) {
    using json_io::Json;
    auto doc = json_io::make_header(placement_schema, placement_version, tool);
    auto name = [&](NodeId n) { return r.before.nodes[static_cast<std::size_t>(n)].name; };
    doc["policy"] = to_string(r.policy);
    doc["relaxed"] = r.policy == PolicyKind::compass ? Json(r.options.relaxed) : Json(nullptr);
    doc["seed"] = r.policy == PolicyKind::random ? Json(r.options.seed) : Json(nullptr);
    doc["job"] = {{"job", r.job.name}, {"instances", r.job.instances}, {"gpus_per_instance", r.job.gpus_per_instance}};
    doc["wait"] = r.decision.wait;
    doc["wait_reason"] = r.decision.wait ? Json(r.decision.wait_reason) : Json(nullptr);
    auto& placements = doc["placements"] = Json::array();
    for (const auto& p : r.decision.placements)
        placements.push_back({{"instance", p.instance}, {"node", name(p.node)}, {"gpu_ids", p.gpu_ids}});
    auto& migrations = doc["migrations"] = Json::array();
    for (const auto& m : r.decision.migrations) {
        migrations.push_back({{"job", m.job},
                              {"instance", m.instance},
                              {"from", {{"node", name(m.from_node)}, {"gpu_ids", m.from_gpus}}},
                              {"to", {{"node", name(m.to_node)}, {"gpu_ids", m.to_gpus}}}});
    }
    doc["sif_before"] = sif_summary(r.sif_before);
    doc["sif_after"] = sif_summary(r.sif_after);
    doc["abs_before"] = r.abs_before ? abs_summary(*r.abs_before) : Json(nullptr);
    doc["abs_after"] = r.abs_after ? abs_summary(*r.abs_after) : Json(nullptr);
    return doc;
}

std::string render_text(const DecisionReport& r) {
    auto name = [&](NodeId n) { return r.before.nodes[static_cast<std::size_t>(n)].name; };
    std::string out;
    std::string policy(to_string(r.policy));
    if (r.policy == PolicyKind::compass) policy += r.options.relaxed ? " (relaxed ABS)" : " (strict ABS)";
    if (r.policy == PolicyKind::random) policy += fmt::format(" (seed {})", r.options.seed);
    out += fmt::format("policy      {}\n", policy);
    out += fmt::format("job         {}: {} x {} GPU{}\n", r.job.name, r.job.instances, r.job.gpus_per_instance,
                       r.job.gpus_per_instance == 1 ? "" : "s");
    out += r.decision.wait ? fmt::format("decision    wait: {}\n", r.decision.wait_reason)
                           : std::string("decision    placed\n");
    for (const auto& p : r.decision.placements)
        out += fmt::format("place       instance {} on {} GPUs {}\n", p.instance, name(p.node), id_list(p.gpu_ids));
    for (const auto& m : r.decision.migrations) {
        out += fmt::format("migrate     {} instance {}: {} GPUs {} -> {} GPUs {}\n", quote(m.job), m.instance,
                           name(m.from_node), id_list(m.from_gpus), name(m.to_node), id_list(m.to_gpus));
    }
    if (r.decision.migrations.empty()) out += "migrate     nothing\n";
    out += fmt::format("partial     {} node{} before, {} after (phi_star {} -> {})\n", r.sif_before.phi_pi,
                       r.sif_before.phi_pi == 1 ? "" : "s", r.sif_after.phi_pi, r.sif_before.phi_star.value,
                       r.sif_after.phi_star.value);
    out += fmt::format("SIF         {:.6g} before (N*SIF = {}), {:.6g} after (N*SIF = {})\n", r.sif_before.sif,
                       r.sif_before.n_sif, r.sif_after.sif, r.sif_after.n_sif);
    if (r.abs_before && (r.abs_before->pinned_instances > 0 || r.abs_before->outside > 0)) {
        out += fmt::format("ABS         {} instance{} pinned outside ABS, {} node{} outside\n",
                           r.abs_before->pinned_instances, r.abs_before->pinned_instances == 1 ? "" : "s",
                           r.abs_before->outside, r.abs_before->outside == 1 ? "" : "s");
    }
    return out;
}

}  // namespace gpuops::placement
