// An AlltoAllv plan (gpuops.plan): ordered steps of transfers, each naming its path and the byte range of a
// send buffer it carries; the checker that proves exactly-once delivery, relays included; the cut lower bound.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuops/alltoall/demand.hpp"
#include "gpuops/alltoall/flow_model.hpp"
#include "gpuops/core/json_io.hpp"
#include "gpuops/topo/routing.hpp"
#include "gpuops/topo/topology.hpp"

namespace gpuops::alltoall {

inline constexpr int plan_schema_version = 1;

/// One transfer of a step: bytes [offset, offset + bytes) of the send buffer of `origin` (absent: of the source
/// `src`), on one path. The send buffer holds the chunks for destinations 0..n-1 back to back (AlltoAllv's
/// sdispls), so chunk (i, j) starts at Σ_{k<j} D(i, k), and the chunk a byte lies in names the GPU it is for.
/// A transfer whose bytes are for another GPU than `dst`, or that `src` holds for another GPU's send buffer, is
/// one hop of relayed bytes (FAST's balance, scale-out and restore); `src` holds them from an earlier hop.
struct Transfer {
    std::size_t src = 0;  ///< index into Demand::gpus
    std::size_t dst = 0;
    std::optional<std::size_t> origin;  ///< whose send buffer the range is in, when not src's (a relay forwards)
    topo::PathKind kind = topo::PathKind::direct;
    std::vector<topo::DeviceId> via;  ///< what pins the path (topo::Path::via)
    std::vector<topo::EdgeId> edges;  ///< sorted
    double rate = 0;                  ///< bytes/s of the path alone (its narrowest edge)
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;

    /// The GPU whose send buffer [offset, offset + bytes) is in.
    [[nodiscard]] std::size_t origin_gpu() const noexcept { return origin.value_or(src); }
};

struct Step {
    std::vector<Transfer> transfers;
    double time_us = 0;  ///< modelled, including the per-step overhead
};

struct Plan {
    std::string algorithm;
    /// Steps are channels: within a step no directed edge carries two transfers and no GPU sends or receives
    /// twice (VarioPath, bvn on a crossbar); other algorithms share links and the model says how much.
    bool exclusive = false;
    std::vector<Step> steps;
    double predicted_time_us = 0;
    double lower_bound_us = 0;
    double efficiency = 0;  ///< lower bound / predicted time
    double planning_time_us = 0;
    ModelParams model;  ///< the flow model the times come from
};

/// Where chunk (i, j) starts in source i's send buffer.
[[nodiscard]] std::uint64_t chunk_offset(const Demand& demand, std::size_t i, std::size_t j);

/// A transfer of `bytes` from GPU index i to j along `path`, at `offset` in i's send buffer.
[[nodiscard]] Transfer make_transfer(const Demand& demand, std::size_t i, std::size_t j, const topo::Path& path,
                                     std::uint64_t offset, std::uint64_t bytes);
/// A hop of relayed bytes from GPU index i to j along `path`: `bytes` at `offset` in `origin`'s send buffer
/// (origin left absent when it is i).
[[nodiscard]] Transfer make_hop(const Demand& demand, std::size_t origin, std::size_t i, std::size_t j,
                                const topo::Path& path, std::uint64_t offset, std::uint64_t bytes);

/// Every violation (empty when the plan is right): each transfer's path is the topology's path of its kind
/// through its via devices; nothing is sent from a GPU to itself; every byte of every off-diagonal chunk (i, j)
/// travels exactly one chain of hops from i to j — the first leaves i, each next one leaves the GPU the one
/// before arrived on, in a later step, none arrives on j twice and the last ends on j (a plain transfer is a
/// chain of one) — while no byte of a GPU's own chunk or beyond its send buffer moves; in exclusive plans no
/// step uses a directed edge twice or has a GPU send or receive twice; the lower bound and the predicted time
/// are what the demand, the topology and the plan's own model give. Stops after `max_violations`.
[[nodiscard]] std::vector<std::string> check_plan(const Plan& plan, const Demand& demand, const topo::Router& router,
                                                  std::size_t max_violations);

/// A lower bound on any plan's time, whatever paths it takes: for every cut the topology forces traffic
/// through — a subtree of the PCIe tree and its uplink, a socket and its interconnect links, a node and its
/// fabric ports, each direction — the bytes that must cross it over its capacity. Seconds → microseconds.
/// Never above the fixed-routing edge bound; equal to it for tree-routed traffic inside a node.
[[nodiscard]] double cut_lower_bound_us(const Demand& demand, const topo::Topology& topology);

/// Step times and the predicted time from the plan's model: per step alpha + the flow model's phase time. The
/// transfers of a step between the same two GPUs on the same path are one message, so one flow (a relay
/// forwards the ranges of several origins together).
void time_plan_steps(Plan& plan, const topo::Topology& topology);

/// The --format text view: the totals, then one line per step (its transfers when there are at most 8, a relayed
/// hop with the GPU whose bytes it carries: gpu1->gpu9[of gpu0]).
[[nodiscard]] std::string render_text(const Plan& plan, const Demand& demand, const topo::Topology& topology);

[[nodiscard]] json_io::Json to_json(const Plan& plan, const Demand& demand, const topo::Topology& topology);
/// Reads a gpuops.plan document against the demand's topology; DataError with JSON pointers.
[[nodiscard]] Plan plan_from_json(const json_io::Json& doc, const Demand& demand, const topo::Router& router,
                                  std::string_view source_name);

}  // namespace gpuops::alltoall
