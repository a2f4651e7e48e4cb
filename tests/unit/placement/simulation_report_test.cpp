// The outputs of compass-place simulate: trace slices, the gpuops.simulation JSON, the time series files and the
// SVG plot (parsed back as XML and checked against the samples it draws).
#include <catch2/catch.hpp>

#include <sstream>

#include <fmt/format.h>
#include <tinyxml2.h>

#include "gpuops/core/error.hpp"
#include "gpuops/placement/simulation_report.hpp"

using namespace gpuops;
using namespace gpuops::placement;

namespace {

Trace day_trace() {
    Trace t;
    t.source = "days.csv";
    const std::vector<double> submits = {0, 100, 86'399, 86'400, 90'000, 172'800, 200'000};
    for (std::size_t k = 0; k < submits.size(); ++k)
        t.jobs.push_back({fmt::format("j{}", k), submits[k], 1, 4, 600, 4, static_cast<int>(k) + 2});
    t.report.rows_read = static_cast<std::int64_t>(submits.size()) + 1;
    t.report.jobs_kept = static_cast<std::int64_t>(submits.size());
    t.report.skipped["no GPUs"] = {1, {9}};
    return t;
}

SimulationReport run_report(const Trace& trace, const std::vector<PolicyKind>& kinds) {
    SimulationReport report;
    report.trace = &trace;
    report.sizing = {2, 8, 0.9, 12};
    report.options.nodes = 2;
    for (const PolicyKind kind : kinds) {
        SimulationOptions o = report.options;
        o.policy = kind;
        report.results.push_back(simulate(trace, o));
    }
    return report;
}

/// A trace that fragments two nodes: 1- and 4-GPU jobs beside a 2 × 8 job that has to wait for both.
Trace fragmenting_trace() {
    Trace t;
    t.source = "dir/frag.csv";
    const std::vector<std::tuple<double, int, int, double>> rows = {{0, 1, 1, 300},  {0, 1, 4, 600}, {10, 1, 2, 200},
                                                                    {20, 2, 8, 100}, {30, 1, 1, 50}, {40, 1, 4, 400}};
    for (std::size_t k = 0; k < rows.size(); ++k) {
        const auto [submit, w, g, duration] = rows[k];
        t.jobs.push_back({fmt::format("f{}", k), submit, w, g, duration, w * g, static_cast<int>(k) + 2});
    }
    return t;
}

}  // namespace

TEST_CASE("slice keeps one day of jobs and rebases it to the day's start", "[simulation_report]") {
    const Trace t = day_trace();
    const Trace day1 = slice(t, {1, std::nullopt});
    REQUIRE(day1.jobs.size() == 2);
    CHECK(day1.jobs[0].id == "j3");
    CHECK(day1.jobs[0].submit_s == 0);
    CHECK(day1.jobs[1].submit_s == 3600);
    CHECK(day1.report == t.report);  // the import report is the whole file's
    CHECK(day1.source == t.source);

    const Trace first = slice(t, {std::nullopt, 3});
    REQUIRE(first.jobs.size() == 3);
    CHECK(first.jobs[2].id == "j2");
    CHECK(first.jobs[2].submit_s == 86'399);

    const Trace day0_one = slice(t, {0, 1});
    REQUIRE(day0_one.jobs.size() == 1);
    CHECK(day0_one.jobs[0].id == "j0");
    CHECK(slice(t, {5, std::nullopt}).jobs.empty());
    CHECK(slice(t, {}).jobs == t.jobs);
}

TEST_CASE("slice rejects a negative day and a job limit below 1", "[simulation_report]") {
    const Trace t = day_trace();
    CHECK_THROWS_AS(slice(t, {-1, std::nullopt}), DataError);
    CHECK_THROWS_AS(slice(t, {std::nullopt, 0}), DataError);
}

TEST_CASE("the simulation JSON has one object per policy with the metrics the issue names", "[simulation_report]") {
    const Trace t = fragmenting_trace();
    const SimulationReport report = run_report(t, {PolicyKind::compass, PolicyKind::best_fit});
    const auto doc = to_json(report, "compass-place");
    CHECK(doc["schema"] == "gpuops.simulation");
    CHECK(doc["schema_version"] == 1);
    CHECK(doc["cluster"]["nodes"] == 2);
    CHECK(doc["cluster"]["gpus"] == 16);
    CHECK(doc["cluster"]["sizing"] == "eta");
    CHECK(doc["cluster"]["demand_quantile_gpus"] == 12);
    CHECK(doc["trace"]["jobs_replayed"] == t.jobs.size());
    CHECK(doc["trace"]["window_day"].is_null());
    CHECK(doc["options"]["migration_charge"] == "per-event");
    REQUIRE(doc["results"].size() == 2);
    for (std::size_t k = 0; k < 2; ++k) {
        const auto& r = doc["results"][k];
        const SimulationResult& want = report.results[k];
        for (const char* key :
             {"policy", "afr", "ajct_s", "agu", "mean_queue_s", "p95_queue_s", "makespan_s", "migrations"})
            CHECK(r.contains(key));
        CHECK(r["policy"] == want.policy);
        CHECK(r["afr"].get<double>() == Approx(want.afr).margin(1e-6));
        CHECK(r["agu"].get<double>() == Approx(want.agu).margin(1e-6));
        CHECK(r["ajct_s"].get<double>() == Approx(want.ajct_s).margin(1e-3));
        CHECK(r["makespan_s"].get<double>() == Approx(want.makespan_s).margin(1e-3));
        CHECK(r["migrations"] == want.migrations);
        CHECK(r["jobs_completed"] == want.jobs);
        std::int64_t max_n_sif = 0;
        for (const auto& s : want.samples)
            max_n_sif = std::max(max_n_sif, s.n_sif);
        CHECK(r["max_n_sif"] == max_n_sif);
    }
    CHECK(doc["results"][0]["policy"] == "compass");
    CHECK(doc["results"][1]["policy"] == "best-fit");
}

TEST_CASE("the text table has a row per policy and names the trace and the cluster", "[simulation_report]") {
    const Trace t = day_trace();
    const SimulationReport report = run_report(t, {PolicyKind::compass, PolicyKind::spread, PolicyKind::fgd});
    const std::string text = render_text(report);
    CHECK(text.find("days.csv (canonical): 7 jobs replayed, 1 rows skipped on import") != std::string::npos);
    CHECK(text.find("2 nodes x 8 GPUs = 16 GPUs (eta 0.9: demand quantile 12 GPUs)") != std::string::npos);
    for (const char* policy : {"\ncompass ", "\nspread ", "\nfgd "})
        CHECK(text.find(policy) != std::string::npos);
    CHECK(std::count(text.begin(), text.end(), '\n') == 3 + 2 + 3);
}

TEST_CASE("series files: CSV rows and JSON lines, one per sample of every policy", "[simulation_report]") {
    CHECK(series_format_for("out/series.csv") == SeriesFormat::csv);
    CHECK(series_format_for("s.jsonl") == SeriesFormat::jsonl);
    CHECK(series_format_for("s.ndjson") == SeriesFormat::jsonl);
    CHECK_FALSE(series_format_for("s.json").has_value());
    CHECK_FALSE(series_format_for("csv").has_value());

    const Trace t = fragmenting_trace();
    const SimulationReport report = run_report(t, {PolicyKind::compass, PolicyKind::first_fit});
    const std::size_t samples = report.results[0].samples.size() + report.results[1].samples.size();
    REQUIRE(samples > 4);

    std::ostringstream csv;
    write_series(csv, report.results, SeriesFormat::csv);
    std::istringstream lines(csv.str());
    std::string line;
    std::getline(lines, line);
    CHECK(line == "policy,t_s,n_sif,gpu_utilisation,queued");
    std::size_t rows = 0;
    while (std::getline(lines, line)) {
        const SimulationResult& r = rows < report.results[0].samples.size() ? report.results[0] : report.results[1];
        const SimulationSample& s =
            r.samples[rows < report.results[0].samples.size() ? rows : rows - report.results[0].samples.size()];
        CHECK(line == fmt::format("{},{},{},{},{}", r.policy, s.t, s.n_sif, s.gpu_utilisation, s.queued));
        ++rows;
    }
    CHECK(rows == samples);

    std::ostringstream jsonl;
    write_series(jsonl, report.results, SeriesFormat::jsonl);
    std::istringstream records(jsonl.str());
    rows = 0;
    while (std::getline(records, line)) {
        const auto j = json_io::Json::parse(line);
        CHECK(j.size() == 5);
        CHECK(j["policy"] == (rows < report.results[0].samples.size() ? "compass" : "first-fit"));
        CHECK(j["gpu_utilisation"].get<double>() >= 0);
        CHECK(j["gpu_utilisation"].get<double>() <= 1);
        ++rows;
    }
    CHECK(rows == samples);
}

TEST_CASE("the SVG plot is well-formed XML with a line per policy and panel inside its frame", "[simulation_report]") {
    const Trace t = fragmenting_trace();
    const SimulationReport report =
        run_report(t, {PolicyKind::best_fit, PolicyKind::compass, PolicyKind::spread, PolicyKind::repack});
    const std::string svg = render_svg(report, 50);
    tinyxml2::XMLDocument doc;
    REQUIRE(doc.Parse(svg.c_str(), svg.size()) == tinyxml2::XML_SUCCESS);
    const auto* root = doc.RootElement();
    REQUIRE(root != nullptr);
    CHECK(std::string_view(root->Name()) == "svg");
    const double width = root->DoubleAttribute("width");
    const double height = root->DoubleAttribute("height");

    int paths = 0;
    std::vector<std::string> legend;
    std::string compass_colour;
    std::string last_stroke;
    for (const auto* e = root->FirstChildElement(); e != nullptr; e = e->NextSiblingElement()) {
        const std::string_view name = e->Name();
        if (name == "path") {
            ++paths;
            last_stroke = e->Attribute("stroke");
            // Every coordinate of the path lies inside the picture.
            std::istringstream d(e->Attribute("d"));
            std::string token;
            while (d >> token) {
                const char op = token[0];
                std::string numbers = token.substr(1);
                std::replace(numbers.begin(), numbers.end(), ',', ' ');
                std::istringstream values(numbers);
                double a = 0;
                values >> a;
                if (op == 'M' || op == 'H') CHECK((a >= 0 && a <= width));
                if (op == 'V') CHECK((a >= 0 && a <= height));
                if (op == 'M') {
                    double b = 0;
                    values >> b;
                    CHECK((b >= 0 && b <= height));
                }
            }
        }
        if (name == "text") legend.emplace_back(e->GetText() != nullptr ? e->GetText() : "");
        if (name == "line" && e->Attribute("stroke-width") != nullptr &&
            std::string_view(e->Attribute("stroke-width")) == "3") {
            const auto* label = e->NextSiblingElement("text");
            if (label != nullptr && std::string_view(label->GetText()) == "compass")
                compass_colour = e->Attribute("stroke");
        }
    }
    CHECK(paths == 2 * static_cast<int>(report.results.size()));
    for (const char* policy : {"compass", "best-fit", "spread", "repack"})
        CHECK(std::find(legend.begin(), legend.end(), policy) != legend.end());
    // COMPASS is drawn last (on top), in its legend colour.
    CHECK_FALSE(compass_colour.empty());
    CHECK(last_stroke == compass_colour);
    CHECK(svg.find("frag.csv: 6 jobs on 2 nodes") != std::string::npos);
}

TEST_CASE("the SVG N-SIF line peaks where the series does", "[simulation_report]") {
    // One column per sample interval is not guaranteed, but the maximum of a column is the maximum of the samples
    // it covers: the highest point drawn is the series' maximum N·SIF.
    const Trace t = fragmenting_trace();
    const SimulationReport report = run_report(t, {PolicyKind::spread});
    std::int64_t max_n_sif = 0;
    for (const auto& s : report.results[0].samples)
        max_n_sif = std::max(max_n_sif, s.n_sif);
    REQUIRE(max_n_sif > 0);
    const std::string svg = render_svg(report, 7);
    tinyxml2::XMLDocument doc;
    REQUIRE(doc.Parse(svg.c_str(), svg.size()) == tinyxml2::XML_SUCCESS);
    const auto* first_path = doc.RootElement()->FirstChildElement("path");
    REQUIRE(first_path != nullptr);
    // The panel: top 60, height 220, y range [0, ceil(1.1 · max(2, max N·SIF))].
    const double y_max = std::ceil(1.1 * static_cast<double>(std::max<std::int64_t>(2, max_n_sif)));
    const double want_y = 60 + 220 * (1 - static_cast<double>(max_n_sif) / y_max);
    std::istringstream d(first_path->Attribute("d"));
    std::string token;
    double min_y = 1e9;
    while (d >> token) {
        if (token[0] == 'V') min_y = std::min(min_y, std::stod(token.substr(1)));
    }
    CHECK(min_y == Approx(want_y).margin(0.06));
}
