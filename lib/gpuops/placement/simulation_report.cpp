// The outputs of `compass-place simulate`: summary JSON and text, time series, and the SVG plot.
#include "gpuops/placement/simulation_report.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"

namespace gpuops::placement {

namespace {

constexpr double seconds_per_day = 86'400;

/// Metrics are rounded where the simulation's own precision ends, so outputs compare equal across builds:
/// fractions to 1e-6, seconds to the millisecond.
double fraction(double x) { return std::round(x * 1e6) / 1e6; }
double seconds(double x) { return std::round(x * 1e3) / 1e3; }

std::string_view to_string(MigrationCharge charge) {
    return charge == MigrationCharge::per_event ? "per-event" : "per-instance";
}

json_io::Json result_json(const SimulationResult& r) {
    std::int64_t max_n_sif = 0;
    for (const SimulationSample& s : r.samples)
        max_n_sif = std::max(max_n_sif, s.n_sif);
    json_io::Json j;
    j["policy"] = r.policy;
    // AFR and AGU average over the busy periods (the queue not empty); without any they are undefined, not 0.
    const bool busy = r.busy_s > 0;
    j["afr"] = busy ? json_io::Json(fraction(r.afr)) : json_io::Json();
    j["ajct_s"] = seconds(r.ajct_s);
    j["agu"] = busy ? json_io::Json(fraction(r.agu)) : json_io::Json();
    j["mean_queue_s"] = seconds(r.mean_queue_s);
    j["p95_queue_s"] = seconds(r.p95_queue_s);
    j["makespan_s"] = seconds(r.makespan_s);
    j["migrations"] = r.migrations;
    j["migration_stalls"] = r.migration_stalls;
    j["migrations_per_job"] =
        r.jobs > 0 ? fraction(static_cast<double>(r.migrations) / static_cast<double>(r.jobs)) : 0.0;
    j["busy_s"] = seconds(r.busy_s);
    j["jobs_completed"] = r.jobs;
    j["jobs_never_fit"] = r.jobs_never_fit;
    j["max_queued"] = r.max_queued;
    j["max_n_sif"] = max_n_sif;
    j["phi_star_inexact"] = r.phi_star_inexact;
    return j;
}

std::string_view base_name(std::string_view path) {
    const auto slash = path.find_last_of('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string xml_escape(std::string_view text) {
    std::string out;
    for (const char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            default: out += c;
        }
    }
    return out;
}

/// A tick step of 1, 2 or 5 × 10^k giving about `ticks` intervals over `range`.
double nice_step(double range, int ticks) {
    const double raw = range / ticks;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    for (const double m : {1.0, 2.0, 5.0})
        if (raw <= m * magnitude) return m * magnitude;
    return 10 * magnitude;
}

/// One policy's series reduced to plot columns: the maximum N·SIF and the time-weighted mean utilisation of each
/// column the run covers; `covered` is how many leading columns that is.
struct Columns {
    std::vector<double> n_sif;
    std::vector<double> utilisation;
    std::size_t covered = 0;
};

Columns reduce(const SimulationResult& r, double x_max, int columns) {
    const auto count = static_cast<std::size_t>(columns);
    Columns out{std::vector<double>(count, 0), std::vector<double>(count, 0), 0};
    std::vector<double> weight(count, 0);
    const double width = x_max / columns;
    const double end = std::max(r.makespan_s, r.samples.empty() ? 0.0 : r.samples.back().t);
    for (std::size_t k = 0; k < r.samples.size(); ++k) {
        const SimulationSample& s = r.samples[k];
        const double from = s.t;
        const double to = k + 1 < r.samples.size() ? r.samples[k + 1].t : end;
        auto c = std::min(count - 1, static_cast<std::size_t>(std::max(0.0, from / width)));
        do {
            const double lo = std::max(from, static_cast<double>(c) * width);
            const double hi = std::min(to, static_cast<double>(c + 1) * width);
            out.n_sif[c] = std::max(out.n_sif[c], static_cast<double>(s.n_sif));
            if (hi > lo) {
                out.utilisation[c] += s.gpu_utilisation * (hi - lo);
                weight[c] += hi - lo;
            } else if (weight[c] == 0) {
                out.utilisation[c] = s.gpu_utilisation;  // an instant: kept unless the column has some duration
            }
            out.covered = std::max(out.covered, c + 1);
            ++c;
        } while (c < count && static_cast<double>(c) * width < to);
    }
    for (std::size_t c = 0; c < count; ++c)
        if (weight[c] > 0) out.utilisation[c] /= weight[c];
    return out;
}

/// A fixed colour per policy (Okabe–Ito, distinguishable with the common colour-vision deficiencies), the same in
/// every plot; COMPASS the one that stands out.
const char* colour_of(std::string_view policy) {
    constexpr std::array<std::pair<std::string_view, const char*>, 7> colours = {{{"compass", "#D55E00"},
                                                                                  {"first-fit", "#0072B2"},
                                                                                  {"best-fit", "#009E73"},
                                                                                  {"spread", "#CC79A7"},
                                                                                  {"random", "#999999"},
                                                                                  {"fgd", "#56B4E9"},
                                                                                  {"repack", "#000000"}}};
    for (const auto& [name, colour] : colours)
        if (name == policy) return colour;
    return "#E69F00";
}

struct Panel {
    double top;
    double height;
    double y_max;
    std::string label;
};

}  // namespace

Trace slice(const Trace& trace, const TraceSlice& slice) {
    if (slice.window_day && *slice.window_day < 0)
        throw DataError(fmt::format("the window day must be ≥ 0, not {}", *slice.window_day));
    if (slice.max_jobs && *slice.max_jobs < 1)
        throw DataError(fmt::format("the job limit must be ≥ 1, not {}", *slice.max_jobs));
    Trace out;
    out.format = trace.format;
    out.source = trace.source;
    out.report = trace.report;
    const double from = slice.window_day ? *slice.window_day * seconds_per_day : 0;
    const double to = slice.window_day ? from + seconds_per_day : INFINITY;
    for (const TraceJob& job : trace.jobs) {
        if (job.submit_s < from || job.submit_s >= to) continue;
        if (slice.max_jobs && static_cast<std::int64_t>(out.jobs.size()) >= *slice.max_jobs) break;
        out.jobs.push_back(job);
        out.jobs.back().submit_s -= from;
    }
    return out;
}

json_io::Json to_json(const SimulationReport& report, std::string_view tool) {
    auto doc = json_io::make_header(simulation_schema, simulation_version, tool);
    json_io::Json trace = to_json(*report.trace);
    trace["jobs_replayed"] = report.trace->jobs.size();
    trace["window_day"] = report.slice.window_day ? json_io::Json(*report.slice.window_day) : json_io::Json();
    trace["max_jobs"] = report.slice.max_jobs ? json_io::Json(*report.slice.max_jobs) : json_io::Json();
    doc["trace"] = std::move(trace);

    const ClusterSizing& c = report.sizing;
    doc["cluster"] = {{"nodes", c.nodes},
                      {"gpus_per_node", c.gpus_per_node},
                      {"gpus", static_cast<std::int64_t>(c.nodes) * c.gpus_per_node},
                      {"sizing", c.eta ? "eta" : "given"},
                      {"eta", c.eta ? json_io::Json(*c.eta) : json_io::Json()},
                      {"demand_quantile_gpus", c.eta ? json_io::Json(c.demand_quantile) : json_io::Json()}};

    const SimulationOptions& o = report.options;
    doc["options"] = {{"migration_cost_s", o.migration_cost_s},
                      {"migration_charge", to_string(o.charge)},
                      {"backfill", o.backfill},
                      {"relaxed", o.policy_options.relaxed},
                      {"seed", o.policy_options.seed},
                      {"repack_period_s", o.policy_options.repack_period_s},
                      {"sample_period_s", o.sample_period_s}};

    json_io::Json results = json_io::Json::array();
    for (const SimulationResult& r : report.results)
        results.push_back(result_json(r));
    doc["results"] = std::move(results);
    return doc;
}

std::string render_text(const SimulationReport& report) {
    const Trace& t = *report.trace;
    const ClusterSizing& c = report.sizing;
    std::string out = fmt::format("trace    {} ({}): {} jobs replayed", t.source, to_string(t.format), t.jobs.size());
    if (report.slice.window_day) out += fmt::format(", day {}", *report.slice.window_day);
    if (t.report.rows_skipped() > 0) out += fmt::format(", {} rows skipped on import", t.report.rows_skipped());
    out += '\n';
    out += fmt::format("cluster  {} nodes x {} GPUs = {} GPUs", c.nodes, c.gpus_per_node,
                       static_cast<std::int64_t>(c.nodes) * c.gpus_per_node);
    if (c.eta) out += fmt::format(" (eta {:g}: demand quantile {} GPUs)", *c.eta, c.demand_quantile);
    out += fmt::format("\nmigrate  {:g} s per {}\n\n", report.options.migration_cost_s,
                       report.options.charge == MigrationCharge::per_event ? "moved job" : "moved instance");
    out += fmt::format("{:<10} {:>9} {:>11} {:>8} {:>12} {:>12} {:>12} {:>10} {:>9} {:>9}\n", "policy", "AFR", "AJCT_s",
                       "AGU", "queue_s", "queue_p95_s", "makespan_s", "migrated", "max_NSIF", "never_fit");
    for (const SimulationResult& r : report.results) {
        std::int64_t max_n_sif = 0;
        for (const SimulationSample& s : r.samples)
            max_n_sif = std::max(max_n_sif, s.n_sif);
        const bool busy = r.busy_s > 0;
        out += fmt::format("{:<10} {:>9} {:>11.1f} {:>8} {:>12.1f} {:>12.1f} {:>12.1f} {:>10} {:>9} {:>9}\n", r.policy,
                           busy ? fmt::format("{:.6f}", fraction(r.afr)) : "-", seconds(r.ajct_s),
                           busy ? fmt::format("{:.4f}", fraction(r.agu)) : "-", seconds(r.mean_queue_s),
                           seconds(r.p95_queue_s), seconds(r.makespan_s), r.migrations, max_n_sif, r.jobs_never_fit);
    }
    return out;
}

std::optional<SeriesFormat> series_format_for(std::string_view path) {
    if (path.ends_with(".csv")) return SeriesFormat::csv;
    if (path.ends_with(".jsonl") || path.ends_with(".ndjson")) return SeriesFormat::jsonl;
    return std::nullopt;
}

void write_series(std::ostream& out, const std::vector<SimulationResult>& results, SeriesFormat format) {
    if (format == SeriesFormat::csv) out << "policy,t_s,n_sif,gpu_utilisation,queued\n";
    for (const SimulationResult& r : results) {
        for (const SimulationSample& s : r.samples) {
            if (format == SeriesFormat::csv) {
                out << fmt::format("{},{},{},{},{}\n", r.policy, seconds(s.t), s.n_sif, fraction(s.gpu_utilisation),
                                   s.queued);
            } else {
                json_io::Json j;
                j["policy"] = r.policy;
                j["t_s"] = seconds(s.t);
                j["n_sif"] = s.n_sif;
                j["gpu_utilisation"] = fraction(s.gpu_utilisation);
                j["queued"] = s.queued;
                out << j.dump() << '\n';
            }
        }
    }
}

std::string render_svg(const SimulationReport& report, int columns) {
    constexpr double width = 960;
    constexpr double left = 70;
    constexpr double right = 20;
    constexpr double plot_width = width - left - right;
    columns = std::clamp(columns, 1, static_cast<int>(plot_width));

    double x_max = 0;
    double top_max = 2;  // the COMPASS-ABS bound under WCC is always in view
    std::vector<Columns> reduced;
    for (const SimulationResult& r : report.results)
        x_max = std::max({x_max, r.makespan_s, r.samples.empty() ? 0.0 : r.samples.back().t});
    if (x_max <= 0) x_max = 3600;
    for (const SimulationResult& r : report.results) {
        reduced.push_back(reduce(r, x_max, columns));
        for (const double v : reduced.back().n_sif)
            top_max = std::max(top_max, v);
    }
    top_max = std::ceil(top_max * 1.1);

    const std::array<Panel, 2> panels = {Panel{60, 220, top_max, "N\u00b7SIF (partial nodes beyond the optimum)"},
                                         Panel{340, 220, 1.0, "GPU utilisation"}};
    const double legend_top = panels[1].top + panels[1].height + 50;
    const double height = legend_top + 20.0 * std::ceil(static_cast<double>(report.results.size()) / 4.0) + 10;
    const double hours = x_max / 3600;
    const auto x_of = [&](double h) { return left + plot_width * h / hours; };

    std::string svg =
        fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                    "font-family=\"sans-serif\" font-size=\"12\">\n"
                    "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
                    width, height);
    const ClusterSizing& c = report.sizing;
    svg +=
        fmt::format("<text x=\"{}\" y=\"24\" font-size=\"15\">{}: {} jobs on {} nodes \u00d7 {} GPUs</text>\n", left,
                    xml_escape(base_name(report.trace->source)), report.trace->jobs.size(), c.nodes, c.gpus_per_node);

    const double x_step = nice_step(hours, 8);
    for (std::size_t p = 0; p < panels.size(); ++p) {
        const Panel& panel = panels[p];
        const auto y_of = [&](double v) { return panel.top + panel.height * (1 - v / panel.y_max); };
        svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", left, panel.top - 8, xml_escape(panel.label));
        const double y_step = p == 0 ? std::max(1.0, nice_step(panel.y_max, 5)) : 0.25;
        for (double v = 0; v <= panel.y_max + 1e-9; v += y_step) {
            svg += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
                               "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
                               left, left + plot_width, y_of(v), left - 6, y_of(v) + 4, v);
        }
        for (double h = 0; h <= hours + 1e-9; h += x_step) {
            svg += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#eee\"/>"
                               "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n",
                               x_of(h), panel.top, panel.top + panel.height, panel.top + panel.height + 16, h);
        }
        if (p == 0) {
            svg += fmt::format(
                "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#888\" stroke-dasharray=\"5,4\"/>"
                "<text x=\"{1}\" y=\"{3:.1f}\" text-anchor=\"end\" fill=\"#666\">dashed: N\u00b7SIF = 2, the "
                "COMPASS-ABS bound under WCC</text>\n",
                left, left + plot_width, y_of(2), panel.top - 8);
        }
        // COMPASS is drawn last, on top of the baselines it is compared with.
        std::vector<std::size_t> order(reduced.size());
        std::iota(order.begin(), order.end(), std::size_t{0});
        std::stable_partition(order.begin(), order.end(),
                              [&](std::size_t k) { return report.results[k].policy != "compass"; });
        for (const std::size_t k : order) {
            const Columns& col = reduced[k];
            if (col.covered == 0) continue;
            const auto& values = p == 0 ? col.n_sif : col.utilisation;
            const double column_hours = hours / columns;
            std::string path = fmt::format("M{:.1f},{:.1f}", x_of(0), y_of(values[0]));
            for (std::size_t i = 0; i < col.covered; ++i) {
                path +=
                    fmt::format(" V{:.1f} H{:.1f}", y_of(values[i]), x_of(column_hours * static_cast<double>(i + 1)));
            }
            const bool compass = report.results[k].policy == "compass";
            svg += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"/>\n", path,
                               colour_of(report.results[k].policy), compass ? 2.0 : 1.2);
        }
        svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n", left,
                           panel.top, plot_width, panel.height);
    }
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">time (hours)</text>\n", left + plot_width / 2,
                       panels[1].top + panels[1].height + 34);
    for (std::size_t k = 0; k < report.results.size(); ++k) {
        const double x = left + 220.0 * static_cast<double>(k % 4);
        const double y = legend_top + 20.0 * std::floor(static_cast<double>(k) / 4.0);
        svg += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"{3}\" stroke-width=\"3\"/>"
                           "<text x=\"{4}\" y=\"{5}\">{6}</text>\n",
                           x, x + 24, y, colour_of(report.results[k].policy), x + 30, y + 4,
                           xml_escape(report.results[k].policy));
    }
    svg += "</svg>\n";
    return svg;
}

}  // namespace gpuops::placement
