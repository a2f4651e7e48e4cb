// Channels up to the topology's symmetry: the flow space closed under the automorphism group, canonical forms
// of channels (nauty on the topology decorated with the channel's flows), and orbit-by-orbit enumeration of
// the maximal channels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpuops/alltoall/channel.hpp"
#include "gpuops/alltoall/flow_set.hpp"
#include "gpuops/topo/routing.hpp"
#include "gpuops/topo/symmetry.hpp"

namespace gpuops::alltoall {

using FlowId = std::uint32_t;
/// A channel as sorted flow ids of a ChannelSpace.
using FlowIds = std::vector<FlowId>;

/// The flows channels are made of, closed under the automorphisms of the topology: the image of a candidate
/// under any automorphism is a candidate too (the router breaks ties between equally near NICs by order,
/// which no symmetry respects; closing the set restores that). Answers compatibility and canonical forms.
class ChannelSpace {
public:
    /// `flows`: candidates from candidate_flows(router, ...). Throws DataError for a topology without GPUs.
    ChannelSpace(const topo::Router& router, std::vector<Flow> flows);

    [[nodiscard]] const topo::Topology& topology() const { return router_.topology(); }
    [[nodiscard]] const topo::Router& router() const { return router_; }
    [[nodiscard]] const std::vector<Flow>& flows() const { return flows_; }
    /// The symmetry channels see: automorphisms of the part of the topology that some flow's path touches
    /// (a disk or an idle bridge does not tell two switches apart for traffic). Generators act on devices.
    [[nodiscard]] const topo::Symmetry& symmetry() const { return symmetry_; }
    /// The flows compatible with flow `f` (compatible()).
    [[nodiscard]] const FlowSet& compatible_with(FlowId f) const { return compatible_[f]; }
    [[nodiscard]] FlowSet all_flows() const;
    /// The id of the flow from src to dst of `kind` through `via`, if it is a candidate.
    [[nodiscard]] std::optional<FlowId> find(topo::DeviceId src, topo::DeviceId dst, topo::PathKind kind,
                                             std::span<const topo::DeviceId> via) const;
    /// The image of flow `f` under a device permutation that is an automorphism.
    [[nodiscard]] FlowId image(const std::vector<topo::DeviceId>& permutation, FlowId f) const;

    struct Canonical {
        std::vector<int> certificate;    ///< equal for two channels exactly when an automorphism maps one to the other
        double stabilizer_mantissa = 1;  ///< |automorphisms that map the channel to itself| = mantissa × 10^exponent
        int stabilizer_exponent = 0;
        std::vector<std::vector<topo::DeviceId>> stabilizer;  ///< generators of that subgroup, on devices
    };
    [[nodiscard]] Canonical canonical(std::span<const FlowId> channel) const;
    /// The number of channels in the orbit of `channel`: |Aut| / |stabilizer|, as a double (exact below 2^53).
    [[nodiscard]] double orbit_size(const Canonical& canonical) const;

    [[nodiscard]] Channel channel(std::span<const FlowId> ids) const;

private:
    [[nodiscard]] std::uint64_t key(topo::DeviceId src, topo::DeviceId dst, topo::PathKind kind,
                                    std::span<const topo::DeviceId> via) const;
    void find_symmetry();
    void close_under_symmetry();

    const topo::Router& router_;
    std::vector<Flow> flows_;
    topo::Symmetry symmetry_;
    std::vector<FlowSet> compatible_;
    std::unordered_map<std::uint64_t, FlowId> index_;
    std::vector<std::vector<topo::LinkId>> link_generators_;  ///< the generators acting on links
    std::vector<topo::DeviceId> devices_;                     ///< the relevant devices: vertex i of the decorated graph
    std::vector<int> vertex_of_;                              ///< per device: its vertex, or -1 when no path touches it
    std::vector<int> base_colour_;  ///< colour ranks of the relevant devices, then the relevant links
    std::vector<std::vector<int>> base_adjacency_;
    int flow_colour_base_ = 0;
};

/// One orbit of maximal channels: its smallest-id representative is not required; any member is.
struct ChannelOrbit {
    FlowIds representative;
    double size = 0;  ///< channels in the orbit (exact below 2^53)
};

struct OrbitSearch {
    std::size_t max_orbits = 1'000'000;    ///< DataError beyond this many maximal-channel orbits
    std::size_t max_classes = 20'000'000;  ///< DataError beyond this many classes of partial channels
    /// Devices that must send one flow and receive one (the ports of a part): only maximal channels that do
    /// are found, and the search fills these slots first, which keeps it small.
    std::vector<topo::DeviceId> saturate;
    /// Called now and then with (classes of partial channels seen, orbits of maximal channels found).
    std::function<void(std::size_t, std::size_t)> progress;
};

/// Every orbit of maximal channels, one representative each, without listing the channels themselves: a
/// depth-first search over partial channels that adds one flow per orbit of the partial channel's stabilizer
/// and keeps one partial channel per isomorphism class (nauty certificates). Orbits come in the order found.
[[nodiscard]] std::vector<ChannelOrbit> maximal_orbits(const ChannelSpace& space, const OrbitSearch& search = {});

/// Every channel of the orbit of `representative`, sorted: the closure under the group's generators.
/// Throws DataError beyond `limit` channels.
[[nodiscard]] std::vector<FlowIds> expand_orbit(const ChannelSpace& space, std::span<const FlowId> representative,
                                                std::size_t limit);

/// Every maximal channel of the space, by Bron–Kerbosch (enumerate_maximal), as sorted flow ids.
[[nodiscard]] std::vector<FlowIds> all_maximal(const ChannelSpace& space, std::size_t limit);

}  // namespace gpuops::alltoall
