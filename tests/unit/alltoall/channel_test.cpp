// Channels: the contention rule, and maximal-channel enumeration checked against an independent brute force.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <functional>
#include <set>

#include "gpuops/alltoall/channel.hpp"
#include "gpuops/core/error.hpp"
#include "gpuops/topo/presets.hpp"

using namespace gpuops::alltoall;
using gpuops::topo::PathKind;

namespace {

/// The set of maximal channels by plain depth-first search over flows (take it or leave it), keeping the
/// independent sets no candidate can extend. Shares nothing with Bron–Kerbosch but compatible().
std::set<std::vector<std::size_t>> brute_force(const std::vector<Flow>& flows) {
    std::set<std::vector<std::size_t>> out;
    std::vector<std::size_t> chosen;
    std::function<void(std::size_t)> walk = [&](std::size_t next) {
        if (next == flows.size()) {
            for (std::size_t k = 0; k < flows.size(); ++k) {
                if (std::find(chosen.begin(), chosen.end(), k) != chosen.end()) continue;
                if (std::all_of(chosen.begin(), chosen.end(),
                                [&](std::size_t c) { return compatible(flows[k], flows[c]); }))
                    return;  // flow k could still join: not maximal
            }
            out.insert(chosen);
            return;
        }
        if (std::all_of(chosen.begin(), chosen.end(),
                        [&](std::size_t c) { return compatible(flows[next], flows[c]); })) {
            chosen.push_back(next);
            walk(next + 1);
            chosen.pop_back();
        }
        walk(next + 1);
    };
    walk(0);
    return out;
}

std::set<std::vector<std::size_t>> as_indexes(const std::vector<Channel>& channels, const std::vector<Flow>& flows) {
    std::set<std::vector<std::size_t>> out;
    for (const auto& c : channels) {
        std::vector<std::size_t> idx;
        for (const auto& f : c.flows)
            idx.push_back(static_cast<std::size_t>(std::find(flows.begin(), flows.end(), f) - flows.begin()));
        std::sort(idx.begin(), idx.end());
        out.insert(idx);
    }
    return out;
}

}  // namespace

TEST_CASE("two flows conflict on a shared source, destination or directed edge", "[channel]") {
    const auto t = gpuops::topo::build_preset("pcie-8gpu-gen4");
    const gpuops::topo::Router router(t);
    const std::array direct{PathKind::direct};
    const auto flows = candidate_flows(router, direct);
    REQUIRE(flows.size() == 56);
    auto find = [&](const char* a, const char* b) {
        const auto s = *t.find(0, a);
        const auto d = *t.find(0, b);
        return *std::find_if(flows.begin(), flows.end(), [&](const Flow& f) { return f.src == s && f.dst == d; });
    };
    CHECK(compatible(find("gpu0", "gpu1"), find("gpu1", "gpu0")));        // full duplex: opposite directions are free
    CHECK_FALSE(compatible(find("gpu0", "gpu1"), find("gpu0", "gpu2")));  // one send per GPU
    CHECK_FALSE(compatible(find("gpu0", "gpu1"), find("gpu2", "gpu1")));  // one receive per GPU
    CHECK_FALSE(compatible(find("gpu0", "gpu4"), find("gpu1", "gpu5")));  // both cross sw0's uplink and the UPI
    CHECK(compatible(find("gpu0", "gpu4"), find("gpu5", "gpu1")));        // the UPI in both directions
    CHECK(compatible(find("gpu0", "gpu1"), find("gpu2", "gpu3")));        // two switches, nothing shared

    Channel bad{{find("gpu0", "gpu4"), find("gpu1", "gpu5")}};
    CHECK(contention(t, bad) == "gpu0->gpu4 and gpu1->gpu5 share the edge sw0->rc0");
    Channel twice{{find("gpu0", "gpu1"), find("gpu0", "gpu2")}};
    CHECK(contention(t, twice) == "gpu0 sends twice (gpu0->gpu1 and gpu0->gpu2)");
    CHECK_FALSE(contention(t, Channel{{find("gpu0", "gpu1"), find("gpu1", "gpu0")}}).has_value());
}

TEST_CASE("maximal channels equal a brute force, direct paths on 8 GPUs", "[channel]") {
    const auto t = gpuops::topo::build_preset("pcie-8gpu-gen4");
    const gpuops::topo::Router router(t);
    const std::array direct{PathKind::direct};
    const auto flows = candidate_flows(router, direct);
    const auto channels = enumerate_maximal(flows, 1'000'000);
    const auto expected = brute_force(flows);
    CHECK(channels.size() == expected.size());
    CHECK(as_indexes(channels, flows) == expected);
    for (const auto& c : channels) {
        CHECK_FALSE(contention(t, c).has_value());
        CHECK(is_maximal(c, flows));
        // Every GPU link is x16 Gen4 and the UPI is 22 GB/s: no flow is faster than a GPU link.
        for (const auto& f : c.flows)
            CHECK(f.rate <= 25.3e9);
    }
}

TEST_CASE("maximal channels with every path kind equal a brute force on the 4-GPU box", "[channel]") {
    const auto t = gpuops::topo::build_preset("pcie-4gpu-direct");
    const gpuops::topo::Router router(t);
    const auto flows = candidate_flows(router);
    CHECK(flows.size() == 12 * 3);  // direct, NIC loopback and host staging for each ordered pair
    const auto channels = enumerate_maximal(flows, 1'000'000);
    CHECK(as_indexes(channels, flows) == brute_force(flows));
    for (const auto& c : channels) {
        CHECK_FALSE(contention(t, c).has_value());
        CHECK(is_maximal(c, flows));
    }
    // A maximal channel is never a subset of another one.
    CHECK(std::adjacent_find(channels.begin(), channels.end()) == channels.end());
}

TEST_CASE("enumeration stops at the limit with a data error", "[channel]") {
    const auto t = gpuops::topo::build_preset("pcie-8gpu-gen4");
    const gpuops::topo::Router router(t);
    const auto flows = candidate_flows(router);
    CHECK_THROWS_AS(enumerate_maximal(flows, 10), gpuops::DataError);
}
