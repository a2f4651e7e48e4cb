// make bench: times vp-catalog's channel catalog per platform beside flat enumeration of every maximal channel,
// and checks the catalog's targets (build time, size, compression); markdown on stdout plus a JSON document.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "gpuops/alltoall/catalog.hpp"
#include "gpuops/alltoall/channel.hpp"
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

constexpr std::string_view report_schema = "gpuops.bench_catalog";
constexpr int report_schema_version = 1;
constexpr std::string_view repetitions_variable = "GPUOPS_BENCH_CATALOG_REPETITIONS";
constexpr std::size_t default_repetitions = 3;
constexpr std::string_view fabric = "rail";

// The targets. 5 MB is read as 5,000,000 bytes (the stricter reading).
constexpr std::size_t target_gpus = 256;
constexpr double target_build_seconds = 10;
constexpr std::size_t target_bytes = 5'000'000;
constexpr double target_compression = 100;

/// Flat enumeration gives up beyond this many channels (each channel costs a few hundred bytes in memory).
constexpr std::size_t flat_limit = 10'000'000;

struct Platform {
    std::string preset;
    int nodes = 1;
};

std::string platform_label(const Platform& p, std::size_t gpus) {
    if (p.nodes == 1) return fmt::format("{} GPUs (1 × {})", gpus, p.preset);
    return fmt::format("{} GPUs ({} × {}, {})", gpus, p.nodes, p.preset, fabric);
}

topo::Topology make_topology(const Platform& p) {
    topo::Topology node = topo::build_preset(p.preset);
    if (p.nodes == 1) return node;
    return topo::compose_cluster(node, p.nodes, topo::parse_fabric(fabric));
}

/// Repeated measurements of one quantity, in seconds.
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

/// Wall-clock and process CPU time of `body`; the two agree when the work is single threaded.
void time_it(Samples& wall, Samples& cpu, const std::function<void()>& body) {
    const std::clock_t cpu0 = std::clock();
    const auto wall0 = std::chrono::steady_clock::now();
    body();
    const auto wall1 = std::chrono::steady_clock::now();
    const std::clock_t cpu1 = std::clock();
    wall.values.push_back(std::chrono::duration<double>(wall1 - wall0).count());
    cpu.values.push_back(static_cast<double>(cpu1 - cpu0) / static_cast<double>(CLOCKS_PER_SEC));
}

/// A count that JSON can hold: the number, or null when it is infinite (the log10 field says how large).
Json finite_or_null(double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); }

struct CatalogResult {
    std::string method;
    Samples wall;
    Samples cpu;
    Samples library_seconds;  ///< CatalogStats::build_seconds, as vp-catalog reports it
    std::size_t bytes_pretty = 0;
    std::size_t bytes_compact = 0;
    alltoall::CatalogStats stats;
};

/// Builds the catalog `repetitions` times; the size is the largest document written (build_time_s varies).
CatalogResult measure_catalog(const topo::Topology& topology, std::size_t repetitions) {
    CatalogResult r;
    for (std::size_t i = 0; i < repetitions; ++i) {
        std::optional<alltoall::Catalog> catalog;
        time_it(r.wall, r.cpu, [&] { catalog.emplace(alltoall::Catalog::build(topology, {})); });
        const auto& s = catalog->stats();
        if (i > 0 && (s.orbits != r.stats.orbits || s.raw_channels_log10 != r.stats.raw_channels_log10)) {
            throw gpuops::InternalError(
                fmt::format("catalog build is not repeatable: {} orbits, then {}", r.stats.orbits, s.orbits));
        }
        r.stats = s;
        r.method = std::string(alltoall::to_string(catalog->method()));
        r.library_seconds.values.push_back(s.build_seconds);
        const Json doc = catalog->to_json(false, 0);
        r.bytes_pretty = std::max(r.bytes_pretty, gpuops::json_io::dump(doc, true).size());
        r.bytes_compact = std::max(r.bytes_compact, gpuops::json_io::dump(doc, false).size());
    }
    return r;
}

struct FlatResult {
    std::optional<std::string> not_computable;  ///< why there is no flat baseline for the row
    Samples wall;
    Samples cpu;
    std::size_t channels = 0;
    std::size_t bytes_pretty = 0;
    std::size_t bytes_compact = 0;
};

/// The flat list as JSON: every maximal channel as an array of indexes into the candidate flows. It leaves
/// out the flow table that the catalog carries, so it flatters the baseline.
Json flat_document(const std::vector<alltoall::Flow>& candidates, const std::vector<alltoall::Channel>& channels) {
    std::map<alltoall::Flow, std::size_t, decltype(&alltoall::flow_less)> index(&alltoall::flow_less);
    for (std::size_t i = 0; i < candidates.size(); ++i)
        index.emplace(candidates[i], i);
    Json doc = Json::array();
    for (const auto& channel : channels) {
        Json ids = Json::array();
        for (const auto& flow : channel.flows) {
            const auto found = index.find(flow);
            if (found == index.end()) throw gpuops::InternalError("a channel holds a flow that is not a candidate");
            ids.push_back(found->second);
        }
        doc.push_back(std::move(ids));
    }
    return doc;
}

/// Routes, lists candidate flows and enumerates every maximal channel (Bron–Kerbosch), `repetitions` times.
FlatResult measure_flat(const topo::Topology& topology, const CatalogResult& catalog, std::size_t repetitions) {
    FlatResult r;
    if (catalog.method != "exact" || !catalog.stats.raw_exact) {
        r.not_computable = "not computable (cluster: hierarchical catalog)";
        return r;
    }
    if (catalog.stats.raw_channels > static_cast<double>(flat_limit)) {
        r.not_computable = fmt::format("not computable: more than {} channels to enumerate", flat_limit);
        return r;
    }
    std::vector<alltoall::Flow> candidates;
    std::vector<alltoall::Channel> channels;
    for (std::size_t i = 0; i < repetitions; ++i) {
        channels.clear();
        time_it(r.wall, r.cpu, [&] {
            const topo::Router router(topology);
            candidates = alltoall::candidate_flows(router);
            channels = alltoall::enumerate_maximal(candidates, flat_limit);
        });
    }
    r.channels = channels.size();
    if (static_cast<double>(r.channels) != catalog.stats.raw_channels) {
        throw gpuops::InternalError(fmt::format("flat enumeration finds {} maximal channels, the catalog represents {}",
                                                r.channels, catalog.stats.raw_channels));
    }
    const Json doc = flat_document(candidates, channels);
    r.bytes_pretty = gpuops::json_io::dump(doc, true).size();
    r.bytes_compact = gpuops::json_io::dump(doc, false).size();
    return r;
}

struct Row {
    Platform platform;
    std::string label;
    std::size_t gpus = 0;
    CatalogResult catalog;
    FlatResult flat;
};

struct Target {
    std::string platform;
    std::string goal;
    std::string measured;
    bool pass = false;
};

std::string format_seconds(double s) {
    if (s < 1e-3) return fmt::format("{:.0f} µs", s * 1e6);
    if (s < 1) return fmt::format("{:.0f} ms", s * 1e3);
    return fmt::format("{:.2f} s", s);
}

std::string format_bytes(std::size_t bytes) {
    const auto b = static_cast<double>(bytes);
    if (b < 1e3) return fmt::format("{} B", bytes);
    if (b < 1e6) return fmt::format("{:.1f} kB", b / 1e3);
    return fmt::format("{:.2f} MB", b / 1e6);
}

/// Exact counts as integers; hierarchical or huge ones as 10^x (from the log10, which never overflows).
std::string format_count(double x, double log10, bool exact) {
    if (exact && std::isfinite(x) && x < 1e15) return fmt::format("{:.0f}", x);
    return fmt::format("10^{:.2f}", log10);
}

std::string format_compression(const alltoall::CatalogStats& s) {
    if (std::isfinite(s.compression) && s.compression < 1e6) return fmt::format("{:.1f}×", s.compression);
    return fmt::format("10^{:.2f}×", s.compression_log10);
}

std::vector<Target> check_targets(const std::vector<Row>& rows) {
    std::vector<Target> targets;
    for (const auto& row : rows) {
        const auto& c = row.catalog;
        if (row.gpus == target_gpus) {
            targets.push_back(
                {row.label, fmt::format("build ≤ {:.0f} s (median, one core)", target_build_seconds),
                 fmt::format("{} (CPU {})", format_seconds(c.wall.median()), format_seconds(c.cpu.median())),
                 c.wall.median() <= target_build_seconds});
            targets.push_back({row.label, fmt::format("catalog ≤ {} bytes (pretty JSON)", target_bytes),
                               fmt::format("{} bytes", c.bytes_pretty), c.bytes_pretty <= target_bytes});
        }
        const bool exact = !row.flat.not_computable.has_value();
        targets.push_back(
            {row.label,
             exact ? fmt::format("compression ≥ {:.0f}× (raw count checked by flat enumeration)", target_compression)
                   : fmt::format("compression ≥ {:.0f}× (hierarchical: count represented, not "
                                 "enumerated)",
                                 target_compression),
             format_compression(c.stats), c.stats.compression_log10 >= std::log10(target_compression)});
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

Json report_json(const std::vector<Row>& rows, const std::vector<Target>& targets, std::size_t repetitions) {
    Json doc = gpuops::json_io::make_header(report_schema, report_schema_version, "bench_catalog");
    doc["machine"] = machine_json();
    doc["method"] = {
        {"repetitions", repetitions},
        {"statistic", "median and min over repetitions of the wall-clock time, in seconds; CPU time beside it"},
        {"catalog", "Catalog::build with default options; size = the document vp-catalog writes by default "
                    "(pretty) and with --compact"},
        {"flat", "Router, candidate_flows and enumerate_maximal: every maximal channel, stored as arrays of "
                 "candidate-flow indexes (no flow table); single nodes only"},
        {"ratio", "catalog / flat: below 1, the catalog is faster or smaller"}};
    Json items = Json::array();
    for (const auto& row : rows) {
        const auto& c = row.catalog;
        const auto& s = c.stats;
        Json catalog = {{"method", c.method},
                        {"build_s", c.wall.to_json()},
                        {"cpu_s", c.cpu.to_json()},
                        {"library_build_s", c.library_seconds.to_json()},
                        {"bytes", c.bytes_pretty},
                        {"bytes_compact", c.bytes_compact},
                        {"orbits", s.orbits},
                        {"raw_channels", finite_or_null(s.raw_channels)},
                        {"raw_channels_log10", s.raw_channels_log10},
                        {"raw_exact", s.raw_exact},
                        {"compression", finite_or_null(s.compression)},
                        {"compression_log10", s.compression_log10}};
        Json flat;
        if (row.flat.not_computable) {
            flat = {{"computable", false}, {"reason", *row.flat.not_computable}};
        } else {
            const auto& f = row.flat;
            flat = {
                {"computable", true},
                {"time_s", f.wall.to_json()},
                {"cpu_s", f.cpu.to_json()},
                {"channels", f.channels},
                {"bytes", f.bytes_pretty},
                {"bytes_compact", f.bytes_compact},
                {"time_ratio", c.wall.median() / f.wall.median()},
                {"bytes_ratio", static_cast<double>(c.bytes_pretty) / static_cast<double>(f.bytes_pretty)},
                {"bytes_ratio_compact", static_cast<double>(c.bytes_compact) / static_cast<double>(f.bytes_compact)}};
        }
        items.push_back({{"platform", row.label},
                         {"preset", row.platform.preset},
                         {"nodes", row.platform.nodes},
                         {"fabric", row.platform.nodes == 1 ? Json(nullptr) : Json(std::string(fabric))},
                         {"gpus", row.gpus},
                         {"catalog", std::move(catalog)},
                         {"flat", std::move(flat)}});
    }
    doc["rows"] = std::move(items);
    Json goals = Json::array();
    for (const auto& t : targets)
        goals.push_back({{"platform", t.platform}, {"goal", t.goal}, {"measured", t.measured}, {"pass", t.pass}});
    doc["targets"] = std::move(goals);
    doc["all_targets_pass"] = std::all_of(targets.begin(), targets.end(), [](const Target& t) { return t.pass; });
    return doc;
}

std::string report_markdown(const std::vector<Row>& rows, const std::vector<Target>& targets, std::size_t repetitions,
                            std::string_view json_path) {
    std::string out = "# gpuops catalog bench\n\n";
    out += fmt::format("- method: {} build(s) per platform, one thread; median and min wall-clock time; size = the "
                       "gpuops.catalog document as vp-catalog writes it (pretty JSON)\n",
                       repetitions);
    out += "- baseline: flat enumeration of every maximal channel (route, candidate flows, Bron–Kerbosch), stored "
           "as JSON arrays of flow indexes (no flow table, which flatters it); ratio = catalog / flat, below 1 is "
           "faster or smaller\n";
    out += "\n| platform | method | build median | build min | catalog size | orbits | raw channels | compression |"
           "\n|---|---|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& row : rows) {
        const auto& c = row.catalog;
        out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", row.label, c.method,
                           format_seconds(c.wall.median()), format_seconds(c.wall.min()), format_bytes(c.bytes_pretty),
                           c.stats.orbits,
                           format_count(c.stats.raw_channels, c.stats.raw_channels_log10, c.stats.raw_exact),
                           format_compression(c.stats));
    }
    out += "\n| platform | flat channels | flat time (median) | flat size | time ratio | size ratio |"
           "\n|---|---:|---:|---:|---:|---:|\n";
    for (const auto& row : rows) {
        const auto& c = row.catalog;
        const auto& f = row.flat;
        if (f.not_computable) {
            out += fmt::format("| {} | {} | — | — | — | — |\n", row.label, *f.not_computable);
            continue;
        }
        out += fmt::format("| {} | {} | {} | {} | {:.3f} | {:.3f} |\n", row.label, f.channels,
                           format_seconds(f.wall.median()), format_bytes(f.bytes_pretty),
                           c.wall.median() / f.wall.median(),
                           static_cast<double>(c.bytes_pretty) / static_cast<double>(f.bytes_pretty));
    }
    out += "\n| target | platform | measured | result |\n|---|---|---:|---|\n";
    for (const auto& t : targets)
        out += fmt::format("| {} | {} | {} | {} |\n", t.goal, t.platform, t.measured, t.pass ? "PASS" : "FAIL");
    if (!json_path.empty()) out += fmt::format("\nJSON report: {}\n", json_path);
    return out;
}

std::size_t repetitions_from_environment() {
    const char* text = std::getenv(std::string(repetitions_variable).c_str());
    if (text == nullptr || *text == '\0') return default_repetitions;
    char* end = nullptr;
    const long n = std::strtol(text, &end, 10);
    if (*end != '\0' || n < 1 || n > 1000) {
        throw gpuops::UsageError(
            fmt::format("{}={}: expected a whole number of repetitions from 1 to 1000", repetitions_variable, text));
    }
    return static_cast<std::size_t>(n);
}

}  // namespace

int main(int argc, char** argv) {
    gpuops::cli::Tool tool("bench_catalog",
                           "Time the channel catalog build per platform (8 to 256 GPUs) beside flat enumeration of\n"
                           "every maximal channel, check the catalog's targets, print a markdown table and write a\n"
                           "gpuops.bench_catalog document. Repetitions: GPUOPS_BENCH_CATALOG_REPETITIONS (default 3).",
                           {"markdown", "json"});
    std::string json_path = "bench-catalog.json";
    tool.app()
        .add_option("--json", json_path,
                    "Where to write the gpuops.bench_catalog document (default bench-catalog.json)")
        ->type_name("FILE");

    return tool.run(argc, argv, [&] {
        const std::size_t repetitions = repetitions_from_environment();
        const std::vector<Platform> platforms = {{"pcie-8gpu-gen4", 1},
                                                 {"pcie-8gpu-gen4", 2},
                                                 {"pcie-8gpu-gen4", 8},
                                                 {"pcie-8gpu-gen4", 32},
                                                 {"pcie-8gpu-gen5", 1}};
        std::vector<Row> rows;
        for (const auto& p : platforms) {
            Row row;
            row.platform = p;
            const topo::Topology topology = make_topology(p);
            row.gpus = topology.devices_of(topo::DeviceKind::gpu).size();
            row.label = platform_label(p, row.gpus);
            tool.note(fmt::format("{}: {} catalog build(s)", row.label, repetitions));
            row.catalog = measure_catalog(topology, repetitions);
            row.flat = measure_flat(topology, row.catalog, repetitions);
            rows.push_back(std::move(row));
        }
        const auto targets = check_targets(rows);
        const Json doc = report_json(rows, targets, repetitions);
        gpuops::Output json_out(json_path);
        gpuops::json_io::write(json_out.stream(), doc);
        json_out.commit();
        // A missed target is a finding, not a failure of the benchmark: FAIL in the table, exit 0.
        if (tool.common().format == "json") {
            tool.write(gpuops::json_io::dump(doc, !tool.common().compact));
        } else {
            tool.write(report_markdown(rows, targets, repetitions, json_out.is_stdout() ? "" : json_path));
        }
        return gpuops::ExitCode::ok;
    });
}
