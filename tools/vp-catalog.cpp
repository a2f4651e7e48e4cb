// vp-catalog: contention-free AlltoAllv channels of a topology, one per orbit of its symmetry, as
// gpuops.catalog JSON; and the checker for such catalogs.
#include <cmath>

#include <fmt/format.h>
#include <unistd.h>

#include "gpuops/alltoall/catalog.hpp"
#include "gpuops/core/cli.hpp"
#include "gpuops/core/json_io.hpp"
#include "gpuops/core/progress.hpp"
#include "gpuops/topo/probe.hpp"

namespace {

using gpuops::alltoall::Catalog;
using gpuops::alltoall::CatalogMethod;

gpuops::topo::Topology read_topology(const std::string& path) {
    if ((path.empty() || path == "-") && isatty(STDIN_FILENO) != 0) {
        throw gpuops::UsageError("no topology: give a gpuops.topology file or pipe one in (vp-probe ... | vp-catalog)");
    }
    gpuops::topo::ProbeOptions opts;
    opts.document = path.empty() ? "-" : path;
    return gpuops::topo::probe(opts).topology;
}

}  // namespace

int main(int argc, char** argv) {
    gpuops::cli::Tool tool("vp-catalog",
                           "Find the contention-free AlltoAllv channels of a topology and store one per orbit of its\n"
                           "symmetry as a gpuops.catalog (the offline half of VarioPath).",
                           {"json", "text"});
    std::string topology_path;
    std::string method = "auto";
    std::string check_path;
    bool expand = false;
    std::size_t max_instances = 1'000'000;
    std::size_t max_orbits = 1'000'000;
    std::size_t enumerate_limit = 2'000'000;
    auto& app = tool.app();
    app.add_option("TOPOLOGY", topology_path, "A gpuops.topology document from vp-probe ('-' or absent = stdin)")
        ->type_name("");
    app.add_option("--method", method,
                   "exact (every maximal channel of the topology), hierarchical (parts joined by port patterns)\n"
                   "or auto: exact for one node of at most 12 GPUs, hierarchical for clusters and larger nodes")
        ->check(CLI::IsMember({"auto", "exact", "hierarchical"}))
        ->type_name("METHOD");
    app.add_flag("--expand", expand, "List every concrete channel of each orbit (\"instances\", as flow ids)");
    app.add_option("--max-instances", max_instances,
                   "With --expand: give up beyond N channels in all (default 1000000)")
        ->type_name("N")
        ->check(CLI::PositiveNumber);
    app.add_option("--max-orbits", max_orbits, "Give up beyond N orbits per part (default 1000000)")
        ->type_name("N")
        ->check(CLI::PositiveNumber);
    app.add_option("--check", check_path,
                   "Verify the catalog FILE against TOPOLOGY: every channel contention-free and maximal, orbit\n"
                   "sizes and shapes right; exit 1 naming the first violation")
        ->type_name("FILE");
    app.add_option("--enumerate-limit", enumerate_limit,
                   "With --check: also compare against every maximal channel when there are at most N\n"
                   "(default 2000000)")
        ->type_name("N");

    return tool.run(argc, argv, [&] {
        const auto& common = tool.common();
        const auto topology = read_topology(topology_path);
        if (!check_path.empty()) {
            const auto doc = gpuops::json_io::read_document(check_path);
            const auto catalog = Catalog::read(doc, topology, gpuops::json_io::display_name(check_path));
            const auto violations = catalog.check(enumerate_limit, 20);
            const auto& s = catalog.stats();
            if (tool.format_given() && common.format == "json") {
                gpuops::json_io::Json out = {{"ok", violations.empty()},
                                             {"orbits", s.orbits},
                                             {"raw_channels_log10", s.raw_channels_log10},
                                             {"violations", violations}};
                tool.write(gpuops::json_io::dump(out, !common.compact));
            } else {
                std::string text;
                for (const auto& v : violations)
                    text += "violation: " + v + "\n";
                if (violations.empty()) {
                    text = fmt::format("ok: {} orbits, every channel contention-free and maximal{}\n", s.orbits,
                                       s.raw_exact && s.raw_channels <= static_cast<double>(enumerate_limit)
                                           ? ", and together every maximal channel"
                                           : "");
                }
                tool.write(text);
            }
            if (violations.empty()) return gpuops::ExitCode::ok;
            tool.warn(fmt::format("{}: {}", gpuops::json_io::display_name(check_path), violations.front()));
            return gpuops::ExitCode::negative;
        }

        gpuops::alltoall::CatalogOptions options;
        options.method = method == "exact"          ? CatalogMethod::exact
                         : method == "hierarchical" ? CatalogMethod::hierarchical
                                                    : CatalogMethod::automatic;
        options.search.max_orbits = max_orbits;
        gpuops::progress::Progress progress("classes of partial channels", 0,
                                            gpuops::progress::progress_sink(common.quiet));
        std::size_t last = 0;
        options.search.progress = [&](std::size_t classes, std::size_t /*orbits*/) {
            if (classes > last) progress.advance(classes - last);
            last = classes;  // each part's search counts from zero again
        };
        const auto catalog = Catalog::build(topology, options);
        progress.finish();
        const auto& s = catalog.stats();
        tool.note(fmt::format("{} orbits, {} channels represented, built in {:.3f} s", s.orbits, s.raw_channels,
                              s.build_seconds));
        if (common.format == "text") {
            tool.write(catalog.summary());
        } else {
            tool.write(gpuops::json_io::dump(catalog.to_json(expand, max_instances), !common.compact));
        }
        return gpuops::ExitCode::ok;
    });
}
