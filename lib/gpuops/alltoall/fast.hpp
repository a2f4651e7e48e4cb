// The fast baseline: FAST (arXiv 2505.09764) reconstructed — intra-server balancing, server-level
// Birkhoff–von Neumann, rail-aligned one-to-one scale-out, intra-server restore (research/variopath.md §2).
#pragma once

#include "gpuops/alltoall/demand.hpp"
#include "gpuops/alltoall/plan.hpp"
#include "gpuops/topo/routing.hpp"

namespace gpuops::alltoall {

/// FAST with the topology's nodes as servers (g GPUs each, in demand order; DataError when nodes hold
/// different numbers of GPUs), algorithm "fast". A byte of GPU i's chunk for GPU j travels up to three hops —
/// balance (i to a GPU i' of its server), scale-out (i' to the GPU of j's server on the same rail), restore
/// (that GPU to j) — so a transfer's `src` and `dst` are the ends of one hop and its `origin` is i when the
/// hop leaves another GPU than i. Steps, times left at zero:
///  - balance and intrinsic: for each server s and other server s', the bytes the GPUs of s send to s' are
///    evened out across them (a GPU over its share copies part of its chunks for s' to a GPU under it on the
///    direct path, the bytes bound for the receiver's own rail first); the traffic that stays inside each
///    server goes at the same time, direct;
///  - one step per permutation π of a Birkhoff–von Neumann decomposition of the server matrix (entry (s, s')
///    the largest per-GPU share): GPU a of every server s sends up to the permutation's weight of what it holds
///    for π(s) to GPU a of π(s) (rail-aligned, one to one) on the default path, while the GPUs that received
///    relayed bytes in the step before forward them to their destinations inside the server (direct: FAST
///    pipelines the restore behind the next scale-out, so both share the PCIe links);
///  - the last restore.
/// On a single node only the intra-server step is left: every pair direct, at once.
[[nodiscard]] Plan plan_fast(const Demand& demand, const topo::Router& router);

}  // namespace gpuops::alltoall
