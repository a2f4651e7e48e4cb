// The VarioPath planner's step search by packing: where a catalog stands for too many channels to scan one by
// one (clusters over hierarchical catalogs, large nodes), each step is built from the catalog's flows instead:
// rail permutations of the nodes first (node level), then a greedy max-weight packing of GPU flows into one
// contention-free channel (GPU level).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpuops/alltoall/catalog.hpp"
#include "gpuops/alltoall/demand.hpp"
#include "gpuops/alltoall/flow_model.hpp"
#include "gpuops/alltoall/plan.hpp"
#include "gpuops/topo/routing.hpp"

namespace gpuops::alltoall {

/// Built once per catalog; plan() is const and may run on several threads at once.
///
/// Candidate flows come from the catalog: every flow of a part's class space that joins two GPUs of the part
/// (with its alternative paths), the flows across parts that a fixed interconnect dictates (socket-links),
/// and for rail-aligned clusters, per rail, every GPU pair of two nodes the step's rail permutation joins.
/// A rail flow is three segments (GPU → NIC of the rail, the fabric, NIC → GPU) so that no path is stored
/// per GPU pair and rail. Where the fabric joins rails (a spine), a pair on different sockets may also go from
/// the source's nearest NIC to the destination's across rails: the path that crosses no socket interconnect.
class PackingPlanner {
public:
    PackingPlanner(const Catalog& catalog, const topo::Router& router);

    /// Greedy in the style of Eclipse, as VarioPathPlanner::plan: each step maximises weighted bytes served per
    /// unit of time (counting alpha) over a grid of durations, packing flows heaviest first; the chosen step's
    /// duration is then set exactly among its flows' drain times.
    [[nodiscard]] Plan plan(const Demand& demand, const ModelParams& model) const;

    [[nodiscard]] std::size_t gpus() const noexcept { return gpus_.size(); }

private:
    struct Segment {
        std::uint32_t begin = 0;  ///< edges_[begin, end)
        std::uint32_t end = 0;
        double rate = 0;  ///< bytes/s: the narrowest edge
    };
    struct Fixed {
        std::uint32_t segment = 0;
        topo::Path path;
    };

    [[nodiscard]] std::uint32_t add_segment(const std::vector<topo::EdgeId>& edges);
    /// GPU i to GPU j of another node, out through the NIC of rail `from_rail` and in through `to_rail`'s.
    [[nodiscard]] topo::Path rail_path(std::size_t i, std::size_t j, std::size_t from_rail, std::size_t to_rail) const;
    /// The fabric's segment from part a's NIC of rail r to part b's NIC of rail q.
    [[nodiscard]] std::uint32_t fabric(std::size_t a, std::size_t b, std::size_t r, std::size_t q) const {
        return fabric_segment_[((a * part_gpus_.size() + b) * rails_ + r) * rails_ + q];
    }

    const topo::Router* router_ = nullptr;
    std::vector<topo::DeviceId> gpus_;
    std::vector<std::uint32_t> part_of_;                 ///< per GPU index: its domain (node, or socket)
    std::vector<std::vector<std::uint32_t>> part_gpus_;  ///< per domain: its GPU indexes
    std::vector<topo::EdgeId> edges_;                    ///< segments' edges, flat
    std::vector<Segment> segments_;                      ///< fixed paths, then the rails' three kinds
    std::vector<Fixed> fixed_;                           ///< flows of fixed paths
    std::vector<std::uint32_t> fixed_start_;             ///< per GPU pair i·n+j: fixed_[start[p], start[p+1])
    std::vector<std::uint32_t> fixed_pairs_;             ///< GPU pairs with at least one fixed flow
    std::vector<std::uint32_t> default_start_;           ///< per GPU pair: default_edges_[start[p], start[p+1])
    std::vector<topo::EdgeId> default_edges_;            ///< the default path's edges, for the load weights
    std::vector<double> capacity_;                       ///< per directed edge, bytes/s
    std::size_t rails_ = 0;                              ///< rail-aligned: ports per node; 0 otherwise
    std::vector<std::vector<topo::DeviceId>> rail_nic_;  ///< per domain, per rail: its NIC
    std::vector<std::uint32_t> nearest_rail_;            ///< per GPU index: the rail of its nearest NIC
    std::vector<std::uint32_t> up_segment_;              ///< per GPU index · rails + rail: GPU → the rail's NIC
    std::vector<std::uint32_t> down_segment_;            ///< per GPU index · rails + rail: the rail's NIC → GPU
    std::vector<std::uint32_t> fabric_segment_;          ///< see fabric()
    bool cross_rail_ = true;                             ///< the fabric joins different rails (a spine)
};

}  // namespace gpuops::alltoall
