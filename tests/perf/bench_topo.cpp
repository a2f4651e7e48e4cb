// make bench: times vp-probe's importers, presets, cluster composition and routing, each beside a baseline in the same
// run.
#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <hwloc.h>
#include <tinyxml2.h>

#include "gpuops/core/embedded.hpp"
#include "gpuops/core/error.hpp"
#include "gpuops/core/json_io.hpp"
#include "gpuops/topo/cluster.hpp"
#include "gpuops/topo/hwloc_handle.hpp"
#include "gpuops/topo/import_hwloc.hpp"
#include "gpuops/topo/import_nccl.hpp"
#include "gpuops/topo/presets.hpp"
#include "gpuops/topo/routing.hpp"
#include "gpuops/topo/topology_json.hpp"

namespace {

namespace fs = std::filesystem;
namespace topo = gpuops::topo;

using Body = std::function<void(benchmark::State&)>;
using SharedTopology = std::shared_ptr<const topo::Topology>;

constexpr std::string_view cluster_preset = "pcie-8gpu-gen4";
constexpr std::string_view cluster_fabric = "rail:200Gb/s";

/// The benchmarks registered so far, the unit each item is counted in, and what was left out and why.
/// bench_report reads the units and notes back from the context stanza of the JSON output.
class Registry {
public:
    /// Registers `<item>/ours` and `<item>/baseline`. Times are divided by `units` (of `unit`, e.g. "node")
    /// before they are compared, so a run over N nodes can be set against a run over one.
    void add_pair(const std::string& item, std::string_view unit, double ours_units, Body ours, double baseline_units,
                  Body baseline) {
        add(item + "/ours", ours_units, std::move(ours));
        add(item + "/baseline", baseline_units, std::move(baseline));
        items_.push_back({{"name", item}, {"unit", unit}});
    }
    void add_pair(const std::string& item, Body ours, Body baseline) {
        add_pair(item, "run", 1, std::move(ours), 1, std::move(baseline));
    }

    /// `name`, or `name@<suffix>` when a file of the same name was registered from another folder.
    [[nodiscard]] std::string unique_item(const std::string& name, std::string_view suffix) const {
        if (!taken_.contains(name)) return name;
        std::string candidate = fmt::format("{}@{}", name, suffix);
        for (int n = 2; taken_.contains(candidate); ++n)
            candidate = fmt::format("{}@{}{}", name, suffix, n);
        return candidate;
    }

    void note(std::string text) {
        std::cerr << "bench_topo: note: " << text << '\n';
        notes_.push_back(std::move(text));
    }

    /// What each group of items is compared against, for the report's header.
    void baseline(std::string prefix, std::string what) { baselines_[std::move(prefix)] = std::move(what); }

    void publish_context() const {
        benchmark::AddCustomContext("gpuops_build_type", GPUOPS_BUILD_TYPE);
        benchmark::AddCustomContext("gpuops_items", items_.dump());
        benchmark::AddCustomContext("gpuops_baselines", baselines_.dump());
        benchmark::AddCustomContext("gpuops_notes", gpuops::json_io::Json(notes_).dump());
    }

private:
    void add(const std::string& name, double units, Body body) {
        taken_.insert(name.substr(0, name.rfind('/')));
        benchmark::RegisterBenchmark(name.c_str(), [units, body = std::move(body)](benchmark::State& state) {
            // Fixtures can change under a running benchmark; report it, do not abort.
            try {
                body(state);
            } catch (const std::exception& e) {
                state.SkipWithError(e.what());
                return;
            }
            state.counters["units"] = units;
        })->Unit(benchmark::kMicrosecond);
    }

    std::set<std::string> taken_;
    gpuops::json_io::Json items_ = gpuops::json_io::Json::array();
    gpuops::json_io::Json baselines_ = gpuops::json_io::Json::object();
    std::vector<std::string> notes_;
};

/// The message of whatever `fn` throws, or nullopt when it runs cleanly.
std::optional<std::string> failure_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const std::exception& e) {
        return std::string(e.what());
    }
    return std::nullopt;
}

/// The *.xml files of `dir` whose names start with one of `prefixes`, sorted; nullopt when `dir` is absent.
std::optional<std::vector<fs::path>> xml_files(const fs::path& dir, const std::vector<std::string_view>& prefixes) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return std::nullopt;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (!entry.is_regular_file(ec) || entry.path().extension() != ".xml") continue;
        if (std::none_of(prefixes.begin(), prefixes.end(), [&](std::string_view p) { return name.starts_with(p); }))
            continue;
        files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    return files;
}

// ---- hwloc XML: our importer against a bare hwloc load, which is what lstopo does before drawing anything.

void hwloc_load(const std::string& path) {
    topo::HwlocTopology hwloc;
    hwloc.keep_all_io();
    topo::check_hwloc(hwloc_topology_set_xml(hwloc.get(), path.c_str()), "hwloc_topology_set_xml");
    hwloc.load();
    benchmark::DoNotOptimize(hwloc.root());
}

void import_hwloc(const std::string& path) {
    std::vector<std::string> warnings;
    auto topology = topo::import_hwloc_xml(path, warnings);
    benchmark::DoNotOptimize(topology);
}

// ---- NCCL XML: our importer against tinyxml2 reading the same file into a DOM (the importer's own first step).

void tinyxml_load(const std::string& path) {
    tinyxml2::XMLDocument doc;
    if (doc.LoadFile(path.c_str()) != tinyxml2::XML_SUCCESS)
        throw gpuops::DataError(fmt::format("tinyxml2: {}", doc.ErrorStr()), {path, {}, 0});
    benchmark::DoNotOptimize(doc.RootElement());
}

void import_nccl(const std::string& path) {
    std::vector<std::string> warnings;
    auto topology = topo::import_nccl_xml(path, warnings);
    benchmark::DoNotOptimize(topology);
}

using Loader = void (*)(const std::string&);

struct FileSet {
    std::string_view format;  ///< hwloc | nccl
    std::string_view origin;  ///< fixtures | external
    fs::path dir;
    std::vector<std::string_view> prefixes;
    Loader ours;
    Loader baseline;
};

void register_file_set(Registry& registry, const FileSet& set) {
    const auto files = xml_files(set.dir, set.prefixes);
    if (!files) {
        registry.note(fmt::format("{} {} XML: skipped, no folder {}", set.origin, set.format, set.dir.string()));
        return;
    }
    if (files->empty())
        registry.note(fmt::format("{} {} XML: no files in {}", set.origin, set.format, set.dir.string()));
    for (const auto& file : *files) {
        const std::string path = file.string();
        const std::string item =
            registry.unique_item(fmt::format("import/{}/{}", set.format, file.stem().string()), set.origin);
        // Files the importer rejects on purpose (truncated, wrong root, ...) have nothing to compare.
        if (auto why = failure_of([&] { set.ours(path); })) {
            registry.note(fmt::format("{}: skipped, our importer rejects the file: {}", item, *why));
            continue;
        }
        if (auto why = failure_of([&] { set.baseline(path); })) {
            registry.note(fmt::format("{}: skipped, the baseline cannot read the file: {}", item, *why));
            continue;
        }
        registry.add_pair(
            item,
            [ours = set.ours, path](benchmark::State& state) {
                for (auto _ : state)
                    ours(path);
            },
            [baseline = set.baseline, path](benchmark::State& state) {
                for (auto _ : state)
                    baseline(path);
            });
    }
}

void register_imports(Registry& registry) {
    const fs::path fixtures = GPUOPS_FIXTURES_DIR;
    const char* env = std::getenv("GPUOPS_EXTERNAL_DATA");
    const fs::path external =
        fs::path(env != nullptr && *env != '\0' ? env : GPUOPS_DEFAULT_EXTERNAL_DATA) / "topologies";
    const std::vector<FileSet> sets = {
        {"hwloc", "fixtures", fixtures / "hwloc", {""}, import_hwloc, hwloc_load},
        {"hwloc", "external", external, {"hwloc-", "local-"}, import_hwloc, hwloc_load},
        {"nccl", "fixtures", fixtures / "nccl", {""}, import_nccl, tinyxml_load},
        {"nccl", "external", external, {"nccl-"}, import_nccl, tinyxml_load},
    };
    registry.baseline("import/hwloc",
                      "a bare hwloc load of the same file (init, keep all I/O objects, set_xml, "
                      "load, destroy), what lstopo does before drawing; ours also builds the gpuops model");
    registry.baseline("import/nccl",
                      "tinyxml2 XMLDocument::LoadFile of the same file; ours also builds the gpuops model");
    for (const auto& set : sets)
        register_file_set(registry, set);
}

// ---- Presets: build + serialise against merely parsing the spec text the preset is built from.

void register_presets(Registry& registry) {
    registry.baseline("preset", "nlohmann::ordered_json::parse of the preset's spec text (the input ours starts from); "
                                "ours = build_preset + the gpuops.topology JSON document, dumped");
    for (const auto& info : topo::list_presets()) {
        const auto& files = gpuops::embedded::presets();
        const auto file = std::find_if(files.begin(), files.end(), [&](const auto& f) { return f.name == info.name; });
        const std::string item = "preset/" + info.name;
        if (file == files.end()) {
            registry.note(fmt::format("{}: skipped, no embedded spec file of that name", item));
            continue;
        }
        if (auto why = failure_of([&] { (void)topo::build_preset(info.name); })) {
            registry.note(fmt::format("{}: skipped, it does not build: {}", item, *why));
            continue;
        }
        registry.add_pair(
            item,
            [name = info.name](benchmark::State& state) {
                for (auto _ : state) {
                    const std::string doc = topo::to_json(topo::build_preset(name), "bench").dump();
                    benchmark::DoNotOptimize(doc.data());
                }
            },
            [text = file->text](benchmark::State& state) {
                for (auto _ : state) {
                    auto spec = gpuops::json_io::Json::parse(text);
                    benchmark::DoNotOptimize(spec);
                }
            });
    }
}

// ---- Cluster composition: N nodes against one node, per node, so 1.0 means linear scaling.

void register_cluster(Registry& registry, const SharedTopology& node) {
    const auto fabric = topo::parse_fabric(cluster_fabric);
    registry.baseline("cluster", fmt::format("compose_cluster of one {} node on {}; both per node, so 1.0 means "
                                             "linear scaling",
                                             cluster_preset, cluster_fabric));
    const auto compose = [node, fabric](int count) {
        return [node, fabric, count](benchmark::State& state) {
            for (auto _ : state) {
                auto cluster = topo::compose_cluster(*node, count, fabric);
                benchmark::DoNotOptimize(cluster);
            }
        };
    };
    for (const int count : {8, 64, 256}) {
        const std::string item = fmt::format("cluster/{}/{}/n{}", cluster_preset, fabric.kind, count);
        if (auto why = failure_of([&] { (void)topo::compose_cluster(*node, count, fabric); })) {
            registry.note(fmt::format("{}: skipped, composition fails: {}", item, *why));
            continue;
        }
        registry.add_pair(item, "node", count, compose(count), 1, compose(1));
    }
}

// ---- Routing: the Router over every ordered GPU pair against a breadth-first search over all links.

/// What a tool without the tree model would do: index the links, then find each path by breadth-first search
/// and sum it up the same way (narrowest edge, total latency).
class HopRouter {
public:
    explicit HopRouter(const topo::Topology& topology) : topology_(topology), adjacency_(topology.devices.size()) {
        for (const auto& link : topology.links) {
            adjacency_[link.a].push_back({link.b, topo::Topology::up_edge(link.id)});
            adjacency_[link.b].push_back({link.a, topo::Topology::down_edge(link.id)});
        }
    }

    [[nodiscard]] topo::Path route(topo::DeviceId src, topo::DeviceId dst) const {
        std::vector<std::optional<Step>> came_by(adjacency_.size());  // the step that first reached each device
        std::vector<topo::DeviceId> frontier = {src};
        came_by[src] = Step{src, 0};
        for (std::size_t next = 0; next < frontier.size() && !came_by[dst]; ++next) {
            const topo::DeviceId at = frontier[next];
            for (const Step& step : adjacency_[at]) {
                if (came_by[step.device]) continue;
                came_by[step.device] = Step{at, step.edge};
                frontier.push_back(step.device);
            }
        }
        topo::Path path;
        path.src = src;
        path.dst = dst;
        for (topo::DeviceId at = dst; at != src && came_by[at]; at = came_by[at]->device)
            path.edges.push_back(came_by[at]->edge);
        std::reverse(path.edges.begin(), path.edges.end());
        path.bottleneck = path.edges.empty() ? 0 : std::numeric_limits<double>::infinity();
        for (const topo::EdgeId id : path.edges) {
            const topo::Edge edge = topology_.edge(id);
            path.bottleneck = std::min(path.bottleneck, edge.bandwidth);
            path.latency_us += edge.latency_us;
        }
        return path;
    }

private:
    /// In the adjacency lists: a neighbour and the edge to it. In `came_by`: the device a search came from.
    struct Step {
        topo::DeviceId device;
        topo::EdgeId edge;
    };

    const topo::Topology& topology_;
    std::vector<std::vector<Step>> adjacency_;
};

/// Indexing the topology is part of the work: both routers build their index inside the timed loop.
template <class AnyRouter>
void route_all_pairs(const topo::Topology& topology, const std::vector<topo::DeviceId>& gpus) {
    const AnyRouter router(topology);
    for (const topo::DeviceId a : gpus)
        for (const topo::DeviceId b : gpus)
            if (a != b) {
                const topo::Path path = router.route(a, b);
                benchmark::DoNotOptimize(path.bottleneck);
            }
}

template <class AnyRouter>
Body route_all_pairs_body(const SharedTopology& node, const std::vector<topo::DeviceId>& gpus) {
    return [node, gpus](benchmark::State& state) {
        for (auto _ : state)
            route_all_pairs<AnyRouter>(*node, gpus);
    };
}

void register_routing(Registry& registry, const SharedTopology& node) {
    const auto gpus = node->devices_of(topo::DeviceKind::gpu);
    const std::string item = fmt::format("route/{}/all-gpu-pairs", cluster_preset);
    if (gpus.size() < 2) {
        registry.note(fmt::format("{}: skipped, the preset has fewer than two GPUs", item));
        return;
    }
    if (auto why = failure_of([&] { route_all_pairs<topo::Router>(*node, gpus); })) {
        registry.note(fmt::format("{}: skipped, routing fails: {}", item, *why));
        return;
    }
    const auto pairs = static_cast<double>(gpus.size() * (gpus.size() - 1));
    registry.baseline("route", "breadth-first search over every link with the same bottleneck and latency sums; "
                               "both index the topology and route every ordered GPU pair, per pair");
    registry.add_pair(item, "pair", pairs, route_all_pairs_body<topo::Router>(node, gpus), pairs,
                      route_all_pairs_body<HopRouter>(node, gpus));
}

void register_all(Registry& registry) {
    register_imports(registry);
    register_presets(registry);
    std::shared_ptr<const topo::Topology> node;
    if (auto why =
            failure_of([&] { node = std::make_shared<const topo::Topology>(topo::build_preset(cluster_preset)); })) {
        registry.note(fmt::format("cluster and routing: skipped, preset {} does not build: {}", cluster_preset, *why));
        return;
    }
    register_cluster(registry, node);
    register_routing(registry, node);
}

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
    try {
        Registry registry;
        register_all(registry);
        registry.publish_context();
    } catch (const std::exception& e) {
        std::cerr << "bench_topo: error: " << e.what() << '\n';
        return 70;
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
