// AlltoAllv planners: VarioPath over the channel catalog, and the baselines it is measured against, all
// producing the same Plan and timed by the same flow model.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpuops/alltoall/catalog.hpp"
#include "gpuops/alltoall/demand.hpp"
#include "gpuops/alltoall/flow_model.hpp"
#include "gpuops/alltoall/packing.hpp"
#include "gpuops/alltoall/plan.hpp"
#include "gpuops/topo/routing.hpp"

namespace gpuops::alltoall {

/// variopath, direct, pairwise, bvn, deepep-pcie, fast.
[[nodiscard]] const std::vector<std::string>& algorithm_names();

/// How the VarioPath planner finds each step.
enum class StepSearch {
    /// A greedy max-weight packing of the catalog's flows (PackingPlanner): any catalog, about a millisecond
    /// for 8 GPUs.
    packing,
    /// Every channel instance of an exact catalog of at most 4e6 channels, scanned exactly: the reference the
    /// packing is measured against, 100 to 1000 times slower.
    scan,
};

/// The VarioPath planner, built once per catalog and called per AlltoAllv. By default it packs each step from
/// the catalog's flows (for a cluster: rail permutations of the nodes, then GPU flows); the scan keeps every
/// channel instance in flat arrays and takes the best one.
class VarioPathPlanner {
public:
    /// DataError when the catalog was built for another topology, or when `search` is scan and the catalog
    /// is hierarchical or too large to list.
    VarioPathPlanner(const Catalog& catalog, const topo::Router& router, StepSearch search = StepSearch::packing);

    /// Greedy in the style of Eclipse: each step takes the channel instance and the duration that serve the
    /// most bytes per unit of time, counting the per-step overhead alpha; the served bytes leave the residual
    /// demand; repeat until nothing is left.
    [[nodiscard]] Plan plan(const Demand& demand, const ModelParams& model) const;

    /// The search in use: scan or packing.
    [[nodiscard]] StepSearch search() const noexcept { return packing_ ? StepSearch::packing : StepSearch::scan; }

private:
    std::shared_ptr<const PackingPlanner> packing_;  ///< set when planning by packing
    struct PairFlow {
        std::size_t src = 0;  ///< GPU index (the topology's GPU order)
        std::size_t dst = 0;
        topo::Path path;
    };
    std::vector<PairFlow> flows_;                           ///< the class space's flows, on the topology
    std::vector<std::vector<topo::EdgeId>> default_edges_;  ///< per GPU pair (i·n + j): its default path
    std::size_t edge_count_ = 0;
    std::vector<double> capacity_;               ///< per directed edge, bytes/s
    std::vector<std::uint32_t> instance_start_;  ///< instance k is instance_flows_[start[k], start[k+1])
    std::vector<std::uint32_t> instance_flows_;
    std::vector<double> instance_rate_;  ///< per instance: its flows' rates together (bytes/s), descending
    std::size_t gpus_ = 0;
};

/// Plans `demand` with algorithm `name` (variopath needs `catalog`, and searches its steps by `search`), times
/// it with the flow model, and fills in the lower bound, the efficiency and the planning time.
[[nodiscard]] Plan make_plan(std::string_view name, const Demand& demand, const topo::Router& router,
                             const Catalog* catalog, const ModelParams& model, StepSearch search = StepSearch::packing);

/// "packing", "scan".
[[nodiscard]] std::string_view to_string(StepSearch search);

/// The baselines' steps (times left at zero): direct (every pair at once on its default path), pairwise
/// (n-1 rounds, round s pairs i with i+s), bvn (Birkhoff–von Neumann permutations of the demand, ignoring
/// the PCIe tree).
[[nodiscard]] Plan plan_direct(const Demand& demand, const topo::Router& router);
[[nodiscard]] Plan plan_pairwise(const Demand& demand, const topo::Router& router);
[[nodiscard]] Plan plan_bvn(const Demand& demand, const topo::Router& router);

/// Fills in step times and the predicted time from the flow model, the lower bound and the efficiency.
void time_plan(Plan& plan, const Demand& demand, const topo::Topology& topology, const ModelParams& model);

}  // namespace gpuops::alltoall
