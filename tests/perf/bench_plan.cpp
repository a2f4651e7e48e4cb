// make bench: plans five demand families on 8 to 256 GPUs with VarioPath and every baseline, reports modelled
// time, efficiency and speedups against the targets, and times planning; markdown plus a JSON document.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include "gpuops/alltoall/catalog.hpp"
#include "gpuops/alltoall/demand.hpp"
#include "gpuops/alltoall/fast.hpp"
#include "gpuops/alltoall/flow_model.hpp"
#include "gpuops/alltoall/plan.hpp"
#include "gpuops/alltoall/planner.hpp"
#include "gpuops/core/cli.hpp"
#include "gpuops/core/error.hpp"
#include "gpuops/core/json_io.hpp"
#include "gpuops/core/output.hpp"
#include "gpuops/topo/cluster.hpp"
#include "gpuops/topo/presets.hpp"
#include "gpuops/topo/routing.hpp"

namespace {

namespace alltoall = gpuops::alltoall;
namespace topo = gpuops::topo;
using gpuops::json_io::Json;
using Clock = std::chrono::steady_clock;

constexpr std::string_view report_schema = "gpuops.bench_plan";
constexpr int report_schema_version = 1;
constexpr std::string_view budget_variable = "GPUOPS_BENCH_PLAN_BUDGET_S";
constexpr double default_budget_seconds = 60;
constexpr std::string_view fabric = "rail";
constexpr std::string_view variopath = "variopath";
/// VarioPath with --search scan: the exhaustive reference on single nodes, beside the table.
constexpr std::string_view variopath_scan = "variopath --search scan";

// The targets.
constexpr double target_geomean_efficiency = 0.90;
constexpr double target_min_efficiency = 0.75;
constexpr std::size_t small_gpus = 8;
constexpr double target_small_latency_us = 20;
constexpr std::size_t large_gpus = 256;
constexpr double target_large_latency_us = 10'000;
/// The platform sizes of the latency table.
constexpr std::array<std::size_t, 3> latency_gpus = {small_gpus, 64, large_gpus};

/// Planning calls per latency row; fewer (an odd number: one call when it alone takes the cap) once the calls
/// add up to the cap.
constexpr std::size_t latency_calls = 21;
constexpr double latency_seconds_cap = 3;
constexpr std::size_t max_violations = 10;

struct Platform {
    std::string preset;
    int nodes = 1;
};

struct Family {
    std::string name;
    std::string spec;
};

/// Every spec with a random part pins its seed, so every run plans the same matrices. zipf, hot and moe fix
/// what each GPU sends (moe: `tokens` per GPU), so the per-GPU work of the 8-GPU node holds on every platform;
/// uniform fixes each pair's chunk instead, and moe's 64 experts leave GPUs without one past 64 GPUs.
const std::vector<Family>& families() {
    static const std::vector<Family> all = {
        {"uniform", "uniform:bytes=64MiB"},
        {"zipf-0.8", "zipf:s=0.8,bytes=512MiB,seed=1"},
        {"zipf-1.2", "zipf:s=1.2,bytes=512MiB,seed=1"},
        {"hot", "hot:experts=1,fraction=0.5,bytes=512MiB,seed=1"},
        {"moe", "moe:experts=64,topk=8,tokens=4096,hidden=7168,dtype=bf16,zipf=1.2,seed=1"}};
    return all;
}

const std::vector<Platform>& platforms() {
    static const std::vector<Platform> all = {{"pcie-8gpu-gen4", 1},
                                              {"pcie-8gpu-gen4", 2},
                                              {"pcie-8gpu-gen4", 8},
                                              {"pcie-8gpu-gen4", 32},
                                              {"pcie-8gpu-gen5", 1}};
    return all;
}

/// One platform, ready to plan on: the router and catalog point into the topology, so it stays put.
struct Machine {
    Platform platform;
    std::string label;
    std::unique_ptr<topo::Topology> topology;
    std::unique_ptr<topo::Router> router;
    std::unique_ptr<alltoall::Catalog> catalog;
    std::unique_ptr<alltoall::VarioPathPlanner> planner;
    std::unique_ptr<alltoall::VarioPathPlanner> scan;  ///< single nodes with a listable catalog
    std::string planner_missing;  ///< the library's DataError when the planner cannot be built here
    std::size_t gpus = 0;
};

std::unique_ptr<Machine> make_machine(const Platform& p) {
    auto m = std::make_unique<Machine>();
    m->platform = p;
    topo::Topology node = topo::build_preset(p.preset);
    m->topology = std::make_unique<topo::Topology>(
        p.nodes == 1 ? std::move(node) : topo::compose_cluster(node, p.nodes, topo::parse_fabric(fabric)));
    m->router = std::make_unique<topo::Router>(*m->topology);
    m->gpus = m->topology->devices_of(topo::DeviceKind::gpu).size();
    m->label = p.nodes == 1 ? fmt::format("{} GPUs (1 × {})", m->gpus, p.preset)
                            : fmt::format("{} GPUs ({} × {}, {})", m->gpus, p.nodes, p.preset, fabric);
    m->catalog = std::make_unique<alltoall::Catalog>(alltoall::Catalog::build(*m->topology));
    try {
        m->planner = std::make_unique<alltoall::VarioPathPlanner>(*m->catalog, *m->router);
    } catch (const gpuops::DataError& e) {
        m->planner_missing = e.what();
    }
    if (p.nodes == 1) {
        try {
            m->scan = std::make_unique<alltoall::VarioPathPlanner>(*m->catalog, *m->router, alltoall::StepSearch::scan);
        } catch (const gpuops::DataError&) {
            // Too many channels to list (the 10-GPU box): no reference row.
        }
    }
    return m;
}

/// Repeated measurements of one quantity.
struct Samples {
    std::vector<double> values;

    [[nodiscard]] double median() const {
        if (values.empty()) return 0;
        std::vector<double> v = values;
        std::sort(v.begin(), v.end());
        const std::size_t n = v.size();
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }
    [[nodiscard]] double min() const { return values.empty() ? 0 : *std::min_element(values.begin(), values.end()); }
    [[nodiscard]] Json to_json() const { return {{"median", median()}, {"min", min()}, {"samples", values}}; }
};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

using BaselineFn = alltoall::Plan (*)(const alltoall::Demand&, const topo::Router&);

/// The baselines the bench can give up on between steps; other names go through make_plan whole.
BaselineFn baseline(std::string_view name) {
    if (name == "direct") return &alltoall::plan_direct;
    if (name == "pairwise") return &alltoall::plan_pairwise;
    if (name == "bvn") return &alltoall::plan_bvn;
    if (name == "fast") return &alltoall::plan_fast;
    return nullptr;
}

/// Runs the planner the name stands for once and returns the plan with its planning time (the call alone,
/// as make_plan measures it; the planner of a catalog is built beforehand). Steps are not timed yet.
alltoall::Plan plan_once(const Machine& m, std::string_view name, const alltoall::Demand& demand,
                         const alltoall::ModelParams& model) {
    const auto start = Clock::now();
    alltoall::Plan plan;
    if (name == variopath) {
        plan = m.planner->plan(demand, model);
    } else if (name == variopath_scan) {
        plan = m.scan->plan(demand, model);
    } else if (const BaselineFn fn = baseline(name)) {
        plan = fn(demand, *m.router);
    } else {
        return alltoall::make_plan(name, demand, *m.router, m.catalog.get(), model);
    }
    plan.planning_time_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    return plan;
}

/// time_plan one step at a time, so that a plan whose model runs past `deadline` is given up between steps
/// instead of hanging make bench. Returns the steps modelled (all of them: the plan is timed). The step times
/// add up in time_plan_steps' order, so check_plan finds the same predicted time.
std::size_t time_plan_until(alltoall::Plan& plan, const alltoall::Demand& demand, const topo::Topology& topology,
                            const alltoall::ModelParams& model, Clock::time_point deadline) {
    plan.model = model;
    plan.predicted_time_us = 0;
    alltoall::Plan one;
    one.model = model;
    one.steps.resize(1);
    std::size_t modelled = 0;
    for (auto& step : plan.steps) {
        if (Clock::now() > deadline) return modelled;
        one.steps.front() = std::move(step);
        alltoall::time_plan_steps(one, topology);
        step = std::move(one.steps.front());
        plan.predicted_time_us += step.time_us;
        ++modelled;
    }
    plan.lower_bound_us = alltoall::cut_lower_bound_us(demand, topology);
    plan.efficiency = plan.predicted_time_us > 0 ? plan.lower_bound_us / plan.predicted_time_us : 1;
    return modelled;
}

enum class CellStatus { ok, not_built, skipped };

std::string_view to_string(CellStatus s) {
    switch (s) {
        case CellStatus::ok: return "ok";
        case CellStatus::not_built: return "not_built";
        case CellStatus::skipped: return "skipped";
    }
    return "ok";
}

/// One algorithm on one platform and demand.
struct Cell {
    std::string algorithm;
    CellStatus status = CellStatus::ok;
    std::string reason;  ///< not_built: the library's error; skipped: what ran too long
    double predicted_time_us = 0;
    double efficiency = 0;
    double planning_time_us = 0;
    std::size_t steps = 0;
    std::size_t transfers = 0;
    double bench_seconds = 0;  ///< planning, the model and check_plan, as this bench spent them
};

struct Scenario {
    std::string platform;
    std::size_t gpus = 0;
    Family family;
    std::uint64_t total_bytes = 0;
    double lower_bound_us = 0;
    std::vector<Cell> cells;   ///< in alltoall::algorithm_names() order
    std::optional<Cell> scan;  ///< VarioPath with --search scan, where the catalog can be listed

    [[nodiscard]] const Cell* cell(std::string_view name) const {
        for (const auto& c : cells)
            if (c.algorithm == name && c.status == CellStatus::ok) return &c;
        return nullptr;
    }
};

/// Plans, times and checks one cell. A plan that fails check_plan is a bug: InternalError naming it.
Cell run_cell(const Machine& m, std::string_view name, const alltoall::Demand& demand, const Family& family,
              const alltoall::ModelParams& model, double budget_seconds) {
    Cell cell;
    cell.algorithm = std::string(name);
    if (name == variopath && !m.planner) {
        cell.status = CellStatus::not_built;
        cell.reason = m.planner_missing;
        return cell;
    }
    const auto start = Clock::now();
    const auto deadline =
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(budget_seconds));
    alltoall::Plan plan = plan_once(m, name, demand, model);
    const bool whole = name != variopath && name != variopath_scan && baseline(name) == nullptr;  // make_plan timed it
    if (!whole) {
        const std::size_t modelled = time_plan_until(plan, demand, *m.topology, model, deadline);
        if (modelled < plan.steps.size()) {
            cell.status = CellStatus::skipped;
            cell.reason = fmt::format("skipped: took > {:.0f} s (planning {:.1f} s, {} steps; the flow model had "
                                      "done {} of them)",
                                      budget_seconds, plan.planning_time_us * 1e-6, plan.steps.size(), modelled);
            cell.bench_seconds = seconds_since(start);
            return cell;
        }
    }
    // FAST's relayed hops too: check_plan follows every byte's chain of hops to its destination.
    const auto violations = alltoall::check_plan(plan, demand, *m.router, max_violations);
    if (!violations.empty()) {
        throw gpuops::InternalError(fmt::format("the {} plan of {} on {} fails check_plan: {}", name, family.spec,
                                                m.label, fmt::join(violations, "; ")));
    }
    cell.predicted_time_us = plan.predicted_time_us;
    cell.efficiency = plan.efficiency;
    cell.planning_time_us = plan.planning_time_us;
    cell.steps = plan.steps.size();
    for (const auto& step : plan.steps)
        cell.transfers += step.transfers.size();
    cell.bench_seconds = seconds_since(start);
    return cell;
}

/// Planning time of one algorithm on one platform: the median of repeated in-process calls.
struct Latency {
    std::string algorithm;
    std::string platform;
    std::size_t gpus = 0;
    CellStatus status = CellStatus::ok;
    std::string reason;  ///< why there is no number
    Samples us;
};

Latency measure_latency(const Machine& m, std::string_view name, const alltoall::Demand& demand,
                        const alltoall::ModelParams& model) {
    Latency r{std::string(name), m.label, m.gpus, CellStatus::ok, {}, {}};
    if (name == variopath && !m.planner) {
        r.status = CellStatus::not_built;
        r.reason = m.planner_missing;
        return r;
    }
    const auto start = Clock::now();
    while (r.us.values.size() < latency_calls) {
        r.us.values.push_back(plan_once(m, name, demand, model).planning_time_us);
        const double spent_s = seconds_since(start);  // make_plan's calls also run the flow model
        if (spent_s > latency_seconds_cap && r.us.values.size() % 2 == 1) break;
    }
    return r;
}

struct Target {
    std::string goal;
    std::string scope;
    std::string measured;
    std::optional<bool> pass;  ///< absent: nothing to measure yet (not built)
};

std::string format_ms(double us) {
    const double ms = us / 1e3;
    if (ms >= 100) return fmt::format("{:.0f} ms", ms);
    if (ms >= 10) return fmt::format("{:.1f} ms", ms);
    return fmt::format("{:.2f} ms", ms);
}

std::string format_us(double us) {
    if (us < 1e3) return fmt::format("{:.1f} µs", us);
    if (us < 1e6) return fmt::format("{:.2f} ms", us / 1e3);
    return fmt::format("{:.2f} s", us / 1e6);
}

std::string cell_text(const Cell& c) {
    switch (c.status) {
        case CellStatus::ok: return fmt::format("{} · {:.3f}", format_ms(c.predicted_time_us), c.efficiency);
        case CellStatus::not_built: return "n/a (not built)";
        case CellStatus::skipped: return "skipped: took > budget";
    }
    return "";
}

/// What a latency row without a number says.
std::string latency_text(const Latency& l) {
    if (l.status == CellStatus::skipped) return "skipped: took > budget";
    return "n/a (not built)";
}

struct Efficiency {
    std::size_t scenarios = 0;
    double geomean = 0;
    double min = 0;
};

Efficiency variopath_efficiency(const std::vector<Scenario>& scenarios) {
    Efficiency e;
    double log_sum = 0;
    for (const auto& s : scenarios) {
        const Cell* c = s.cell(variopath);
        if (c == nullptr) continue;
        e.min = e.scenarios == 0 ? c->efficiency : std::min(e.min, c->efficiency);
        log_sum += std::log(c->efficiency);
        ++e.scenarios;
    }
    if (e.scenarios > 0) e.geomean = std::exp(log_sum / static_cast<double>(e.scenarios));
    return e;
}

std::vector<Target> check_targets(const Efficiency& eff, const std::vector<Latency>& latencies) {
    std::vector<Target> targets;
    const std::string scope = fmt::format("VarioPath, {} scenarios where it ran", eff.scenarios);
    if (eff.scenarios == 0) {
        targets.push_back({fmt::format("geomean efficiency ≥ {:.2f}", target_geomean_efficiency), scope, "—", {}});
        targets.push_back({fmt::format("min efficiency ≥ {:.2f}", target_min_efficiency), scope, "—", {}});
    } else {
        targets.push_back({fmt::format("geomean efficiency ≥ {:.2f}", target_geomean_efficiency), scope,
                           fmt::format("{:.3f}", eff.geomean), eff.geomean >= target_geomean_efficiency});
        targets.push_back({fmt::format("min efficiency ≥ {:.2f}", target_min_efficiency), scope,
                           fmt::format("{:.3f}", eff.min), eff.min >= target_min_efficiency});
    }
    for (const auto& l : latencies) {
        if (l.algorithm != variopath) continue;
        double limit = 0;
        if (l.gpus == small_gpus) {
            limit = target_small_latency_us;
        } else if (l.gpus == large_gpus) {
            limit = target_large_latency_us;
        } else {
            continue;
        }
        const bool measured = l.status == CellStatus::ok;
        Target t{fmt::format("planning ≤ {} (median)", format_us(limit)),
                 fmt::format("{}, {}", l.algorithm, l.platform),
                 measured ? format_us(l.us.median()) : latency_text(l),
                 {}};
        if (measured) t.pass = l.us.median() <= limit;
        targets.push_back(std::move(t));
    }
    return targets;
}

Json machine_json() {
    Json m = Json::object();
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) m["host_name"] = std::string(host);
    m["num_cpus"] = std::thread::hardware_concurrency();
    const std::time_t now = std::time(nullptr);
    char date[32] = {};
    if (std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now)) > 0) m["date"] = std::string(date);
    m["build_type"] = GPUOPS_BUILD_TYPE;
    return m;
}

Json cell_json(const Cell& c) {
    Json j = {{"algorithm", c.algorithm}, {"status", std::string(to_string(c.status))}};
    if (c.status != CellStatus::ok) {
        j["reason"] = c.reason;
        if (c.status == CellStatus::skipped) j["bench_s"] = c.bench_seconds;
        return j;
    }
    j["predicted_time_us"] = c.predicted_time_us;
    j["efficiency"] = c.efficiency;
    j["planning_time_us"] = c.planning_time_us;
    j["steps"] = c.steps;
    j["transfers"] = c.transfers;
    j["bench_s"] = c.bench_seconds;
    return j;
}

Json report_json(const std::vector<Scenario>& scenarios, const Efficiency& eff, const std::vector<Latency>& latencies,
                 const std::vector<Target>& targets, const alltoall::ModelParams& model, double budget_seconds) {
    Json doc = gpuops::json_io::make_header(report_schema, report_schema_version, "bench_plan");
    doc["machine"] = machine_json();
    doc["method"] = {
        {"model", alltoall::to_json(model)},
        {"time", "predicted_time_us: the flow model's time of the plan (time_plan); efficiency = the cut lower "
                 "bound / predicted time"},
        {"speedup", "a baseline's predicted time / VarioPath's, same platform and demand"},
        {"planning_time", "the planner call alone (VarioPathPlanner::plan with the planner built beforehand, or "
                          "plan_direct/plan_pairwise/plan_bvn, or plan_fast: FAST's synthesis, balance, server BvN and "
                          "restore), as make_plan measures it; not the flow model"},
        {"budget_s", budget_seconds},
        {"budget", "an algorithm whose planning and flow model run past the budget on one platform and demand is "
                   "skipped there (checked between steps; check_plan comes after)"},
        {"latency_calls", latency_calls},
        {"check", "every plan passes check_plan (exactly-once delivery along every byte's chain of hops, fast's "
                  "relays included; real paths; the model's numbers)"}};
    Json items = Json::array();
    for (const auto& s : scenarios) {
        Json cells = Json::array();
        Json speedup = Json::object();
        const Cell* vp = s.cell(variopath);
        for (const auto& c : s.cells) {
            cells.push_back(cell_json(c));
            if (c.algorithm == variopath) continue;
            speedup[c.algorithm] = vp != nullptr && c.status == CellStatus::ok
                                       ? Json(c.predicted_time_us / vp->predicted_time_us)
                                       : Json(nullptr);
        }
        items.push_back({{"platform", s.platform},
                         {"gpus", s.gpus},
                         {"family", s.family.name},
                         {"demand", s.family.spec},
                         {"total_bytes", s.total_bytes},
                         {"lower_bound_us", s.lower_bound_us},
                         {"algorithms", std::move(cells)},
                         {"variopath_speedup", std::move(speedup)}});
        if (s.scan) items.back()["variopath_scan"] = cell_json(*s.scan);
    }
    doc["scenarios"] = std::move(items);
    doc["variopath_efficiency"] = {{"scenarios", eff.scenarios},
                                   {"geomean", eff.scenarios > 0 ? Json(eff.geomean) : Json(nullptr)},
                                   {"min", eff.scenarios > 0 ? Json(eff.min) : Json(nullptr)}};
    Json lat = Json::array();
    for (const auto& l : latencies) {
        Json j = {{"algorithm", l.algorithm},
                  {"platform", l.platform},
                  {"gpus", l.gpus},
                  {"status", std::string(to_string(l.status))}};
        if (l.status == CellStatus::ok) {
            j["planning_time_us"] = l.us.to_json();
        } else {
            j["reason"] = l.reason;
        }
        lat.push_back(std::move(j));
    }
    doc["planning_latency"] = std::move(lat);
    Json goals = Json::array();
    for (const auto& t : targets) {
        goals.push_back({{"goal", t.goal},
                         {"scope", t.scope},
                         {"measured", t.measured},
                         {"pass", t.pass ? Json(*t.pass) : Json(nullptr)}});
    }
    doc["targets"] = std::move(goals);
    doc["all_targets_pass"] =
        std::all_of(targets.begin(), targets.end(), [](const Target& t) { return t.pass.value_or(false); });
    return doc;
}

std::string report_markdown(const std::vector<Scenario>& scenarios, const Efficiency& eff,
                            const std::vector<Latency>& latencies, const std::vector<Target>& targets,
                            double budget_seconds, std::string_view json_path) {
    const auto& names = alltoall::algorithm_names();
    std::string out = "# gpuops plan bench\n\n";
    out += "- cells: the flow model's time of the plan (default model) · efficiency = cut lower bound / time; "
           "every plan passed check_plan (fast's relayed hops included: it follows every byte's chain of hops)\n";
    out += "- speedup: a baseline's time / VarioPath's on the same platform and demand (above 1, VarioPath is "
           "faster)\n";
    out += fmt::format("- variopath: the default step search (packing); skipped: planning and the model of one "
                       "demand took > {:.0f} s ({})\n",
                       budget_seconds, budget_variable);
    out += "\n| platform | demand | lower bound |";
    std::string rule = "\n|---|---|---:|";
    for (const auto& n : names) {
        out += fmt::format(" {} |", n);
        rule += "---:|";
    }
    for (const auto& n : names) {
        if (n == variopath) continue;
        out += fmt::format(" vs {} |", n);
        rule += "---:|";
    }
    out += rule + "\n";
    for (const auto& s : scenarios) {
        out += fmt::format("| {} | {} | {} |", s.platform, s.family.name, format_ms(s.lower_bound_us));
        for (const auto& c : s.cells)
            out += fmt::format(" {} |", cell_text(c));
        const Cell* vp = s.cell(variopath);
        for (const auto& c : s.cells) {
            if (c.algorithm == variopath) continue;
            out += vp != nullptr && c.status == CellStatus::ok
                       ? fmt::format(" {:.2f}× |", c.predicted_time_us / vp->predicted_time_us)
                       : std::string(" — |");
        }
        out += "\n";
    }
    out += "\nDemands: ";
    for (const auto& f : families())
        out += fmt::format("{} = `{}`; ", f.name, f.spec);
    out += "zipf, hot and moe fix what each GPU sends, on every platform; uniform fixes each pair's chunk (a GPU "
           "sends it to n − 1 peers); moe places its 64 experts contiguously, so on 256 GPUs only every 4th GPU "
           "receives.\n";
    bool any_skipped = false;
    for (const auto& s : scenarios)
        for (const auto& c : s.cells)
            if (c.status == CellStatus::skipped) {
                if (!any_skipped) out += "\nSkipped:\n";
                any_skipped = true;
                out += fmt::format("- {} on {}, {}: {}\n", c.algorithm, s.platform, s.family.name, c.reason);
            }
    out += fmt::format("\nVarioPath efficiency over the {} scenarios where it ran: geomean {:.3f}, min {:.3f}\n",
                       eff.scenarios, eff.geomean, eff.min);
    out += "\n## VarioPath's step search: packing (the default) against the exhaustive scan, single nodes\n\n"
           "| platform | demand | packing efficiency | scan efficiency | packing planning | scan planning |\n"
           "|---|---|---:|---:|---:|---:|\n";
    for (const auto& s : scenarios) {
        const Cell* vp = s.cell(variopath);
        if (!s.scan || vp == nullptr) continue;
        const Cell& sc = *s.scan;
        out += fmt::format("| {} | {} | {:.3f} | {} | {} | {} |\n", s.platform, s.family.name, vp->efficiency,
                           sc.status == CellStatus::ok ? fmt::format("{:.3f}", sc.efficiency) : cell_text(sc),
                           format_us(vp->planning_time_us),
                           sc.status == CellStatus::ok ? format_us(sc.planning_time_us) : std::string("—"));
    }
    out += "\n## Planning latency (moe demand, median of in-process calls; fast: FAST's synthesis, from the demand to "
           "its relayed steps)\n\n"
           "| algorithm | platform | calls | median | min |\n|---|---|---:|---:|---:|\n";
    for (const auto& l : latencies) {
        if (l.status != CellStatus::ok) {
            out += fmt::format("| {} | {} | — | {} | — |\n", l.algorithm, l.platform, latency_text(l));
            continue;
        }
        out += fmt::format("| {} | {} | {} | {} | {} |\n", l.algorithm, l.platform, l.us.values.size(),
                           format_us(l.us.median()), format_us(l.us.min()));
    }
    out += "\n| target | scope | measured | result |\n|---|---|---:|---|\n";
    for (const auto& t : targets)
        out += fmt::format("| {} | {} | {} | {} |\n", t.goal, t.scope, t.measured,
                           t.pass ? (*t.pass ? "PASS" : "FAIL") : "NOT BUILT");
    if (!json_path.empty()) out += fmt::format("\nJSON report: {}\n", json_path);
    return out;
}

double budget_from_environment() {
    const char* text = std::getenv(std::string(budget_variable).c_str());
    if (text == nullptr || *text == '\0') return default_budget_seconds;
    char* end = nullptr;
    const double s = std::strtod(text, &end);
    if (*end != '\0' || !(s > 0) || s > 86400) {
        throw gpuops::UsageError(
            fmt::format("{}={}: expected seconds, above 0 and at most 86400", budget_variable, text));
    }
    return s;
}

/// Plans every demand family on one platform with every algorithm, then measures its planning latency (on the
/// moe demand, at 8, 64 and 256 GPUs).
void run_platform(const gpuops::cli::Tool& tool, const Platform& p, const alltoall::ModelParams& model,
                  double budget_seconds, std::vector<Scenario>& scenarios, std::vector<Latency>& latencies) {
    const auto m = make_machine(p);
    const Family& moe = families().back();
    std::map<std::string, std::string> skipped_on_moe;  // algorithm -> why, for the latency rows
    for (const auto& family : families()) {
        const alltoall::Demand demand = alltoall::load_demand(family.spec, *m->topology);
        Scenario s{m->label, m->gpus, family, demand.total(), alltoall::cut_lower_bound_us(demand, *m->topology),
                   {},       {}};
        for (const auto& name : alltoall::algorithm_names()) {
            s.cells.push_back(run_cell(*m, name, demand, family, model, budget_seconds));
            const Cell& c = s.cells.back();
            if (c.status == CellStatus::skipped && family.name == moe.name) skipped_on_moe.emplace(name, c.reason);
            tool.note(fmt::format("{}, {}, {}: {} in {:.2f} s", m->label, family.name, name,
                                  c.status == CellStatus::ok ? format_ms(c.predicted_time_us) : c.reason,
                                  c.bench_seconds));
        }
        if (m->scan) s.scan = run_cell(*m, variopath_scan, demand, family, model, budget_seconds);
        scenarios.push_back(std::move(s));
    }
    if (std::find(latency_gpus.begin(), latency_gpus.end(), m->gpus) == latency_gpus.end()) return;
    const alltoall::Demand demand = alltoall::load_demand(moe.spec, *m->topology);
    for (const auto& name : alltoall::algorithm_names()) {
        if (const auto it = skipped_on_moe.find(name); it != skipped_on_moe.end()) {
            latencies.push_back({name, m->label, m->gpus, CellStatus::skipped, it->second, {}});
            continue;
        }
        latencies.push_back(measure_latency(*m, name, demand, model));
        const Latency& l = latencies.back();
        tool.note(fmt::format("{}: {} planning: {}", m->label, name,
                              l.status == CellStatus::ok
                                  ? fmt::format("median {} of {} calls", format_us(l.us.median()), l.us.values.size())
                                  : l.reason));
    }
}

}  // namespace

int main(int argc, char** argv) {
    gpuops::cli::Tool tool(
        "bench_plan",
        "Plan five demand families on 8 to 256 GPUs with VarioPath and every baseline, report the\n"
        "modelled time, efficiency and VarioPath's speedups, time the planners, check the targets,\n"
        "print markdown tables and write a gpuops.bench_plan document. A plan whose planning and model\n"
        "take longer than GPUOPS_BENCH_PLAN_BUDGET_S seconds (default 60) is skipped, with a note.",
        {"markdown", "json"});
    std::string json_path = "bench-plan.json";
    tool.app()
        .add_option("--json", json_path, "Where to write the gpuops.bench_plan document (default bench-plan.json)")
        ->type_name("FILE");

    return tool.run(argc, argv, [&] {
        const double budget_seconds = budget_from_environment();
        const alltoall::ModelParams model = alltoall::default_model();
        std::vector<Scenario> scenarios;
        std::vector<Latency> latencies;
        for (const auto& p : platforms())
            run_platform(tool, p, model, budget_seconds, scenarios, latencies);
        const Efficiency eff = variopath_efficiency(scenarios);
        const auto targets = check_targets(eff, latencies);
        const Json doc = report_json(scenarios, eff, latencies, targets, model, budget_seconds);
        gpuops::Output json_out(json_path);
        gpuops::json_io::write(json_out.stream(), doc);
        json_out.commit();
        // A missed target is a finding, not a failure of the benchmark: FAIL in the table, exit 0.
        if (tool.common().format == "json") {
            tool.write(gpuops::json_io::dump(doc, !tool.common().compact));
        } else {
            tool.write(report_markdown(scenarios, eff, latencies, targets, budget_seconds,
                                       json_out.is_stdout() ? "" : json_path));
        }
        return gpuops::ExitCode::ok;
    });
}
