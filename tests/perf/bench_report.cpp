// make bench: turns bench_topo's Google Benchmark JSON into per-item medians and ours/baseline ratios (markdown +
// JSON).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gpuops/core/cli.hpp"
#include "gpuops/core/error.hpp"
#include "gpuops/core/json_io.hpp"
#include "gpuops/core/output.hpp"

namespace {

using gpuops::json_io::Json;
using gpuops::json_io::View;

constexpr std::string_view report_schema = "gpuops.bench_report";
constexpr int report_schema_version = 1;

/// The repetitions of one side (ours or baseline) of an item, in nanoseconds per unit of work.
struct Side {
    double units = 1;
    std::vector<double> samples_ns;
};

struct Item {
    std::string name;
    std::string unit = "run";
    Side ours;
    Side baseline;
};

struct Stats {
    double median = 0;
    double cv = 0;  ///< coefficient of variation (sample stddev / mean); 0 for fewer than two samples
};

Stats stats_of(std::vector<double> samples) {
    Stats s;
    if (samples.empty()) return s;
    std::sort(samples.begin(), samples.end());
    const std::size_t n = samples.size();
    s.median = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
    if (n < 2) return s;
    double mean = 0;
    for (const double x : samples)
        mean += x;
    mean /= static_cast<double>(n);
    double sum_sq = 0;
    for (const double x : samples)
        sum_sq += (x - mean) * (x - mean);
    s.cv = mean > 0 ? std::sqrt(sum_sq / static_cast<double>(n - 1)) / mean : 0;
    return s;
}

double nanoseconds_per(const View& time_unit) {
    const std::string unit = time_unit.as_string();
    if (unit == "ns") return 1;
    if (unit == "us") return 1e3;
    if (unit == "ms") return 1e6;
    if (unit == "s") return 1e9;
    throw time_unit.error(fmt::format("unknown time unit {}", gpuops::quote(unit)));
}

/// A JSON document that bench_topo stored as a string in the context stanza; `fallback` when absent.
Json context_document(const View& context, std::string_view key, Json fallback) {
    const auto text = context.string_or_null(key);
    if (!text) return fallback;
    try {
        return Json::parse(*text);
    } catch (const Json::parse_error& e) {
        throw context.at(key).error(fmt::format("expected a JSON document in a string: {}", e.what()));
    }
}

/// Orders "n8" before "n64": digit runs compare by value.
bool natural_less(std::string_view a, std::string_view b) {
    std::size_t i = 0;
    std::size_t j = 0;
    const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
    while (i < a.size() && j < b.size()) {
        if (is_digit(a[i]) && is_digit(b[j])) {
            const std::size_t i0 = i;
            const std::size_t j0 = j;
            while (i < a.size() && is_digit(a[i]))
                ++i;
            while (j < b.size() && is_digit(b[j]))
                ++j;
            const auto x = a.substr(i0, i - i0);
            const auto y = b.substr(j0, j - j0);
            if (x.size() != y.size()) return x.size() < y.size();
            if (x != y) return x < y;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i;
            ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

/// The items, in the order bench_topo registered them (it lists them in the context), then any others.
class Report {
public:
    Report(const Json& doc, std::string source) : source_(std::move(source)) {
        const View root(doc);
        const View context = root.at("context");
        context_ = context.json();
        for (const auto& entry : context_document(context, "gpuops_items", Json::array()))
            item(entry.value("name", std::string())).unit = entry.value("unit", std::string("run"));
        listed_ = items_.size();
        baselines_ = context_document(context, "gpuops_baselines", Json::object());
        for (const auto& note : context_document(context, "gpuops_notes", Json::array()))
            notes_.push_back(note.get<std::string>());
        for (const auto& run : root.at("benchmarks").items())
            add_run(run);
        drop_unmeasured();
        if (items_.empty()) throw root.at("benchmarks").error("no benchmark pairs with both ours and baseline runs");
    }

    [[nodiscard]] Json to_json() const {
        Json doc = gpuops::json_io::make_header(report_schema, report_schema_version, "bench_report");
        doc["source"] = source_;
        doc["machine"] = machine();
        doc["method"] = {{"statistic", "median over repetitions of the real (wall-clock) time"},
                         {"ratio", "median ours / median baseline, both per unit of work; below 1 is faster"},
                         {"noise", "the larger coefficient of variation (stddev / mean) of the two sides"},
                         {"repetitions", min_repetitions()}};
        doc["baselines"] = baselines_;
        Json items = Json::array();
        for (const auto& it : items_) {
            const Stats o = stats_of(it.ours.samples_ns);
            const Stats b = stats_of(it.baseline.samples_ns);
            const auto side = [](const Side& s, const Stats& st) {
                return Json{{"units", s.units},
                            {"median_ns_per_unit", st.median},
                            {"cv", st.cv},
                            {"samples_ns_per_unit", s.samples_ns}};
            };
            items.push_back({{"item", it.name},
                             {"group", group_of(it.name)},
                             {"unit", it.unit},
                             {"ours", side(it.ours, o)},
                             {"baseline", side(it.baseline, b)},
                             {"ratio", o.median / b.median},
                             {"noise", std::max(o.cv, b.cv)}});
        }
        doc["items"] = std::move(items);
        Json groups = Json::array();
        for (const auto& [group, ratios] : group_ratios()) {
            const Stats s = stats_of(ratios);
            groups.push_back({{"group", group},
                              {"items", ratios.size()},
                              {"median_ratio", s.median},
                              {"min_ratio", *std::min_element(ratios.begin(), ratios.end())},
                              {"max_ratio", *std::max_element(ratios.begin(), ratios.end())}});
        }
        doc["groups"] = std::move(groups);
        doc["notes"] = notes_;
        return doc;
    }

    [[nodiscard]] std::string to_markdown(std::string_view json_path) const {
        const Json m = machine();
        std::string out = "# gpuops bench report\n\n";
        std::vector<std::string> where;
        if (m.contains("num_cpus")) where.push_back(fmt::format("{} CPUs", m["num_cpus"].dump()));
        if (m.contains("mhz_per_cpu")) where.push_back(fmt::format("{} MHz", m["mhz_per_cpu"].dump()));
        if (m.contains("host_name")) where.push_back(fmt::format("host {}", m["host_name"].get<std::string>()));
        if (m.contains("load_avg") && m["load_avg"].is_array()) {
            std::vector<std::string> loads;
            for (const auto& l : m["load_avg"])
                loads.push_back(l.is_number() ? fmt::format("{:.2f}", l.get<double>()) : l.dump());
            where.push_back(fmt::format("load average {}", fmt::join(loads, " ")));
        }
        if (m.contains("cpu_scaling_enabled") && m["cpu_scaling_enabled"] == true)
            where.emplace_back("CPU frequency scaling on (expect noise)");
        out += fmt::format("- machine: {}\n",
                           where.empty() ? std::string("unknown") : fmt::format("{}", fmt::join(where, ", ")));
        out += fmt::format("- run: {}; gpuops build {}; Google Benchmark library build {}\n",
                           m.value("date", std::string("date unknown")), m.value("build_type", std::string("unknown")),
                           m.value("library_build_type", std::string("unknown")));
        out += fmt::format("- method: median real time over {} repetition(s) per side, in one run; ratio = ours / "
                           "baseline per unit of work (below 1: faster than the baseline); noise = the larger "
                           "stddev/mean of the two sides\n",
                           min_repetitions());
        for (const auto& [prefix, what] : baselines_.items())
            out += fmt::format("- baseline for {}: {}\n", prefix,
                               what.is_string() ? what.get<std::string>() : what.dump());
        out += "\n| item | ours median | baseline median | ratio | noise |\n|---|---:|---:|---:|---:|\n";
        for (const auto& it : items_) {
            const Stats o = stats_of(it.ours.samples_ns);
            const Stats b = stats_of(it.baseline.samples_ns);
            out += fmt::format("| {} | {} | {} | {:.2f} | {:.0f}% |\n", it.name, format_time(o.median, it.unit),
                               format_time(b.median, it.unit), o.median / b.median, 100 * std::max(o.cv, b.cv));
        }
        const auto groups = group_ratios();
        if (!groups.empty()) {
            out += "\n| group | items | median ratio | min | max |\n|---|---:|---:|---:|---:|\n";
            for (const auto& [group, ratios] : groups)
                out += fmt::format("| {} | {} | {:.2f} | {:.2f} | {:.2f} |\n", group, ratios.size(),
                                   stats_of(ratios).median, *std::min_element(ratios.begin(), ratios.end()),
                                   *std::max_element(ratios.begin(), ratios.end()));
        }
        if (!notes_.empty()) {
            out += "\nNotes:\n";
            for (const auto& note : notes_)
                out += fmt::format("- {}\n", note);
        }
        if (!json_path.empty()) out += fmt::format("\nJSON report: {}\n", json_path);
        return out;
    }

private:
    Item& item(const std::string& name) {
        const auto found = index_.find(name);
        if (found != index_.end()) return items_[found->second];
        index_.emplace(name, items_.size());
        items_.push_back(Item{name, "run", {}, {}});
        return items_.back();
    }

    void add_run(const View& run) {
        // Aggregates (mean, median, stddev, cv) are recomputed here from the repetitions themselves.
        if (run.string_or_null("run_type").value_or("iteration") != "iteration") return;
        const std::string name = run.string_or_null("run_name").value_or(run.at("name").as_string());
        if (auto failed = run.find("error_occurred"); failed && failed->as_bool()) {
            notes_.push_back(fmt::format("{}: failed: {}", name, run.string_or_null("error_message").value_or("?")));
            return;
        }
        const auto slash = name.rfind('/');
        const std::string role = slash == std::string::npos ? std::string() : name.substr(slash + 1);
        if (role != "ours" && role != "baseline") {
            notes_.push_back(fmt::format("{}: ignored, the name ends in neither /ours nor /baseline", name));
            return;
        }
        const double units = run.number_or_null("units").value_or(1);
        if (!(units > 0)) throw run.at("units").error("expected a positive number of units");
        Side& side = role == "ours" ? item(name.substr(0, slash)).ours : item(name.substr(0, slash)).baseline;
        side.units = units;
        side.samples_ns.push_back(run.at("real_time").as_number() * nanoseconds_per(run.at("time_unit")) / units);
    }

    void drop_unmeasured() {
        // Items bench_topo did not list come after the listed ones, in a readable order rather than run order.
        std::sort(items_.begin() + static_cast<std::ptrdiff_t>(listed_), items_.end(),
                  [](const Item& a, const Item& b) { return natural_less(a.name, b.name); });
        std::vector<Item> kept;
        for (auto& it : items_) {
            if (!it.ours.samples_ns.empty() && !it.baseline.samples_ns.empty() &&
                stats_of(it.baseline.samples_ns).median > 0) {
                kept.push_back(std::move(it));
            } else if (!it.ours.samples_ns.empty() || !it.baseline.samples_ns.empty()) {
                notes_.push_back(fmt::format("{}: left out, it has no {} measurement", it.name,
                                             it.ours.samples_ns.empty() ? "ours" : "usable baseline"));
            }
        }
        items_ = std::move(kept);
        index_.clear();
    }

    [[nodiscard]] Json machine() const {
        Json m = Json::object();
        for (const char* key :
             {"date", "host_name", "num_cpus", "mhz_per_cpu", "cpu_scaling_enabled", "load_avg", "library_build_type"})
            if (context_.contains(key)) m[key] = context_[key];
        if (context_.contains("gpuops_build_type")) m["build_type"] = context_["gpuops_build_type"];
        return m;
    }

    [[nodiscard]] std::size_t min_repetitions() const {
        std::size_t n = SIZE_MAX;
        for (const auto& it : items_)
            n = std::min({n, it.ours.samples_ns.size(), it.baseline.samples_ns.size()});
        return items_.empty() ? 0 : n;
    }

    /// "import/hwloc/flat-v1" belongs to "import/hwloc": an item's name less its last part.
    [[nodiscard]] static std::string group_of(const std::string& name) {
        const auto slash = name.rfind('/');
        return slash == std::string::npos ? name : name.substr(0, slash);
    }

    /// Ratios per group, for groups of at least two items, in the order groups first appear.
    [[nodiscard]] std::vector<std::pair<std::string, std::vector<double>>> group_ratios() const {
        std::vector<std::pair<std::string, std::vector<double>>> groups;
        for (const auto& it : items_) {
            const std::string group = group_of(it.name);
            auto found = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == group; });
            if (found == groups.end()) found = groups.insert(groups.end(), {group, {}});
            found->second.push_back(stats_of(it.ours.samples_ns).median / stats_of(it.baseline.samples_ns).median);
        }
        std::erase_if(groups, [](const auto& g) { return g.second.size() < 2; });
        return groups;
    }

    [[nodiscard]] static std::string format_time(double ns, std::string_view unit) {
        const std::string per = unit == "run" ? std::string() : fmt::format("/{}", unit);
        if (ns < 1e3) return fmt::format("{:.0f} ns{}", ns, per);
        if (ns < 1e6) return fmt::format("{:.3g} µs{}", ns / 1e3, per);
        if (ns < 1e9) return fmt::format("{:.3g} ms{}", ns / 1e6, per);
        return fmt::format("{:.3g} s{}", ns / 1e9, per);
    }

    std::string source_;
    Json context_;
    Json baselines_;
    std::vector<Item> items_;
    std::size_t listed_ = 0;  ///< items_[0, listed_) come from bench_topo's own list
    std::map<std::string, std::size_t, std::less<>> index_;
    std::vector<std::string> notes_;
};

}  // namespace

int main(int argc, char** argv) {
    gpuops::cli::Tool tool(
        "bench_report",
        "Summarise bench_topo's Google Benchmark JSON: the median time of ours and of the baseline\n"
        "per item, and their ratio. Prints a markdown table and writes a gpuops.bench_report document.",
        {"markdown"});
    std::string input = "-";
    std::string json_path = "bench-report.json";
    auto& app = tool.app();
    app.add_option("BENCH_JSON", input, "bench_topo output (--benchmark_format=json or --benchmark_out); '-' = stdin");
    app.add_option("--json", json_path, "Where to write the gpuops.bench_report document (default bench-report.json)")
        ->type_name("FILE");

    return tool.run(argc, argv, [&] {
        const Json doc = gpuops::json_io::read_document(input);
        std::optional<Report> report;
        try {
            report.emplace(doc, gpuops::json_io::display_name(input));
        } catch (const gpuops::DataError& e) {
            throw e.in_file(gpuops::json_io::display_name(input));
        }
        gpuops::Output json_out(json_path);
        gpuops::json_io::write(json_out.stream(), report->to_json());
        json_out.commit();
        auto output = tool.open_output();
        if (tool.common().format == "json")
            gpuops::json_io::write(output.stream(), report->to_json(), !tool.common().compact);
        else
            output.stream() << report->to_markdown(json_out.is_stdout() ? std::string_view() : json_path);
        output.commit();
        return gpuops::ExitCode::ok;
    });
}
