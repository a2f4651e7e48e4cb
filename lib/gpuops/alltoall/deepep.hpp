// The deepep-pcie baseline: DeepEP's normal mode without NVLink (PR #375), every pair through the RDMA NICs.
#pragma once

#include "gpuops/alltoall/demand.hpp"
#include "gpuops/alltoall/plan.hpp"
#include "gpuops/topo/routing.hpp"

namespace gpuops::alltoall {

/// DeepEP's normal mode for nodes without NVLink (research/variopath.md §3.2): all traffic goes through the
/// RDMA NICs, intra-node pairs included — out through the source's nearest NIC and back in (nic_loopback) —
/// and inter-node pairs on their default path. Everything is launched at once, so it is one step, like
/// direct. Times are left at zero (time_plan fills them in).
[[nodiscard]] Plan plan_deepep_pcie(const Demand& demand, const topo::Router& router);

}  // namespace gpuops::alltoall
