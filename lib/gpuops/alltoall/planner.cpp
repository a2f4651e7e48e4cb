// The VarioPath planner (Eclipse-style greedy over the catalog's channel instances), the dispatcher over all
// algorithms, and plan timing with the flow model.
#include "gpuops/alltoall/planner.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "gpuops/alltoall/deepep.hpp"
#include "gpuops/alltoall/fast.hpp"
#include "gpuops/core/error.hpp"

namespace gpuops::alltoall {
namespace {

/// Channel instances the planner keeps in memory (8 bytes a flow): 4M instances of 8 flows is 256 MB.
constexpr double max_instances = 4e6;

}  // namespace

const std::vector<std::string>& algorithm_names() {
    static const std::vector<std::string> names{"variopath", "direct", "pairwise", "bvn", "deepep-pcie", "fast"};
    return names;
}

VarioPathPlanner::VarioPathPlanner(const Catalog& catalog, const topo::Router& router, StepSearch search) {
    const auto& t = router.topology();
    if (catalog.fingerprint() != topology_fingerprint(t)) {
        throw DataError("the catalog was built for another topology");
    }
    const bool listable = catalog.method() == CatalogMethod::exact && catalog.stats().raw_channels <= max_instances;
    if (search == StepSearch::scan && catalog.method() != CatalogMethod::exact) {
        throw DataError("scanning every channel needs an exact catalog (vp-catalog --method exact); this one is "
                        "hierarchical (parts joined by ports)");
    }
    if (search == StepSearch::scan && !listable) {
        throw DataError(fmt::format("the catalog stands for {:.3g} channels, more than the {:.0f} a scan lists",
                                    catalog.stats().raw_channels, max_instances));
    }
    if (search == StepSearch::packing) {
        packing_ = std::make_shared<const PackingPlanner>(catalog, router);
        gpus_ = packing_->gpus();
        return;
    }
    const auto gpus = t.devices_of(topo::DeviceKind::gpu);
    gpus_ = gpus.size();
    std::vector<std::size_t> index_of(t.devices.size(), gpus_);
    for (std::size_t i = 0; i < gpus.size(); ++i)
        index_of[gpus[i]] = i;
    const Domain& domain = catalog.domains().front();
    const DomainClass& cls = catalog.classes().front();
    for (const auto& f : cls.space->flows()) {
        std::vector<topo::DeviceId> via;
        for (auto v : f.via)
            via.push_back(domain.global[v]);
        const auto src = domain.global[f.src];
        const auto dst = domain.global[f.dst];
        flows_.push_back(PairFlow{index_of[src], index_of[dst], router.path_through(f.kind, src, dst, via)});
    }
    edge_count_ = t.edge_count();
    for (topo::EdgeId e = 0; e < edge_count_; ++e)
        capacity_.push_back(t.edge(e).bandwidth);
    default_edges_.resize(gpus_ * gpus_);
    for (std::size_t i = 0; i < gpus_; ++i)
        for (std::size_t j = 0; j < gpus_; ++j)
            if (i != j) default_edges_[i * gpus_ + j] = router.route(gpus[i], gpus[j]).edges;
    // Instances by their total rate, fastest first: a step's score (bytes per second) never exceeds the rate
    // of its instance's flows together, so the scan stops at the first instance that cannot win.
    std::vector<std::pair<double, FlowIds>> all;
    for (std::size_t k = 0; k < cls.channels.size(); ++k) {
        for (auto& inst : catalog.instances(0, k, 100'000'000)) {
            double rate = 0;
            for (auto f : inst)
                rate += flows_[f].path.bottleneck;
            all.emplace_back(rate, std::move(inst));
        }
    }
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    instance_start_.push_back(0);
    for (auto& [rate, inst] : all) {
        instance_rate_.push_back(rate);
        instance_flows_.insert(instance_flows_.end(), inst.begin(), inst.end());
        instance_start_.push_back(static_cast<std::uint32_t>(instance_flows_.size()));
    }
}

Plan VarioPathPlanner::plan(const Demand& demand, const ModelParams& model) const {
    if (packing_) return packing_->plan(demand, model);
    const std::size_t n = demand.size();
    if (n != gpus_)
        throw DataError(fmt::format("the demand is {}x{}, the catalog's topology has {} GPUs", n, n, gpus_));
    Plan plan;
    plan.algorithm = "variopath";
    plan.exclusive = true;
    std::vector<std::uint64_t> residual(n * n, 0);
    std::vector<std::uint64_t> sent(n * n, 0);
    std::uint64_t left = 0;
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
            if (i != j) {
                residual[i * n + j] = demand.at(i, j);
                left += demand.at(i, j);
            }
    const double alpha = model.alpha_us * 1e-6;
    const std::size_t instances = instance_start_.size() - 1;
    // Flat per-flow arrays for the scan: the pair's slot in the residual and the path's rate.
    std::vector<std::uint32_t> slot(flows_.size());
    std::vector<double> rate(flows_.size());
    for (std::size_t f = 0; f < flows_.size(); ++f) {
        slot[f] = static_cast<std::uint32_t>(flows_[f].src * n + flows_[f].dst);
        rate[f] = flows_[f].path.bottleneck;
    }
    constexpr std::size_t max_flows = 64;
    std::array<double, max_flows> drain{};  // seconds each active flow of an instance needs
    std::array<double, max_flows> flow_rate{};
    // Each flow's weight: how loaded the most loaded edge of its pair's default path is, against the most
    // loaded edge of all (residual bytes on default paths over capacity). Serving a byte on the bottleneck counts
    // fully, a byte on an idle part of the tree less: plain bytes per second would fill steps with cheap intra-switch
    // flows and leave the bottleneck (often the socket interconnect) for the end.
    std::vector<double> load(edge_count_);
    std::vector<double> weight(flows_.size());
    const auto reweigh = [&] {
        std::fill(load.begin(), load.end(), 0.0);
        for (std::size_t p = 0; p < n * n; ++p)
            if (residual[p] > 0)
                for (auto e : default_edges_[p])
                    load[e] += static_cast<double>(residual[p]);
        double top = 0;
        for (std::size_t e = 0; e < edge_count_; ++e) {
            load[e] /= capacity_[e];
            top = std::max(top, load[e]);
        }
        for (std::size_t f = 0; f < flows_.size(); ++f) {
            double w = 0;
            for (auto e : default_edges_[slot[f]])  // the pair's, whatever path the flow takes
                w = std::max(w, load[e]);
            weight[f] = top > 0 ? std::max(w / top, 1e-3) : 1;
        }
    };
    while (left > 0) {
        reweigh();
        double best_score = -1;
        std::size_t best_instance = 0;
        double best_tau = 0;
        for (std::size_t k = 0; k < instances; ++k) {
            if (instance_rate_[k] <= best_score) break;
            std::size_t active = 0;
            double total_rate = 0;
            for (std::uint32_t x = instance_start_[k]; x < instance_start_[k + 1] && active < max_flows; ++x) {
                const auto f = instance_flows_[x];
                const auto r = residual[slot[f]];
                if (r == 0) continue;
                drain[active] = static_cast<double>(r) / rate[f];
                flow_rate[active] = rate[f] * weight[f];
                total_rate += flow_rate[active];
                ++active;
            }
            if (active == 0 || total_rate <= best_score) continue;
            // Served bytes as a function of the duration tau are piecewise linear with breaks at the flows'
            // drain times; served / (alpha + tau) peaks at one of them.
            for (std::size_t a = 0; a < active; ++a) {
                const double tau = drain[a];
                double served = 0;
                for (std::size_t b = 0; b < active; ++b)
                    served += std::min(drain[b], tau) * flow_rate[b];
                const double score = served / (alpha + tau);
                if (score > best_score || (score == best_score && k == best_instance && tau < best_tau)) {
                    best_score = score;
                    best_instance = k;
                    best_tau = tau;
                }
            }
        }
        Step step;
        for (std::uint32_t x = instance_start_[best_instance]; x < instance_start_[best_instance + 1]; ++x) {
            const auto& pf = flows_[instance_flows_[x]];
            const std::size_t p = pf.src * n + pf.dst;
            if (residual[p] == 0) continue;
            const double can = best_tau * pf.path.bottleneck;
            // The flow that sets tau drains exactly; the others send what fits (rounding never loses a byte).
            const std::uint64_t bytes = can >= static_cast<double>(residual[p]) * (1 - 1e-12)
                                            ? residual[p]
                                            : std::min(residual[p], static_cast<std::uint64_t>(can));
            if (bytes == 0) continue;
            step.transfers.push_back(
                make_transfer(demand, pf.src, pf.dst, pf.path, chunk_offset(demand, pf.src, pf.dst) + sent[p], bytes));
            sent[p] += bytes;
            residual[p] -= bytes;
            left -= bytes;
        }
        if (step.transfers.empty()) throw InternalError("variopath: a step that serves nothing");
        plan.steps.push_back(std::move(step));
    }
    return plan;
}

void time_plan(Plan& plan, const Demand& demand, const topo::Topology& topology, const ModelParams& model) {
    plan.model = model;
    time_plan_steps(plan, topology);
    plan.lower_bound_us = cut_lower_bound_us(demand, topology);
    plan.efficiency = plan.predicted_time_us > 0 ? plan.lower_bound_us / plan.predicted_time_us : 1;
}

std::string_view to_string(StepSearch search) { return search == StepSearch::scan ? "scan" : "packing"; }

Plan make_plan(std::string_view name, const Demand& demand, const topo::Router& router, const Catalog* catalog,
               const ModelParams& model, StepSearch search) {
    Plan plan;
    if (name == "variopath") {
        if (catalog == nullptr) throw UsageError("the variopath algorithm needs a catalog (--catalog)");
        // Built once per catalog in an engine; only the call itself counts as planning time.
        const VarioPathPlanner planner(*catalog, router, search);
        const auto start = std::chrono::steady_clock::now();
        plan = planner.plan(demand, model);
        plan.planning_time_us =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
        time_plan(plan, demand, router.topology(), model);
        return plan;
    }
    const auto start = std::chrono::steady_clock::now();
    if (name == "direct") {
        plan = plan_direct(demand, router);
    } else if (name == "pairwise") {
        plan = plan_pairwise(demand, router);
    } else if (name == "bvn") {
        plan = plan_bvn(demand, router);
    } else if (name == "deepep-pcie") {
        plan = plan_deepep_pcie(demand, router);
    } else if (name == "fast") {
        plan = plan_fast(demand, router);
    } else {
        throw UsageError(fmt::format(
            "unknown algorithm {} (known: variopath, direct, pairwise, bvn, deepep-pcie, fast)", quote(name)));
    }
    plan.planning_time_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    time_plan(plan, demand, router.topology(), model);
    return plan;
}

}  // namespace gpuops::alltoall
