// Computing and rendering the SIF report of a cluster state.
#include "gpuops/placement/sif.hpp"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

namespace gpuops::placement {
namespace {

Fgd fgd_of(const std::vector<int>& free, const std::vector<std::int64_t>& instances_by_gpus, std::int64_t instances) {
    Fgd f;
    // larger[k]: share of the running instances with more than k GPUs.
    std::vector<double> larger(instances_by_gpus.size() + 1, 0.0);
    if (instances > 0) {
        for (std::size_t k = instances_by_gpus.size(); k-- > 0;) {
            const std::int64_t above = k + 1 < instances_by_gpus.size() ? instances_by_gpus[k + 1] : 0;
            larger[k] = larger[k + 1] + static_cast<double>(above) / static_cast<double>(instances);
        }
    }
    for (const int n : free) {
        f.free_gpus += n;
        const auto k = static_cast<std::size_t>(n);
        f.fragment_gpus += n * (k < larger.size() ? larger[k] : 0.0);
    }
    f.fragment_ratio = f.free_gpus > 0 ? f.fragment_gpus / static_cast<double>(f.free_gpus) : 0.0;
    return f;
}

std::string ratio(double v) { return fmt::format("{:.6g}", v); }

}  // namespace

SifReport score(const ClusterState& state, std::int64_t state_budget) {
    SifReport r;
    r.nodes = static_cast<std::int64_t>(state.nodes.size());
    r.instances_from = state.instances_from;
    int largest = 0;
    bool uniform = true;
    std::unordered_map<std::string_view, std::size_t> index_of;
    index_of.reserve(state.nodes.size());
    for (std::size_t i = 0; i < state.nodes.size(); ++i) {
        const auto& n = state.nodes[i];
        largest = std::max(largest, n.gpus);
        uniform = uniform && n.gpus == state.nodes.front().gpus;
        r.capacity_gpus += n.gpus;
        index_of.emplace(n.name, i);
    }
    std::vector<int> used(state.nodes.size(), 0);
    r.instances_by_gpus.assign(static_cast<std::size_t>(largest) + 1, 0);
    for (const auto& inst : state.instances) {
        used[index_of.at(inst.node)] += inst.gpus;
        ++r.instances_by_gpus[static_cast<std::size_t>(inst.gpus)];
        r.used_gpus += inst.gpus;
    }
    r.instances = static_cast<std::int64_t>(state.instances.size());

    PackingProblem problem;
    problem.instances_by_size = r.instances_by_gpus;
    problem.nodes_by_capacity.assign(static_cast<std::size_t>(largest) + 1, 0);
    r.nodes_by_free_gpus.assign(static_cast<std::size_t>(largest) + 1, 0);
    std::vector<int> free(state.nodes.size(), 0);
    for (std::size_t i = 0; i < state.nodes.size(); ++i) {
        const int cap = state.nodes[i].gpus;
        ++problem.nodes_by_capacity[static_cast<std::size_t>(cap)];
        free[i] = cap - used[i];
        ++r.nodes_by_free_gpus[static_cast<std::size_t>(free[i])];
        if (used[i] == 0) {
            ++r.empty_nodes;
        } else if (used[i] == cap) {
            ++r.full_nodes;
        } else {
            ++r.phi_pi;
        }
    }
    if (uniform) {
        r.gpus_per_node = largest;
        r.used_gpus_mod_g = r.used_gpus % largest;
        if (largest == 8) r.wcc = check_wcc(r.instances_by_gpus);
    }
    r.phi_star = min_partial_nodes(problem, state_budget);
    if (r.phi_star.value > r.phi_pi) {
        // The state itself is a packing with Φ^π partial nodes, so an exact Φ* above it is a bug.
        throw InternalError(
            fmt::format("Φ* = {} exceeds the {} partial nodes of the state", r.phi_star.value, r.phi_pi));
    }
    const auto n = static_cast<double>(r.nodes);
    r.f_pi = static_cast<double>(r.phi_pi) / n;
    r.f_star = static_cast<double>(r.phi_star.value) / n;
    r.n_sif = r.phi_pi - r.phi_star.value;
    r.sif = static_cast<double>(r.n_sif) / n;
    r.fgd = fgd_of(free, r.instances_by_gpus, r.instances);
    return r;
}

json_io::Json to_json(const SifReport& r, std::string_view tool) {
    using json_io::Json;
    auto doc = json_io::make_header(sif_schema, sif_version, tool);
    doc["nodes"] = r.nodes;
    doc["gpus_per_node"] = r.gpus_per_node ? Json(*r.gpus_per_node) : Json(nullptr);
    doc["capacity_gpus"] = r.capacity_gpus;
    doc["used_gpus"] = r.used_gpus;
    doc["used_gpus_mod_g"] = r.used_gpus_mod_g ? Json(*r.used_gpus_mod_g) : Json(nullptr);
    doc["instances"] = r.instances;
    Json by_size = Json::object();
    for (std::size_t g = 1; g < r.instances_by_gpus.size(); ++g)
        if (r.instances_by_gpus[g] > 0) by_size[std::to_string(g)] = r.instances_by_gpus[g];
    doc["instances_by_gpus"] = by_size;
    doc["instances_from"] = to_string(r.instances_from);
    doc["full_nodes"] = r.full_nodes;
    doc["empty_nodes"] = r.empty_nodes;
    doc["phi_pi"] = r.phi_pi;
    doc["phi_star"] = r.phi_star.value;
    doc["phi_star_exact"] = r.phi_star.exact;
    doc["phi_star_method"] = to_string(r.phi_star.method);
    doc["f_pi"] = r.f_pi;
    doc["f_star"] = r.f_star;
    doc["sif"] = r.sif;
    doc["n_sif"] = r.n_sif;
    doc["wcc"] = r.wcc ? Json{{"holds", r.wcc->holds}, {"deficit", r.wcc->deficit}} : Json(nullptr);
    doc["nodes_by_free_gpus"] = r.nodes_by_free_gpus;
    doc["fgd"] = {{"fragment_gpus", r.fgd.fragment_gpus},
                  {"free_gpus", r.fgd.free_gpus},
                  {"fragment_ratio", r.fgd.fragment_ratio}};
    return doc;
}

std::string render_text(const SifReport& r) {
    std::string out;
    const std::string shape = r.gpus_per_node ? fmt::format("{} nodes x {} GPUs", r.nodes, *r.gpus_per_node)
                                              : fmt::format("{} nodes of mixed sizes", r.nodes);
    out += fmt::format("cluster        {}, {} of {} GPUs used", shape, r.used_gpus, r.capacity_gpus);
    if (r.used_gpus_mod_g) out += fmt::format(" (T mod {} = {})", *r.gpus_per_node, *r.used_gpus_mod_g);
    out += '\n';
    std::string sizes;
    for (std::size_t g = 1; g < r.instances_by_gpus.size(); ++g)
        if (r.instances_by_gpus[g] > 0) sizes += fmt::format(" {}x{}", r.instances_by_gpus[g], g);
    out += fmt::format("instances      {}{}{}\n", r.instances, sizes.empty() ? "" : " (count x GPUs:" + sizes + ")",
                       r.instances_from == InstanceSource::node_usage ? ", one per node's usage" : "");
    out += fmt::format("nodes          {} partial, {} full, {} empty\n", r.phi_pi, r.full_nodes, r.empty_nodes);
    out += fmt::format("phi_pi         {}  (F_pi = {})\n", r.phi_pi, ratio(r.f_pi));
    const char* how = r.phi_star.method == PhiStarMethod::closed_form ? "closed form under WCC"
                      : r.phi_star.exact                              ? "exact search"
                                                                      : "lower bound: search budget exhausted";
    out += fmt::format("phi_star       {}  (F* = {}; {})\n", r.phi_star.value, ratio(r.f_star), how);
    out += fmt::format("SIF            {}  (N*SIF = {} avoidable partial node{}{})\n", ratio(r.sif), r.n_sif,
                       r.n_sif == 1 ? "" : "s", r.phi_star.exact ? "" : "; an upper estimate");
    if (r.wcc) {
        out += r.wcc->holds ? std::string("WCC            holds\n")
                            : fmt::format("WCC            fails (deficit {} one-GPU instances)\n", r.wcc->deficit);
    }
    std::string hist;
    for (std::size_t f = 0; f < r.nodes_by_free_gpus.size(); ++f)
        if (r.nodes_by_free_gpus[f] > 0) hist += fmt::format(" {}:{}", f, r.nodes_by_free_gpus[f]);
    out += fmt::format("free GPUs      (free:nodes){}\n", hist);
    out += fmt::format("FGD            {} fragment of {} free GPUs (ratio {})\n", ratio(r.fgd.fragment_gpus),
                       r.fgd.free_gpus, ratio(r.fgd.fragment_ratio));
    return out;
}

}  // namespace gpuops::placement
