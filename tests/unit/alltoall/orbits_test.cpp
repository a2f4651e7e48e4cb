// Channel orbits: the orbit search against exhaustive enumeration, certificates, and orbit sizes.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <functional>
#include <set>

#include "gpuops/alltoall/orbits.hpp"
#include "gpuops/topo/presets.hpp"

using namespace gpuops::alltoall;
using gpuops::topo::PathKind;

namespace {

/// Maximal channels by plain take-it-or-leave-it recursion over the space's flows: shares nothing with the
/// orbit search or Bron–Kerbosch but compatible_with().
std::set<FlowIds> brute_force(const ChannelSpace& space) {
    std::set<FlowIds> out;
    FlowIds chosen;
    const auto n = static_cast<FlowId>(space.flows().size());
    const auto fits = [&](FlowId f) {
        for (FlowId c : chosen)
            if (!space.compatible_with(c).test(f)) return false;
        return true;
    };
    std::function<void(FlowId)> walk = [&](FlowId next) {
        if (next == n) {
            for (FlowId f = 0; f < n; ++f)
                if (std::find(chosen.begin(), chosen.end(), f) == chosen.end() && fits(f)) return;
            out.insert(chosen);
            return;
        }
        if (fits(next)) {
            chosen.push_back(next);
            walk(next + 1);
            chosen.pop_back();
        }
        walk(next + 1);
    };
    walk(0);
    return out;
}

std::set<FlowIds> expanded(const ChannelSpace& space, const std::vector<ChannelOrbit>& orbits) {
    std::set<FlowIds> out;
    for (const auto& o : orbits) {
        const auto members = expand_orbit(space, o.representative, 10'000'000);
        CHECK(static_cast<double>(members.size()) == o.size);  // the stabilizer's order agrees with the closure
        for (const auto& m : members)
            CHECK(out.insert(m).second);  // no channel in two orbits
    }
    return out;
}

double sum_of_sizes(const std::vector<ChannelOrbit>& orbits) {
    double sum = 0;
    for (const auto& o : orbits)
        sum += o.size;
    return sum;
}

}  // namespace

TEST_CASE("orbits of the 4-GPU preset expand to exactly the maximal channels", "[orbits]") {
    const auto t = gpuops::topo::build_preset("pcie-4gpu-direct");
    const gpuops::topo::Router router(t);
    const ChannelSpace space(router, candidate_flows(router));
    const auto orbits = maximal_orbits(space);
    const auto all = brute_force(space);
    CHECK(all.size() == 305);
    CHECK(sum_of_sizes(orbits) == 305);
    CHECK(expanded(space, orbits) == all);
    CHECK(orbits.size() == 46);
}

TEST_CASE("orbits of the 8-GPU preset expand to exactly the maximal channels, all path kinds", "[orbits]") {
    const auto t = gpuops::topo::build_preset("pcie-8gpu-gen4");
    const gpuops::topo::Router router(t);
    const ChannelSpace space(router, candidate_flows(router));
    CHECK(space.flows().size() == 168);  // 56 pairs × {direct, loopback via the nearest NIC, staging}
    CHECK(space.symmetry().order() == 128);
    const auto orbits = maximal_orbits(space);
    const auto all = all_maximal(space, 1'000'000);  // Bron–Kerbosch, itself checked against brute force
    CHECK(all.size() == 237065);
    CHECK(sum_of_sizes(orbits) == 237065);
    const auto members = expanded(space, orbits);
    CHECK(members == std::set<FlowIds>(all.begin(), all.end()));
    for (const auto& o : orbits)
        CHECK(std::fmod(128.0, o.size) == 0);  // orbit-stabilizer: sizes divide the group order
    CHECK(static_cast<double>(all.size()) / static_cast<double>(orbits.size()) >= 100);
}

TEST_CASE("ten GPUs under one switch: maximal direct channels are D(10) + 10 D(9) in a few orbits", "[orbits]") {
    // Every direct pair is contention-free, so a maximal channel is a derangement of the ten GPUs, or a
    // partial one whose single idle sender is also the single idle receiver.
    const auto t = gpuops::topo::build_preset("pcie-10gpu-1switch");
    const gpuops::topo::Router router(t);
    const std::array direct{PathKind::direct};
    const ChannelSpace space(router, candidate_flows(router, direct));
    CHECK(space.symmetry().order() == 3628800);
    const auto orbits = maximal_orbits(space);
    CHECK(sum_of_sizes(orbits) == 1334961.0 + 10 * 133496.0);
    // Up to relabelling, a derangement is its cycle type (partitions of 10 into parts ≥ 2: 12 of them) and a
    // one-idle channel that of 9 (8), so 20 orbits.
    CHECK(orbits.size() == 20);
    for (const auto& o : orbits) {
        const auto c = space.channel(o.representative);
        CHECK_FALSE(contention(t, c));
        CHECK(is_maximal(c, space.flows()));
    }
}

TEST_CASE("certificates are equal exactly for channels an automorphism maps onto each other", "[orbits]") {
    const auto t = gpuops::topo::build_preset("pcie-8gpu-gen4");
    const gpuops::topo::Router router(t);
    const ChannelSpace space(router, candidate_flows(router));
    const auto orbits = maximal_orbits(space);
    REQUIRE(orbits.size() > 2);
    const auto& rep = orbits[0].representative;
    const auto base = space.canonical(rep);
    for (const auto& g : space.symmetry().generators) {
        FlowIds image;
        for (FlowId f : rep)
            image.push_back(space.image(g, f));
        CHECK(space.canonical(image).certificate == base.certificate);
    }
    CHECK(space.canonical(orbits[1].representative).certificate != base.certificate);
    CHECK(space.orbit_size(base) == orbits[0].size);
}

TEST_CASE("candidate flows are closed under symmetry: loopback through every equally near NIC", "[orbits]") {
    // Two GPUs and two NICs under one switch: the router sends each GPU's loopback through "its" NIC, but
    // swapping the NICs is an automorphism, so the space holds loopbacks through both.
    const auto spec = gpuops::json_io::Json::parse(R"({
      "name": "two-nics", "description": "test", "sources": ["test"],
      "sockets": {"count": 1, "cores": 8,
        "cpu": {"vendor": "GenuineIntel", "family": 6, "model": 143, "model_name": "Xeon"}, "memory": "64GiB", "root_complexes": [{"count": 1, "devices": [
        {"kind": "pcie_switch", "link": "16GT/s x16", "devices": [
          {"kind": "gpu", "count": 2, "model": "G", "link": "16GT/s x16"},
          {"kind": "nic", "count": 2, "model": "N", "link": "16GT/s x16", "rdma": true, "port_speed": "200Gb/s"}]}]}]}})");
    const auto t = gpuops::topo::build_from_spec(spec, "two-nics");
    const gpuops::topo::Router router(t);
    const std::array loopback{PathKind::nic_loopback};
    const auto routed = candidate_flows(router, loopback);
    const ChannelSpace space(router, routed);
    CHECK(routed.size() == 2);         // one NIC per GPU
    CHECK(space.flows().size() == 4);  // both NICs for both directions
}

TEST_CASE("a topology without GPUs has no channel space", "[orbits]") {
    auto t = gpuops::topo::build_preset("pcie-4gpu-direct");
    for (auto& d : t.devices)
        if (d.kind == gpuops::topo::DeviceKind::gpu) d.kind = gpuops::topo::DeviceKind::pci_device;
    const gpuops::topo::Router router(t);
    CHECK_THROWS_WITH(ChannelSpace(router, {}), Catch::Contains("no GPUs"));
}
