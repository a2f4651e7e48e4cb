// The flow model: exact water-filling and event numbers on small topologies, properties on random flow sets
// checked against a plain reference implementation, the default parameters, and the gpuops.model file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gpuops/alltoall/flow_model.hpp"
#include "gpuops/core/error.hpp"
#include "gpuops/topo/cluster.hpp"
#include "gpuops/topo/presets.hpp"
#include "gpuops/topo/routing.hpp"

using namespace gpuops::alltoall;
using gpuops::DataError;
using gpuops::InternalError;
using gpuops::json_io::Json;
using gpuops::topo::DeviceId;
using gpuops::topo::EdgeId;
using gpuops::topo::Topology;

namespace {

constexpr double gb = 1e9;

/// Devices d0..dn joined in a row by links of the given bandwidths (GB/s); edge 2i goes d_i -> d_{i+1}.
Topology chain(const std::vector<double>& gbytes_per_s, double latency_us = 0) {
    Topology t;
    t.nodes.push_back({"test"});
    for (std::size_t i = 0; i <= gbytes_per_s.size(); ++i) {
        gpuops::topo::Device d;
        d.name = "d" + std::to_string(i);
        t.add_device(d);
    }
    for (std::size_t i = 0; i < gbytes_per_s.size(); ++i) {
        gpuops::topo::Link l;
        l.a = static_cast<DeviceId>(i);
        l.b = static_cast<DeviceId>(i + 1);
        l.bandwidth = gbytes_per_s[i] * gb;
        l.latency_us = latency_us;
        t.add_link(l);
    }
    return t;
}

EdgeId up(std::uint32_t link) { return Topology::up_edge(link); }

/// Fair sharing (η = 1 throughout), no α, latencies as given.
ModelParams fair() {
    ModelParams p;
    p.alpha_us = 0;
    p.eta = {1};
    return p;
}

// ---- an independent reference: the pseudocode of research/variopath.md 6.2, O(E·F) per level ----------

std::vector<double> reference_rates(const Topology& t, const std::vector<ModelFlow>& flows,
                                    const std::vector<bool>& active, const ModelParams& p) {
    std::vector<double> capacity(t.edge_count(), 0);
    std::vector<std::size_t> total(t.edge_count(), 0);
    for (std::size_t f = 0; f < flows.size(); ++f)
        if (active[f])
            for (EdgeId e : flows[f].edges)
                ++total[e];
    for (EdgeId e = 0; e < t.edge_count(); ++e)
        capacity[e] = t.edge(e).bandwidth * p.efficiency(total[e]);
    std::vector<double> rate(flows.size(), 0);
    std::vector<bool> open = active;
    while (std::find(open.begin(), open.end(), true) != open.end()) {
        std::vector<std::size_t> n(t.edge_count(), 0);
        for (std::size_t f = 0; f < flows.size(); ++f)
            if (open[f])
                for (EdgeId e : flows[f].edges)
                    ++n[e];
        double share = std::numeric_limits<double>::infinity();
        EdgeId bottleneck = 0;
        for (EdgeId e = 0; e < t.edge_count(); ++e) {
            if (n[e] > 0 && capacity[e] / static_cast<double>(n[e]) < share) {
                share = capacity[e] / static_cast<double>(n[e]);
                bottleneck = e;
            }
        }
        for (std::size_t f = 0; f < flows.size(); ++f) {
            if (!open[f] || std::find(flows[f].edges.begin(), flows[f].edges.end(), bottleneck) == flows[f].edges.end())
                continue;
            rate[f] = share;
            open[f] = false;
            for (EdgeId e : flows[f].edges)
                capacity[e] -= share;
        }
    }
    return rate;
}

/// Recompute every rate at every end; flows ending together (1e-12) end in one event.
std::vector<double> reference_finish(const Topology& t, const std::vector<ModelFlow>& flows, const ModelParams& p) {
    std::vector<double> left(flows.size());
    std::vector<bool> active(flows.size());
    std::vector<double> finish(flows.size());
    for (std::size_t f = 0; f < flows.size(); ++f) {
        left[f] = flows[f].bytes;
        active[f] = flows[f].bytes > 0 && !flows[f].edges.empty();
        finish[f] = p.latency_scale * flows[f].latency_us;
    }
    double now = 0;
    while (std::find(active.begin(), active.end(), true) != active.end()) {
        const auto rate = reference_rates(t, flows, active, p);
        double step = std::numeric_limits<double>::infinity();
        for (std::size_t f = 0; f < flows.size(); ++f)
            if (active[f]) step = std::min(step, left[f] / rate[f]);
        for (std::size_t f = 0; f < flows.size(); ++f) {
            if (!active[f]) continue;
            if (now + left[f] / rate[f] <= (now + step) * (1 + 1e-12)) {
                finish[f] += (now + left[f] / rate[f]) * 1e6;
                active[f] = false;
            } else {
                left[f] -= rate[f] * step;
            }
        }
        now += step;
    }
    return finish;
}

/// Random flows between the GPUs of `t` on their default paths, with bytes from 0 to 256 MB (one in eight
/// zero) and no latency. Plain modulo arithmetic on mt19937 keeps the sets identical across standard libraries.
std::vector<ModelFlow> random_flows(const Topology& t, std::mt19937& rng, std::size_t count) {
    const gpuops::topo::Router router(t);
    const auto gpus = t.devices_of(gpuops::topo::DeviceKind::gpu);
    std::vector<ModelFlow> flows;
    for (std::size_t k = 0; k < count; ++k) {
        const DeviceId src = gpus[rng() % gpus.size()];
        DeviceId dst = gpus[rng() % gpus.size()];
        if (dst == src)
            dst = gpus[(static_cast<std::size_t>(std::find(gpus.begin(), gpus.end(), src) - gpus.begin()) + 1) %
                       gpus.size()];
        const auto path = router.route(src, dst);
        const double bytes = rng() % 8 == 0 ? 0.0 : static_cast<double>(rng() % 256 + 1) * 1e6;
        flows.push_back({path.edges, bytes, 0});
    }
    return flows;
}

}  // namespace

TEST_CASE("a lone flow takes its bytes over its narrowest edge, plus its latency", "[flow_model]") {
    const Topology t = chain({10, 5, 20}, 0.5);
    ModelParams p = fair();
    const std::vector<ModelFlow> flows{{{up(0), up(1), up(2)}, 1e9, 1.5}};
    CHECK(max_min_rates(t, flows, p) == std::vector<double>{5e9});
    auto r = simulate_phase(t, flows, p);
    CHECK(r.finish_us[0] == Approx(200'001.5));
    CHECK(r.time_us == Approx(200'001.5));
    p.latency_scale = 2;
    CHECK(simulate_phase(t, flows, p).time_us == Approx(200'003));

    // On the preset, across the sockets: the UPI (22 GB/s) is the narrowest of seven edges.
    const auto node = gpuops::topo::build_preset("pcie-8gpu-gen4");
    const gpuops::topo::Router router(node);
    const auto path = router.route(*node.find(0, "gpu0"), *node.find(0, "gpu4"));
    REQUIRE(path.edges.size() == 7);
    REQUIRE(path.bottleneck == 22e9);
    const std::vector<ModelFlow> across{{path.edges, 44e6, path.latency_us}};
    CHECK(simulate_phase(node, across, default_model()).time_us == Approx(2000 + path.latency_us));
}

TEST_CASE("two flows sharing one edge get half each and finish together", "[flow_model]") {
    const Topology t = chain({10});
    const std::vector<ModelFlow> flows{{{up(0)}, 1e9, 0}, {{up(0)}, 1e9, 0}};
    CHECK(max_min_rates(t, flows, fair()) == std::vector<double>{5e9, 5e9});
    const auto r = simulate_phase(t, flows, fair());
    CHECK(r.finish_us[0] == Approx(200'000));
    CHECK(r.finish_us[1] == Approx(200'000));
    CHECK(r.time_us == Approx(2 * simulate_phase(t, std::vector<ModelFlow>{flows[0]}, fair()).time_us));
}

TEST_CASE("max-min: a flow limited elsewhere leaves its share to the others", "[flow_model]") {
    // Edge A (10 GB/s) carries f0, f1, f2; edge B (4 GB/s) carries f2 and f3; edge C (3 GB/s) carries f4.
    // B's fair share (2) is the smallest: f2 = f3 = 2; A then splits its remaining 8 between f0 and f1.
    const Topology t = chain({10, 4, 3});
    const std::vector<ModelFlow> flows{
        {{up(0)}, 1, 0}, {{up(0)}, 1, 0}, {{up(0), up(1)}, 1, 0}, {{up(1)}, 1, 0}, {{up(2)}, 1, 0}};
    const auto rates = max_min_rates(t, flows, fair());
    CHECK(rates[0] == Approx(4e9));
    CHECK(rates[1] == Approx(4e9));
    CHECK(rates[2] == Approx(2e9));
    CHECK(rates[3] == Approx(2e9));
    CHECK(rates[4] == Approx(3e9));
    // Without f3, B no longer binds f2 below A's fair share: A splits three ways.
    const std::vector<ModelFlow> three{flows[0], flows[1], flows[2]};
    const auto even = max_min_rates(t, three, fair());
    CHECK(even[0] == Approx(10e9 / 3));
    CHECK(even[2] == Approx(10e9 / 3));
    // A flow without edges is not limited by anything.
    CHECK(max_min_rates(t, std::vector<ModelFlow>{{{}, 1, 0}}, fair())[0] == std::numeric_limits<double>::infinity());
}

TEST_CASE("when a flow finishes the others speed up, event by event", "[flow_model]") {
    const Topology t = chain({10, 4});
    SECTION("a short flow and a long one on one edge") {
        // Both at 5 GB/s; the short one is done at 0.2 s; the long one has 2 GB left, alone at 10 GB/s.
        const std::vector<ModelFlow> flows{{{up(0)}, 1e9, 0}, {{up(0)}, 3e9, 0}};
        const auto r = simulate_phase(t, flows, fair());
        CHECK(r.finish_us[0] == Approx(200'000));
        CHECK(r.finish_us[1] == Approx(400'000));
    }
    SECTION("three ends, three rate changes") {
        // 10/3 GB/s each until 0.3 s; then 5 each for b's last 1 GB (0.2 s); then c alone for its last 1 GB.
        const std::vector<ModelFlow> flows{{{up(0)}, 1e9, 0}, {{up(0)}, 2e9, 0}, {{up(0)}, 3e9, 0}};
        const auto r = simulate_phase(t, flows, fair());
        CHECK(r.finish_us[0] == Approx(300'000));
        CHECK(r.finish_us[1] == Approx(500'000));
        CHECK(r.finish_us[2] == Approx(600'000));
    }
    SECTION("a flow held back elsewhere takes more once its bottleneck frees") {
        // f0 on A (10 GB/s) only, f1 on A and B (6 GB/s), f2 on B only. B's share (3) binds first:
        // f1 = f2 = 3, f0 = 7. f2 (0.6 GB) ends at 0.2 s; then B no longer binds f1, which takes A's fair half.
        const Topology t2 = chain({10, 6});
        const std::vector<ModelFlow> flows{{{up(0)}, 4e9, 0}, {{up(0), up(1)}, 2e9, 0}, {{up(1)}, 0.6e9, 0}};
        const auto rates = max_min_rates(t2, flows, fair());
        CHECK(rates == std::vector<double>{7e9, 3e9, 3e9});
        const auto r = simulate_phase(t2, flows, fair());
        CHECK(r.finish_us[2] == Approx(200'000));
        // After 0.2 s: f0 has 2.6 GB left, f1 1.4 GB, both at 5 GB/s: f1 ends at 0.48 s; f0 then sends its
        // last 1.2 GB alone at 10 GB/s and ends at 0.6 s, when edge A has moved all 6 GB.
        CHECK(r.finish_us[1] == Approx(480'000));
        CHECK(r.finish_us[0] == Approx(600'000));
    }
}

TEST_CASE("eta below 1 slows a shared edge by exactly that factor", "[flow_model]") {
    const Topology t = chain({10});
    ModelParams p = fair();
    p.eta = {1, 0.8, 0.5};
    const std::vector<ModelFlow> one{{{up(0)}, 1e9, 0}};
    CHECK(simulate_phase(t, one, p).time_us == Approx(100'000));  // η(1) = 1
    const std::vector<ModelFlow> two{{{up(0)}, 1e9, 0}, {{up(0)}, 1e9, 0}};
    CHECK(max_min_rates(t, two, p)[0] == Approx(4e9));
    CHECK(simulate_phase(t, two, p).time_us == Approx(200'000 / 0.8));
    const std::vector<ModelFlow> five(5, ModelFlow{{up(0)}, 1e9, 0});
    CHECK(max_min_rates(t, five, p)[0] == Approx(10e9 * 0.5 / 5));  // beyond the table the last value holds
    CHECK(p.efficiency(1000) == 0.5);
    // η follows the flows still moving: after the short one ends, the long one runs alone at full speed.
    p.eta = {1, 0.5};
    const std::vector<ModelFlow> mixed{{{up(0)}, 1e9, 0}, {{up(0)}, 2e9, 0}};
    const auto r = simulate_phase(t, mixed, p);
    CHECK(r.finish_us[0] == Approx(400'000));  // 2.5 GB/s each
    CHECK(r.finish_us[1] == Approx(500'000));  // then 1 GB at 10 GB/s
}

TEST_CASE("zero-byte flows finish at their latency and take no share", "[flow_model]") {
    const Topology t = chain({10});
    ModelParams p = fair();
    p.eta = {1, 0.5};
    p.latency_scale = 3;
    const std::vector<ModelFlow> flows{{{up(0)}, 0, 2}, {{up(0)}, 1e9, 1}, {{}, 1e9, 0.5}};
    const auto r = simulate_phase(t, flows, p);
    CHECK(r.finish_us[0] == Approx(6));
    CHECK(r.finish_us[1] == Approx(100'000 + 3));  // alone on the edge: no η(2)
    CHECK(r.finish_us[2] == Approx(1.5));          // no edges: nothing limits it
    CHECK(simulate_phase(t, std::vector<ModelFlow>{}, p).time_us == 0);
}

TEST_CASE("simulate_steps pays alpha once per step", "[flow_model]") {
    const Topology t = chain({10});
    ModelParams p = fair();
    p.alpha_us = 10;
    const std::vector<std::vector<ModelFlow>> steps{{{{up(0)}, 1e9, 0}}, {{{up(0)}, 1e9, 0}, {{up(0)}, 1e9, 0}}, {}};
    CHECK(simulate_steps(t, steps, p) == Approx((10 + 100'000) + (10 + 200'000) + 10));
    CHECK(simulate_steps(t, std::vector<std::vector<ModelFlow>>{}, p) == 0);
}

TEST_CASE("a contention-free set of flows takes its slowest flow's bytes over its bottleneck", "[flow_model]") {
    const auto t = gpuops::topo::build_preset("pcie-8gpu-gen4");
    const gpuops::topo::Router router(t);
    const std::vector<std::pair<const char*, const char*>> pairs{{"gpu0", "gpu1"}, {"gpu1", "gpu0"}, {"gpu2", "gpu3"},
                                                                 {"gpu3", "gpu2"}, {"gpu4", "gpu5"}, {"gpu5", "gpu4"},
                                                                 {"gpu6", "gpu7"}, {"gpu7", "gpu6"}};
    std::vector<ModelFlow> flows;
    std::vector<double> alone;
    std::multiset<EdgeId> used;
    for (std::size_t k = 0; k < pairs.size(); ++k) {
        const auto path = router.route(*t.find(0, pairs[k].first), *t.find(0, pairs[k].second));
        const double bytes = static_cast<double>(k + 1) * 10e6;
        flows.push_back({path.edges, bytes, path.latency_us});
        alone.push_back(bytes / path.bottleneck * 1e6 + path.latency_us);
        used.insert(path.edges.begin(), path.edges.end());
    }
    for (EdgeId e : used)
        REQUIRE(used.count(e) == 1);
    const auto r = simulate_phase(t, flows, default_model());
    for (std::size_t k = 0; k < flows.size(); ++k)
        CHECK(r.finish_us[k] == Approx(alone[k]));
    CHECK(r.time_us == Approx(*std::max_element(alone.begin(), alone.end())));
    CHECK(r.time_us == Approx(80e6 / 25.2062e9 * 1e6 + 0.4).epsilon(1e-4));
}

TEST_CASE("the water-filling and the event loop agree with the plain reference on random flow sets", "[flow_model]") {
    const auto node = gpuops::topo::build_preset("pcie-8gpu-gen4");
    const auto cluster = gpuops::topo::compose_cluster(node, 2, gpuops::topo::parse_fabric("nonblocking:200Gb/s"));
    std::mt19937 rng(20240611);
    ModelParams flat = fair();
    for (const Topology* t : {&node, &cluster}) {
        for (const ModelParams& p : {default_model(), flat}) {
            for (int trial = 0; trial < 30; ++trial) {
                const auto flows = random_flows(*t, rng, 1 + rng() % 40);
                const std::vector<bool> all(flows.size(), true);
                const auto expected_rates = reference_rates(*t, flows, all, p);
                const auto rates = max_min_rates(*t, flows, p);
                for (std::size_t f = 0; f < flows.size(); ++f)
                    REQUIRE(rates[f] == Approx(expected_rates[f]).epsilon(1e-9));
                const auto expected = reference_finish(*t, flows, p);
                const auto r = simulate_phase(*t, flows, p, 0);
                for (std::size_t f = 0; f < flows.size(); ++f)
                    REQUIRE(r.finish_us[f] == Approx(expected[f]).epsilon(1e-9));
            }
        }
    }
}

TEST_CASE("phase times respect the edge lower bound and the throughput upper bound", "[flow_model]") {
    const auto t = gpuops::topo::compose_cluster(gpuops::topo::build_preset("pcie-8gpu-gen4"), 2,
                                                 gpuops::topo::parse_fabric("nonblocking:200Gb/s"));
    std::mt19937 rng(7);
    const ModelParams p = default_model();
    for (int trial = 0; trial < 100; ++trial) {
        const auto flows = random_flows(t, rng, 1 + rng() % 60);
        std::vector<double> crossing(t.edge_count(), 0);
        double total = 0;
        double narrowest = std::numeric_limits<double>::infinity();
        for (const auto& f : flows) {
            total += f.bytes;
            for (EdgeId e : f.edges) {
                crossing[e] += f.bytes;
                narrowest = std::min(narrowest, t.edge(e).bandwidth);
            }
        }
        double lower = 0;
        for (EdgeId e = 0; e < t.edge_count(); ++e)
            lower = std::max(lower, crossing[e] / t.edge(e).bandwidth * 1e6);
        const auto r = simulate_phase(t, flows, p);
        REQUIRE(r.time_us >= lower * (1 - 1e-9));
        // Some edge is always full, and a full edge moves at least the narrowest bandwidth × η(∞).
        REQUIRE(r.time_us <= total / (narrowest * p.eta.back()) * 1e6 * (1 + 1e-9));
        for (std::size_t f = 0; f < flows.size(); ++f) {
            double bottleneck = std::numeric_limits<double>::infinity();
            for (EdgeId e : flows[f].edges)
                bottleneck = std::min(bottleneck, t.edge(e).bandwidth);
            REQUIRE(r.finish_us[f] >= flows[f].bytes / bottleneck * 1e6 * (1 - 1e-9));
        }
        // Times scale with the bytes.
        auto doubled = flows;
        for (auto& f : doubled)
            f.bytes *= 2;
        REQUIRE(simulate_phase(t, doubled, p).time_us == Approx(2 * r.time_us).epsilon(1e-9));
    }
}

TEST_CASE("adding a flow never raises the smallest rates of the others", "[flow_model]") {
    // Max-min fairness is leximin-optimal: the old flows' rates with a newcomer, sorted, are a feasible
    // allocation of the old problem (η only lowers capacities), so they cannot beat its sorted rates.
    const auto t = gpuops::topo::build_preset("pcie-8gpu-gen4");
    std::mt19937 rng(11);
    for (const ModelParams& p : {default_model(), fair()}) {
        for (int trial = 0; trial < 200; ++trial) {
            auto flows = random_flows(t, rng, 2 + rng() % 20);
            auto before = max_min_rates(t, std::span(flows).first(flows.size() - 1), p);
            auto after = max_min_rates(t, flows, p);
            after.pop_back();
            std::sort(before.begin(), before.end());
            std::sort(after.begin(), after.end());
            const auto differ = std::mismatch(before.begin(), before.end(), after.begin(),
                                              [](double a, double b) { return std::abs(a - b) <= 1e-9 * a; });
            if (differ.first != before.end()) REQUIRE(*differ.second < *differ.first);
        }
    }
}

TEST_CASE("adding a flow never makes others finish earlier when all share one edge", "[flow_model]") {
    // A star: every flow crosses the shared edge 0 and a private edge of random width. Then a newcomer only
    // lowers the shared edge's fair share, so every other flow keeps at least as many bytes left at all times.
    std::mt19937 rng(3);
    for (int trial = 0; trial < 100; ++trial) {
        const std::size_t n = 2 + rng() % 12;
        std::vector<double> widths{10};
        for (std::size_t k = 0; k < n; ++k)
            widths.push_back(static_cast<double>(rng() % 12 + 1));
        const Topology t = chain(widths);
        std::vector<ModelFlow> flows;
        for (std::uint32_t k = 0; k < n; ++k)
            flows.push_back({{up(0), up(k + 1)}, static_cast<double>(rng() % 100 + 1) * 1e6, 0});
        for (const ModelParams& p : {default_model(), fair()}) {
            const auto before = simulate_phase(t, std::span(flows).first(n - 1), p, 0);
            const auto after = simulate_phase(t, flows, p, 0);
            for (std::size_t f = 0; f + 1 < n; ++f)
                REQUIRE(after.finish_us[f] >= before.finish_us[f] * (1 - 1e-9));
            REQUIRE(after.time_us >= before.time_us * (1 - 1e-9));
        }
    }
}

TEST_CASE("max-min is not monotone in general: a newcomer can speed up a flow it never meets", "[flow_model]") {
    // A on edge 0 (10 GB/s), B on edges 0 and 1 (8 GB/s). Alone they split edge 0: 5 and 5. A newcomer C on
    // edge 1 holds B to 4, and A takes the 6 B leaves on edge 0. Planners must not assume otherwise.
    const Topology t = chain({10, 8});
    std::vector<ModelFlow> flows{{{up(0)}, 6e9, 0}, {{up(0), up(1)}, 1e12, 0}};
    CHECK(simulate_phase(t, flows, fair()).finish_us[0] == Approx(1'200'000));
    flows.push_back({{up(1)}, 1e12, 0});
    CHECK(simulate_phase(t, flows, fair()).finish_us[0] == Approx(1'000'000));
}

TEST_CASE("the event window groups ends within it and stays close to the exact answer", "[flow_model]") {
    const Topology t = chain({10});
    // 0.1 % apart. Exact: both at 5 GB/s to 0.2 s, then the last 1 MB alone at 10 GB/s: 0.2001 s.
    const std::vector<ModelFlow> close{{{up(0)}, 1e9, 0}, {{up(0)}, 1.001e9, 0}};
    CHECK(simulate_phase(t, close, fair(), 0).finish_us[1] == Approx(200'100));
    // Default window (1 %): one event; the second ends at its own time at the shared rate.
    CHECK(simulate_phase(t, close, fair()).finish_us[1] == Approx(200'200));
    // The others move on to the rate-weighted mean of the grouped ends, so a full edge still moves exactly
    // its bytes: c ends at 5.001 GB / 10 GB/s as in the exact run (b's own end is 0.3003 s instead of 0.3002).
    const std::vector<ModelFlow> three{{{up(0)}, 1e9, 0}, {{up(0)}, 1.001e9, 0}, {{up(0)}, 3e9, 0}};
    const auto grouped = simulate_phase(t, three, fair());
    CHECK(grouped.finish_us[1] == Approx(300'300));
    CHECK(grouped.finish_us[2] == Approx(500'100));
    CHECK(simulate_phase(t, three, fair(), 0).finish_us[1] == Approx(300'200));
    // Ends further apart than the window stay exact.
    const std::vector<ModelFlow> apart{{{up(0)}, 1e9, 0}, {{up(0)}, 1.1e9, 0}};
    CHECK(simulate_phase(t, apart, fair()).finish_us[1] == Approx(210'000));

    // On a skewed all-to-all the window moves the phase time by well under the window.
    const auto node = gpuops::topo::build_preset("pcie-8gpu-gen4");
    const auto cluster = gpuops::topo::compose_cluster(node, 2, gpuops::topo::parse_fabric("nonblocking:200Gb/s"));
    const gpuops::topo::Router router(cluster);
    const auto gpus = cluster.devices_of(gpuops::topo::DeviceKind::gpu);
    std::vector<ModelFlow> flows;
    std::mt19937 rng(5);
    for (DeviceId s : gpus)
        for (DeviceId d : gpus)
            if (s != d) flows.push_back({router.route(s, d).edges, static_cast<double>(rng() % 256) * 14336, 0});
    const double exact = simulate_phase(cluster, flows, default_model(), 0).time_us;
    const double windowed = simulate_phase(cluster, flows, default_model()).time_us;
    CHECK(windowed == Approx(exact).epsilon(default_event_window / 2));
}

TEST_CASE("bad flows and edges are reported", "[flow_model]") {
    const Topology t = chain({10, 0});
    CHECK_THROWS_AS(simulate_phase(t, std::vector<ModelFlow>{{{up(5)}, 1, 0}}, fair()), InternalError);
    CHECK_THROWS_AS(simulate_phase(t, std::vector<ModelFlow>{{{up(0)}, -1, 0}}, fair()), InternalError);
    CHECK_THROWS_WITH(simulate_phase(t, std::vector<ModelFlow>{{{up(0), up(1)}, 1, 0}}, fair()),
                      Catch::Contains("the edge 'd1->d2' has no usable bandwidth"));
}

TEST_CASE("the default model: alpha 10 us, eta k^(-1/3) from 1 to 0.25, every number with its source", "[flow_model]") {
    const ModelParams p = default_model();
    CHECK(p.alpha_us == 10);
    CHECK(p.latency_scale == 1);
    REQUIRE(p.eta.size() == 64);
    CHECK(p.eta[0] == 1);
    CHECK(p.efficiency(2) == 0.7937);
    CHECK(p.efficiency(8) == 0.5);
    CHECK(p.efficiency(32) == 0.315);
    CHECK(p.efficiency(64) == 0.25);
    CHECK(p.efficiency(10'000) == 0.25);
    CHECK(std::is_sorted(p.eta.rbegin(), p.eta.rend()));
    CHECK(std::adjacent_find(p.eta.begin(), p.eta.end()) == p.eta.end());  // strictly falling
    for (const char* name : {"alpha_us", "eta", "latency_scale"}) {
        REQUIRE(p.sources.count(name) == 1);
        CHECK_THAT(p.sources.at(name), Catch::Contains("research/variopath.md"));
    }
}

TEST_CASE("the default eta puts the presets' all-peers exchange in p2pmark's measured ranges", "[flow_model]") {
    // p2pmark's dense score: aggregate bandwidth with every GPU exchanging with every peer, over the sum of the
    // GPUs' links. Measured 0.38-0.64 on switch boxes and 0.11 on a dual-socket box (research/variopath.md 1.2).
    const auto score = [](const char* preset) {
        const auto t = gpuops::topo::build_preset(preset);
        const gpuops::topo::Router router(t);
        const auto gpus = t.devices_of(gpuops::topo::DeviceKind::gpu);
        std::vector<ModelFlow> flows;
        for (DeviceId s : gpus)
            for (DeviceId d : gpus)
                if (s != d) flows.push_back({router.route(s, d).edges, 1e8, 0});
        const double link = t.edge(router.route(gpus[0], gpus[1]).edges[0]).bandwidth;
        const double seconds = simulate_phase(t, flows, default_model()).time_us * 1e-6;
        return static_cast<double>(flows.size()) * 1e8 / seconds / (static_cast<double>(gpus.size()) * link);
    };
    const double single_switch = score("pcie-10gpu-1switch");
    CHECK(single_switch == Approx(0.481).margin(0.001));
    CHECK(single_switch >= 0.38);
    CHECK(single_switch <= 0.64);
    const double dual_socket = score("pcie-8gpu-gen4");
    CHECK(dual_socket == Approx(0.152).margin(0.001));
    CHECK(dual_socket < 0.2);
}

TEST_CASE("gpuops.model round-trips and names its sources", "[flow_model]") {
    const ModelParams p = default_model();
    const Json doc = to_json(p);
    CHECK(doc["schema"] == "gpuops.model");
    CHECK(doc["schema_version"] == 1);
    CHECK(doc["generator"]["tool"] == "vp-plan");
    CHECK(doc["alpha_us"] == 10);
    CHECK(doc["eta"].size() == 64);
    CHECK(read_model(doc, "model.json") == p);

    ModelParams custom;
    custom.alpha_us = 7.5;
    custom.eta = {1, 0.9, 0.9, 0.4};
    custom.latency_scale = 0;
    custom.sources = {{"alpha_us", "vp-bench --calibrate on node07"}, {"note", "kept"}};
    const ModelParams back = read_model(to_json(custom), "calib.json");
    CHECK(back.alpha_us == 7.5);
    CHECK(back.eta == custom.eta);
    CHECK(back.latency_scale == 0);
    CHECK(back.sources.at("alpha_us") == "vp-bench --calibrate on node07");
    CHECK(back.sources.at("note") == "kept");
    CHECK(back.sources.at("eta") == "model file 'calib.json'");  // a number without a source gets the file's
    CHECK(back.sources.at("latency_scale") == "model file 'calib.json'");

    Json minimal = gpuops::json_io::make_header("gpuops.model", 1, "test");
    minimal["alpha_us"] = 0;
    minimal["eta"] = {1};
    const ModelParams m = read_model(minimal, "m.json");
    CHECK(m.latency_scale == 1);
    CHECK(m.eta == std::vector<double>{1});
}

TEST_CASE("bad model files are rejected with the file and the JSON pointer", "[flow_model]") {
    const auto bad = [](const char* key, const Json& value) {
        Json doc = to_json(default_model());
        doc[key] = value;
        return doc;
    };
    const auto fails = [](const Json& doc, const std::string& expected) {
        INFO(expected);
        CHECK_THROWS_AS(read_model(doc, "calib.json"), DataError);
        CHECK_THROWS_WITH(read_model(doc, "calib.json"), Catch::Contains("'calib.json': " + expected));
    };
    fails(bad("alpha_us", -1), "(/alpha_us) expected a non-negative alpha_us, got -1");
    fails(bad("alpha_us", "10"), "(/alpha_us) expected a number, got string");
    fails(bad("eta", {1, 0.5, 0.6}), "(/eta/2) expected a non-increasing efficiency, got 0.6 after 0.5");
    fails(bad("eta", {1, 1.5}), "(/eta/1) expected an efficiency in (0, 1], got 1.5");
    fails(bad("eta", {1, 0}), "(/eta/1) expected an efficiency in (0, 1], got 0");
    fails(bad("eta", {0.9, 0.5}), "(/eta/0) expected 1 for a lone flow, got 0.9");
    fails(bad("eta", Json::array()), "(/eta) expected at least one efficiency");
    fails(bad("eta", 0.5), "(/eta) expected an array, got number");
    fails(bad("latency_scale", -0.5), "(/latency_scale) expected a non-negative latency_scale, got -0.5");
    fails(bad("sources", {{"eta", 3}}), "(/sources/eta) expected a string, got number");
    fails(bad("sources", Json::array()), "(/sources) expected an object, got array");
    fails(bad("schema", "gpuops.topology"), "(/schema) expected a 'gpuops.model' document, got 'gpuops.topology'");
    fails(bad("schema_version", 2), "(/schema_version) unsupported 'gpuops.model' schema_version 2");
    Json missing = to_json(default_model());
    missing.erase("alpha_us");
    fails(missing, "(/alpha_us) missing required field");
}
