// vp-plan: decompose one AlltoAllv demand matrix into a plan of steps (VarioPath over the channel catalog, or
// a baseline), with the lower bound and the flow model's predicted time; and the plan checker.
#include <cmath>
#include <optional>

#include <fmt/format.h>
#include <unistd.h>

#include "gpuops/alltoall/catalog.hpp"
#include "gpuops/alltoall/demand.hpp"
#include "gpuops/alltoall/flow_model.hpp"
#include "gpuops/alltoall/plan.hpp"
#include "gpuops/alltoall/planner.hpp"
#include "gpuops/core/cli.hpp"
#include "gpuops/core/json_io.hpp"
#include "gpuops/topo/probe.hpp"

using namespace gpuops;

int main(int argc, char** argv) {
    cli::Tool tool("vp-plan",
                   "Decompose an AlltoAllv demand matrix into a plan of steps: VarioPath over a channel catalog, or a\n"
                   "baseline, with the lower bound and the flow model's predicted time (the online half of VarioPath).",
                   {"json", "text"});
    std::string catalog_path;
    std::string topology_path;
    std::string demand_spec;
    std::string algo = "variopath";
    std::string model_path;
    std::string check_path;
    std::string search = "packing";
    auto& app = tool.app();
    app.add_option("--catalog", catalog_path, "A gpuops.catalog from vp-catalog (it carries its topology)")
        ->type_name("FILE");
    auto* topology_opt =
        app.add_option("--topology", topology_path, "A gpuops.topology, for the baselines when there is no catalog")
            ->type_name("FILE");
    auto* demand_opt =
        app.add_option("--demand", demand_spec,
                       "A gpuops.demand or CSV matrix FILE, or a generator SPEC: uniform:bytes=B, zipf:s=S,bytes=B,\n"
                       "hot:experts=K,fraction=F, moe:experts=E,topk=K,tokens=T,hidden=H,dtype=bf16|fp8,zipf=S,...")
            ->type_name("FILE|SPEC");
    auto* algo_opt = app.add_option("--algo", algo, "variopath (default), direct, pairwise, bvn, deepep-pcie or fast")
                         ->check(CLI::IsMember(alltoall::algorithm_names()))
                         ->type_name("NAME");
    auto* search_opt =
        app.add_option("--search", search,
                       "How variopath finds each step: packing (default; about a millisecond for 8 GPUs, any catalog)\n"
                       "or scan (every channel instance of an exact catalog; 100-1000x slower)")
            ->check(CLI::IsMember({"packing", "scan"}))
            ->type_name("HOW");
    auto* model_opt =
        app.add_option("--model", model_path, "A gpuops.model file (alpha, eta, with sources) instead of the defaults")
            ->type_name("FILE");
    app.add_option("--check", check_path,
                   "Verify the plan FILE (against --catalog's or --topology's topology): every byte of its demand\n"
                   "delivered exactly once, paths real, no link used twice in an exclusive step; exit 1 if not")
        ->type_name("FILE");

    return tool.run(argc, argv, [&] {
        const auto& common = tool.common();
        if (!catalog_path.empty() && topology_opt->count() > 0) {
            throw UsageError("give --catalog or --topology, not both (a catalog carries its topology)");
        }
        if (!check_path.empty() &&
            (demand_opt->count() + algo_opt->count() + model_opt->count() + search_opt->count()) > 0) {
            throw UsageError("--check reads the demand, the algorithm and the model from the plan: drop --demand, "
                             "--algo, --search and --model");
        }
        std::optional<alltoall::Catalog> catalog;
        std::optional<topo::Topology> topology;
        if (!catalog_path.empty()) {
            catalog =
                alltoall::Catalog::read(json_io::read_document(catalog_path), json_io::display_name(catalog_path));
            topology = catalog->topology();
        } else if (!topology_path.empty()) {
            topo::ProbeOptions opts;
            opts.document = topology_path;
            topology = topo::probe(opts).topology;
        } else {
            throw UsageError("give --catalog (or --topology for the baselines)");
        }
        const topo::Router router(*topology);
        if (common.verbose > 0 && check_path.empty()) {
            const auto m = model_path.empty() ? alltoall::default_model()
                                              : alltoall::read_model(json_io::read_document(model_path),
                                                                     json_io::display_name(model_path));
            for (const auto& [name, source] : m.sources)
                tool.note(fmt::format("model {}: {}", name, source));
        }
        const auto model = model_path.empty() ? alltoall::default_model()
                                              : alltoall::read_model(json_io::read_document(model_path),
                                                                     json_io::display_name(model_path));

        if (!check_path.empty()) {
            const auto doc = json_io::read_document(check_path);
            const auto name = json_io::display_name(check_path);
            const json_io::View root(doc);
            alltoall::Demand demand;
            try {
                demand = alltoall::demand_from_json(root.at("demand").json(), *topology, name);
            } catch (const DataError& e) {
                throw e.where().pointer.empty() ? e.in_file(name) : e.under_pointer("/demand").in_file(name);
            }
            const auto plan = alltoall::plan_from_json(doc, demand, router, name);
            const auto violations = alltoall::check_plan(plan, demand, router, 20);
            if (tool.format_given() && common.format == "json") {
                const json_io::Json out = {{"ok", violations.empty()},
                                           {"steps", plan.steps.size()},
                                           {"bytes", demand.total()},
                                           {"violations", violations}};
                tool.write(json_io::dump(out, !common.compact));
            } else {
                std::string text;
                for (const auto& v : violations)
                    text += "violation: " + v + "\n";
                if (violations.empty()) {
                    text = fmt::format("ok: {} step{} deliver{} all {} bytes exactly once{}, times as the model "
                                       "gives\n",
                                       plan.steps.size(), plan.steps.size() == 1 ? "" : "s",
                                       plan.steps.size() == 1 ? "s" : "", demand.total(),
                                       plan.exclusive ? ", no link used twice in a step" : "");
                }
                tool.write(text);
            }
            if (violations.empty()) return ExitCode::ok;
            tool.warn(fmt::format("{}: {}", name, violations.front()));
            return ExitCode::negative;
        }

        if (demand_spec.empty()) throw UsageError("give --demand FILE or a generator SPEC");
        const auto demand = alltoall::load_demand(demand_spec, *topology);
        if (algo == "variopath" && !catalog) throw UsageError("the variopath algorithm needs --catalog");
        const auto plan =
            alltoall::make_plan(algo, demand, router, catalog ? &*catalog : nullptr, model,
                                search == "scan" ? alltoall::StepSearch::scan : alltoall::StepSearch::packing);
        tool.note(fmt::format("{}: {} steps, predicted {:.3f} us, lower bound {:.3f} us, efficiency {:.3f}, planned in "
                              "{:.1f} us",
                              plan.algorithm, plan.steps.size(), plan.predicted_time_us, plan.lower_bound_us,
                              plan.efficiency, plan.planning_time_us));
        if (common.format == "text") {
            tool.write(alltoall::render_text(plan, demand, *topology));
        } else {
            tool.write(json_io::dump(alltoall::to_json(plan, demand, *topology), !common.compact));
        }
        return ExitCode::ok;
    });
}
