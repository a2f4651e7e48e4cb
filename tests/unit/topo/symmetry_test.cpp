// Topology automorphisms from the model: the group orders the design predicts, and orbits of like devices.
#include <catch2/catch.hpp>

#include <set>

#include "gpuops/topo/cluster.hpp"
#include "gpuops/topo/presets.hpp"
#include "gpuops/topo/symmetry.hpp"

using namespace gpuops::topo;

namespace {

std::set<DeviceId> orbits_of(const Topology& t, const Symmetry& s, DeviceKind kind) {
    std::set<DeviceId> out;
    for (DeviceId d : t.devices_of(kind))
        out.insert(s.orbit_of[d]);
    return out;
}

}  // namespace

TEST_CASE("the 8-GPU preset has 2 sockets x 2 switches x 2 GPUs of symmetry: 128", "[symmetry]") {
    const Topology t = build_preset("pcie-8gpu-gen4");
    const Symmetry s = automorphisms(t);
    CHECK(s.order() == 128);  // 2 (sockets) x 2^2 (switches per socket) x 2^4 (GPUs per switch)
    CHECK(s.order_text() == "128");
    CHECK(orbits_of(t, s, DeviceKind::gpu).size() == 1);  // every GPU looks like every other
    CHECK(orbits_of(t, s, DeviceKind::nic).size() == 1);
}

TEST_CASE("symmetry follows the numbers, not the names", "[symmetry]") {
    Topology t = build_preset("pcie-8gpu-gen4");
    // Calibrate one GPU link slower: gpu0 is now unlike the others, and so is its switch.
    t.links[*t.uplink(*t.find(0, "gpu0"))].bandwidth = 20e9;
    const Symmetry s = automorphisms(t);
    // Socket0 and sw0 are now special: only sw1's GPUs swap (2), and socket1 keeps its 2 x 2^2 (8).
    CHECK(s.order() == 16);
    CHECK(orbits_of(t, s, DeviceKind::gpu).size() == 4);  // gpu0 | gpu1 | gpu2-3 | gpu4-7

    CHECK(automorphisms(build_preset("pcie-4gpu-direct")).order() == 8);  // swap the sockets, and the two GPUs on each
    CHECK(automorphisms(build_preset("pcie-10gpu-1switch")).order() == 3628800);  // 10!
}

TEST_CASE("N identical nodes on a non-blocking fabric: 128^N x N!", "[symmetry][cluster]") {
    const Topology node = build_preset("pcie-8gpu-gen4");
    const Symmetry two = automorphisms(compose_cluster(node, 2, parse_fabric("nonblocking:200Gb/s")));
    CHECK(two.order() == 128.0 * 128 * 2);
    const Symmetry four = automorphisms(compose_cluster(node, 4, parse_fabric("nonblocking:200Gb/s")));
    CHECK(four.order() == Approx(128.0 * 128 * 128 * 128 * 24));
    // Rails tie NIC k of every node together: swapping switches in one node must swap them in all.
    const Symmetry rails = automorphisms(compose_cluster(node, 2, parse_fabric("rail:200Gb/s")));
    CHECK(rails.order() < two.order());
    CHECK(rails.order() == Approx(8.0 * 16 * 16 * 2));  // shared socket/switch choice, GPUs per switch, nodes
    const Symmetry big = automorphisms(compose_cluster(node, 32, parse_fabric("nonblocking:200Gb/s")));
    CHECK(big.order_exponent > 0);  // 128^32 x 32! is far past any integer
    CHECK(big.order_text().find("e+") != std::string::npos);
}
