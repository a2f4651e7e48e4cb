// The fast baseline and relayed hops: FAST delivers every byte once through its hop chains, its scale-out
// steps are server permutations on the rails, on one node it is the plain intra-server all-to-all; check_plan
// follows each byte's chain of hops and names every kind of broken one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gpuops/alltoall/fast.hpp"
#include "gpuops/alltoall/planner.hpp"
#include "gpuops/topo/cluster.hpp"
#include "gpuops/topo/presets.hpp"

using namespace gpuops::alltoall;
using gpuops::topo::PathKind;
using gpuops::topo::Topology;

namespace {

/// A hop of bytes [begin, end) of some origin's send buffer.
struct HopRange {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::size_t step = 0;
    std::size_t src = 0;
    std::size_t dst = 0;
};

/// Bytes conservation through relays, written independently of the planner: for every origin GPU i and every
/// byte of its send buffer, the final destination is the chunk the byte lies in; the hops that carry the byte
/// must form one chain i → ... → destination, each hop leaving from where the previous one arrived, in a
/// strictly later step. So every byte arrives exactly once, none is carried twice or left on a relay, nothing
/// outside the buffer moves and the diagonal (a GPU's own chunk) never does.
std::vector<std::string> relay_violations(const Plan& plan, const Demand& d) {
    const std::size_t n = d.size();
    std::vector<std::string> v;
    std::vector<std::vector<HopRange>> hops(n);
    for (std::size_t s = 0; s < plan.steps.size(); ++s)
        for (const auto& tr : plan.steps[s].transfers)
            if (tr.bytes > 0) hops.at(tr.origin_gpu()).push_back({tr.offset, tr.offset + tr.bytes, s, tr.src, tr.dst});
    for (std::size_t i = 0; i < n && v.size() < 10; ++i) {
        std::vector<std::uint64_t> starts{0};  // chunk j is [starts[j], starts[j + 1])
        for (std::size_t j = 0; j < n; ++j)
            starts.push_back(starts.back() + d.at(i, j));
        std::vector<std::uint64_t> cuts = starts;
        for (const auto& h : hops[i]) {
            cuts.push_back(h.begin);
            cuts.push_back(h.end);
        }
        std::sort(cuts.begin(), cuts.end());
        cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
        for (std::size_t c = 0; c + 1 < cuts.size() && v.size() < 10; ++c) {
            const std::uint64_t lo = cuts[c];
            const std::uint64_t hi = cuts[c + 1];
            std::vector<HopRange> chain;
            for (const auto& h : hops[i])
                if (h.begin <= lo && lo < h.end) chain.push_back(h);
            const auto where = fmt::format("bytes {}..{} of GPU {}", lo, hi, i);
            if (lo >= starts.back()) {
                if (!chain.empty()) v.push_back(where + ": beyond the send buffer, yet sent");
                continue;
            }
            const auto final_gpu =
                static_cast<std::size_t>(std::upper_bound(starts.begin(), starts.end(), lo) - starts.begin() - 1);
            if (final_gpu == i) {
                if (!chain.empty()) v.push_back(where + ": its own chunk, yet sent");
                continue;
            }
            std::stable_sort(chain.begin(), chain.end(),
                             [](const HopRange& a, const HopRange& b) { return a.step < b.step; });
            std::size_t at = i;
            bool broken = false;
            for (std::size_t k = 0; k < chain.size(); ++k) {
                if (chain[k].src != at || (k > 0 && chain[k].step <= chain[k - 1].step)) {
                    v.push_back(fmt::format("{} (for GPU {}): the hop {}->{} in step {} does not continue from GPU {}",
                                            where, final_gpu, chain[k].src, chain[k].dst, chain[k].step, at));
                    broken = true;
                    break;
                }
                at = chain[k].dst;
            }
            if (!broken && at != final_gpu)
                v.push_back(fmt::format("{}: end on GPU {}, not on GPU {}", where, at, final_gpu));
        }
    }
    return v;
}

/// Every transfer follows the topology's path of its kind through its via devices.
bool paths_are_real(const Plan& plan, const Demand& d, const gpuops::topo::Router& router) {
    for (const auto& step : plan.steps) {
        for (const auto& tr : step.transfers) {
            auto path = router.path_through(tr.kind, d.gpus[tr.src], d.gpus[tr.dst], tr.via);
            std::sort(path.edges.begin(), path.edges.end());
            if (path.edges != tr.edges) return false;
        }
    }
    return true;
}

/// Per GPU index: its server (node) and its local index there, in demand order.
struct Place {
    int node = 0;
    std::size_t local = 0;
};

std::vector<Place> places(const Demand& d, const Topology& t) {
    std::map<int, std::size_t> count;
    std::vector<Place> out;
    for (auto gpu : d.gpus) {
        const int node = t.devices[gpu].node;
        out.push_back({node, count[node]++});
    }
    return out;
}

/// A plan of `demand` on `router`'s topology, timed with the default model: check_plan also checks the numbers.
Plan timed(Plan plan, const Demand& demand, const gpuops::topo::Router& router) {
    time_plan(plan, demand, router.topology(), default_model());
    return plan;
}

/// A hop from GPU index i to j on the default path: `bytes` at `offset` of `origin`'s send buffer.
Transfer hop(const Demand& d, const gpuops::topo::Router& router, std::size_t origin, std::size_t i, std::size_t j,
             std::uint64_t offset, std::uint64_t bytes) {
    return make_hop(d, origin, i, j, router.route(d.gpus[i], d.gpus[j]), offset, bytes);
}

/// On pcie-4gpu-direct with 1 MiB chunks: every pair direct in step 0, except gpu0's chunk for gpu2, which
/// goes through gpu1 (gpu0 -> gpu1 in step 0, gpu1 -> gpu2 in step 1).
struct RelayFixture {
    Topology t = gpuops::topo::build_preset("pcie-4gpu-direct");
    gpuops::topo::Router router{t};
    Demand demand = load_demand("uniform:bytes=1MiB", t);
    std::uint64_t chunk = chunk_offset(demand, 0, 2);
    std::uint64_t size = demand.at(0, 2);

    [[nodiscard]] Plan plan() const {
        Plan p = plan_direct(demand, router);
        auto& first = p.steps.at(0).transfers;
        const auto it =
            std::find_if(first.begin(), first.end(), [](const Transfer& x) { return x.src == 0 && x.dst == 2; });
        *it = hop(demand, router, 0, 0, 1, chunk, size);
        p.steps.push_back(Step{{hop(demand, router, 0, 1, 2, chunk, size)}, 0});
        return p;
    }
};

Topology rail_cluster(int nodes) {
    return gpuops::topo::compose_cluster(gpuops::topo::build_preset("pcie-8gpu-gen4"), nodes,
                                         gpuops::topo::parse_fabric("rail"));
}

}  // namespace

TEST_CASE("fast on one node is the intrinsic all-to-all in one step", "[baselines]") {
    const Topology t = gpuops::topo::build_preset("pcie-8gpu-gen4");
    const gpuops::topo::Router router(t);
    const auto demand = load_demand("zipf:s=1.2,bytes=32MiB,seed=2", t);
    auto plan = plan_fast(demand, router);
    CHECK(plan.algorithm == "fast");
    CHECK_FALSE(plan.exclusive);
    REQUIRE(plan.steps.size() == 1);
    CHECK(plan.steps[0].transfers.size() == demand.size() * (demand.size() - 1));
    for (const auto& tr : plan.steps[0].transfers) {
        CHECK(tr.kind == PathKind::direct);
        CHECK_FALSE(tr.origin.has_value());
        CHECK(tr.offset == chunk_offset(demand, tr.src, tr.dst));
        CHECK(tr.bytes == demand.at(tr.src, tr.dst));
    }
    time_plan(plan, demand, t, default_model());
    for (const auto& v : check_plan(plan, demand, router, 5))
        FAIL_CHECK(v);
    CHECK(relay_violations(plan, demand).empty());
    const auto direct = make_plan("direct", demand, router, nullptr, default_model());
    CHECK(plan.predicted_time_us == Approx(direct.predicted_time_us).epsilon(1e-12));
}

TEST_CASE("fast relays every byte once: balance, rail-aligned server permutations, restore", "[baselines]") {
    for (int nodes : {2, 4}) {
        const Topology t = rail_cluster(nodes);
        const gpuops::topo::Router router(t);
        const auto where = places(load_demand("uniform:bytes=1", t), t);
        for (const char* spec : {"zipf:s=1.2,bytes=32MiB,seed=5",
                                 "moe:experts=64,topk=8,tokens=1024,hidden=7168,dtype=bf16,zipf=1.2,seed=1"}) {
            INFO(nodes << " nodes, " << spec);
            const auto demand = load_demand(spec, t);
            const Plan plan = plan_fast(demand, router);
            for (const auto& v : relay_violations(plan, demand))
                FAIL_CHECK(v);
            CHECK(paths_are_real(plan, demand, router));

            std::size_t scale_out_steps = 0;
            std::size_t relayed = 0;
            for (std::size_t s = 0; s < plan.steps.size(); ++s) {
                std::map<int, std::set<int>> sends_to;
                std::map<int, std::set<int>> receives_from;
                for (const auto& tr : plan.steps[s].transfers) {
                    CHECK(tr.kind == PathKind::direct);
                    if (tr.origin) {
                        CHECK(*tr.origin != tr.src);
                        ++relayed;
                    }
                    const Place& a = where[tr.src];
                    const Place& b = where[tr.dst];
                    if (a.node == b.node) continue;
                    CHECK(s > 0);               // the balance step stays inside the servers
                    CHECK(a.local == b.local);  // rail-aligned: GPU i of one server to GPU i of another
                    sends_to[a.node].insert(b.node);
                    receives_from[b.node].insert(a.node);
                }
                for (const auto& [node, to] : sends_to)
                    CHECK(to.size() == 1);  // a permutation of servers: one peer each way per step
                for (const auto& [node, from] : receives_from)
                    CHECK(from.size() == 1);
                if (!sends_to.empty()) ++scale_out_steps;
            }
            CHECK(scale_out_steps > 0);
            CHECK(relayed > 0);
            // Birkhoff–von Neumann needs at most S² − 2S + 2 permutations.
            const auto s_count = static_cast<std::size_t>(nodes);
            CHECK(scale_out_steps <= s_count * s_count - 2 * s_count + 2);

            const Plan timed_plan = timed(plan, demand, router);
            CHECK(timed_plan.predicted_time_us >= timed_plan.lower_bound_us);
            for (const auto& v : check_plan(timed_plan, demand, router, 20))
                FAIL_CHECK(v);
            const auto made = make_plan("fast", demand, router, nullptr, default_model());
            CHECK(made.predicted_time_us == Approx(timed_plan.predicted_time_us).epsilon(1e-12));
            CHECK(made.planning_time_us > 0);

            // gpuops.plan stays version 1: origin is optional, written only for relayed hops, and read back.
            const auto doc = to_json(timed_plan, demand, t);
            CHECK(doc["schema_version"] == 1);
            std::size_t with_origin = 0;
            for (const auto& step : doc["steps"])
                for (const auto& tr : step["transfers"])
                    with_origin += tr.contains("origin") ? 1 : 0;
            CHECK(with_origin == relayed);
            const auto back = plan_from_json(doc, demand, router, "plan.json");
            REQUIRE(back.steps.size() == timed_plan.steps.size());
            for (std::size_t s = 0; s < back.steps.size(); ++s) {
                REQUIRE(back.steps[s].transfers.size() == timed_plan.steps[s].transfers.size());
                for (std::size_t k = 0; k < back.steps[s].transfers.size(); ++k)
                    CHECK(back.steps[s].transfers[k].origin == timed_plan.steps[s].transfers[k].origin);
            }
            for (const auto& v : check_plan(back, demand, router, 5))
                FAIL_CHECK(v);
        }
    }
}

TEST_CASE("the hop-chain check catches a dropped, a doubled and a premature hop in a fast plan", "[baselines]") {
    const Topology t = rail_cluster(2);
    const gpuops::topo::Router router(t);
    const auto demand = load_demand("zipf:s=1.2,bytes=8MiB,seed=9", t);
    const auto good = timed(plan_fast(demand, router), demand, router);
    REQUIRE(relay_violations(good, demand).empty());
    REQUIRE(check_plan(good, demand, router, 5).empty());
    REQUIRE(good.steps.size() >= 3);
    REQUIRE(good.steps.back().transfers.back().origin.has_value());  // the last restore forwards relayed bytes

    SECTION("a restore left out: the bytes stay on the relay") {
        auto bad = good;
        bad.steps.back().transfers.pop_back();
        CHECK_THAT(relay_violations(bad, demand).at(0), Catch::Contains("end on GPU"));
        const auto v = check_plan(timed(bad, demand, router), demand, router, 5);
        REQUIRE(v.size() == 1);
        CHECK_THAT(v.front(), Catch::Contains("of the send buffer end on") && Catch::Contains(", not on"));
    }
    SECTION("a scale-out hop sent twice") {
        auto bad = good;
        auto& step = bad.steps[1];
        step.transfers.push_back(step.transfers.front());
        CHECK_THAT(relay_violations(bad, demand).at(0), Catch::Contains("does not continue"));
        const auto v = check_plan(timed(bad, demand, router), demand, router, 5);
        REQUIRE_FALSE(v.empty());
        CHECK_THAT(v.front(), Catch::Contains("are sent twice from"));
    }
    SECTION("the last restore in the step of the scale-out that feeds it") {
        auto bad = good;
        auto& before = bad.steps[bad.steps.size() - 2].transfers;
        const auto& last = bad.steps.back().transfers;
        before.insert(before.end(), last.begin(), last.end());
        bad.steps.pop_back();
        CHECK_THAT(relay_violations(bad, demand).at(0), Catch::Contains("does not continue"));
        const auto v = check_plan(timed(bad, demand, router), demand, router, 5);
        REQUIRE_FALSE(v.empty());
        CHECK_THAT(v.front(), Catch::Contains("and leave it in the same step"));
    }
}

TEST_CASE("the hop-chain check accepts a relay and names each broken chain", "[baselines]") {
    const RelayFixture f;
    const auto& d = f.demand;
    const auto good = timed(f.plan(), d, f.router);
    REQUIRE(good.steps.size() == 2);
    for (const auto& v : check_plan(good, d, f.router, 5))
        FAIL_CHECK(v);
    CHECK(relay_violations(good, d).empty());
    const auto check = [&](Plan p) { return check_plan(timed(std::move(p), d, f.router), d, f.router, 5); };
    const auto range = fmt::format("bytes {}..{} of the send buffer", f.chunk, f.chunk + f.size);

    SECTION("forwarded in the step it arrives") {
        auto bad = f.plan();
        bad.steps[0].transfers.push_back(bad.steps[1].transfers.front());
        bad.steps.pop_back();
        const auto v = check(bad);
        REQUIRE(v.size() == 1);
        CHECK(v.front() == "gpu0->gpu2: " + range +
                               " arrive on gpu1 in step 0 and leave it in the same step (a relay "
                               "forwards them in a later one)");
    }
    SECTION("forwarded by a GPU that does not hold the bytes") {
        auto bad = f.plan();
        bad.steps[1].transfers.front() = hop(d, f.router, 0, 3, 2, f.chunk, f.size);
        const auto v = check(bad);
        REQUIRE(v.size() == 1);
        CHECK(v.front() == "gpu0->gpu2: " + range + " leave gpu3 in step 1 before they arrive there");
    }
    SECTION("the last hop to another GPU than the chunk's") {
        auto bad = f.plan();
        bad.steps[1].transfers.front() = hop(d, f.router, 0, 1, 3, f.chunk, f.size);
        const auto v = check(bad);
        REQUIRE(v.size() == 1);
        CHECK(v.front() == "gpu0->gpu2: " + range + " end on gpu3, not on gpu2");
    }
    SECTION("the bytes left on the relay, half of them") {
        auto bad = f.plan();
        bad.steps[1].transfers.front().bytes = f.size / 2;
        const auto v = check(bad);
        REQUIRE(v.size() == 1);
        CHECK(v.front() == fmt::format("gpu0->gpu2: bytes {}..{} of the send buffer end on gpu1, not on gpu2",
                                       f.chunk + f.size / 2, f.chunk + f.size));
    }
    SECTION("delivered, carried away and delivered again") {
        auto bad = f.plan();
        bad.steps.push_back(Step{{hop(d, f.router, 0, 2, 3, f.chunk, f.size)}, 0});
        bad.steps.push_back(Step{{hop(d, f.router, 0, 3, 2, f.chunk, f.size)}, 0});
        const auto v = check(bad);
        REQUIRE(v.size() == 1);
        CHECK(v.front() == "gpu0->gpu2: " + range + " arrive on gpu2 twice (steps 1 and 3)");
    }
    SECTION("a relay that claims another GPU's bytes") {
        auto bad = f.plan();
        // gpu1 forwards bytes 1..2 MiB of gpu3's buffer, which are gpu3's chunk for gpu1, delivered in step 0;
        // gpu0's bytes for gpu2 stay on gpu1.
        REQUIRE(chunk_offset(d, 3, 1) == f.chunk);
        bad.steps[1].transfers.front().origin = 3;
        const auto v = check(bad);
        REQUIRE(v.size() == 2);
        CHECK(v[0] == "gpu0->gpu2: " + range + " end on gpu1, not on gpu2");
        CHECK(v[1] == "gpu3->gpu1: " + range + " end on gpu2, not on gpu1");
    }
    SECTION("bytes beyond the send buffer, relayed") {
        auto bad = f.plan();
        const std::uint64_t end = chunk_offset(d, 0, 3) + d.at(0, 3);
        bad.steps[1].transfers.push_back(hop(d, f.router, 0, 1, 2, end, 4096));
        const auto v = check(bad);
        REQUIRE(v.size() == 1);
        CHECK(v.front() == fmt::format("gpu0: bytes {}..{} of the send buffer lie beyond its end ({} bytes), yet are "
                                       "sent",
                                       end, end + 4096, end));
    }
    SECTION("a GPU's own chunk, relayed") {
        auto own = f.demand;
        own.at(1, 1) = 4096;  // gpu1's own chunk now sits before its chunks for gpu2 and gpu3
        auto bad = plan_direct(own, f.router);
        bad.steps.push_back(Step{{hop(own, f.router, 1, 1, 0, chunk_offset(own, 1, 1), 4096)}, 0});
        const auto v = check_plan(timed(bad, own, f.router), own, f.router, 5);
        REQUIRE(v.size() == 1);
        CHECK(v.front() == fmt::format("gpu1: bytes {}..{} of the send buffer are its own chunk (a local copy), yet "
                                       "are sent",
                                       chunk_offset(own, 1, 1), chunk_offset(own, 1, 1) + 4096));
    }
    SECTION("a document naming an origin that is not a GPU of the demand") {
        auto doc = to_json(good, d, f.t);
        doc["steps"][1]["transfers"][0]["origin"] = "gpu9";
        CHECK_THROWS_WITH(plan_from_json(doc, d, f.router, "plan.json"),
                          Catch::Contains("(/steps/1/transfers/0/origin) no GPU 'gpu9' in the topology"));
    }
    SECTION("the document keeps the relay") {
        const auto doc = to_json(good, d, f.t);
        CHECK(doc["steps"][1]["transfers"][0]["origin"] == "gpu0");
        CHECK_FALSE(doc["steps"][0]["transfers"][0].contains("origin"));
        const auto back = plan_from_json(doc, d, f.router, "plan.json");
        CHECK(check_plan(back, d, f.router, 5).empty());
        auto plain = doc;  // without its origin, gpu1 would forward bytes of its own buffer that were not for gpu2
        plain["steps"][1]["transfers"][0].erase("origin");
        const auto v = check_plan(plan_from_json(plain, d, f.router, "plan.json"), d, f.router, 5);
        REQUIRE_FALSE(v.empty());
        CHECK(v.front() == "gpu0->gpu2: " + range + " end on gpu1, not on gpu2");
    }
}

TEST_CASE("a step's transfers between the same GPUs on the same path are one message to the model", "[baselines]") {
    const RelayFixture f;
    const auto& d = f.demand;
    const auto path = f.router.route(d.gpus[0], d.gpus[1]);
    const std::uint64_t at = chunk_offset(d, 0, 1);
    const std::uint64_t size = d.at(0, 1);
    const std::uint64_t part = size / 4;
    Plan whole;
    whole.steps.push_back(Step{{make_transfer(d, 0, 1, path, at, size)}, 0});
    Plan split;
    split.steps.push_back(
        Step{{make_transfer(d, 0, 1, path, at, part), make_transfer(d, 0, 1, path, at + part, size - part)}, 0});
    const double one = timed(whole, d, f.router).predicted_time_us;
    CHECK(timed(split, d, f.router).predicted_time_us == Approx(one).epsilon(1e-12));
    // On another path (out through the NIC and back) the second piece is a flow of its own: the two share the
    // GPUs' links, each at eta(2).
    auto apart = split;
    for (const auto& p : f.router.alternatives(d.gpus[0], d.gpus[1]))
        if (p.kind == PathKind::nic_loopback)
            apart.steps[0].transfers[1] = make_transfer(d, 0, 1, p, at + part, size - part);
    REQUIRE(apart.steps[0].transfers[1].kind == PathKind::nic_loopback);
    CHECK(timed(apart, d, f.router).predicted_time_us > one * 1.1);
}

TEST_CASE("fast needs the same number of GPUs in every node", "[baselines]") {
    const Topology t = rail_cluster(2);
    const gpuops::topo::Router router(t);
    auto demand = load_demand("uniform:bytes=1MiB", t);
    demand.gpus.pop_back();  // 8 GPUs in one node, 7 in the other
    demand.bytes.assign(demand.gpus.size() * demand.gpus.size(), 4096);
    CHECK_THROWS_WITH(plan_fast(demand, router), Catch::Contains("the same number of GPUs in every node"));
}
