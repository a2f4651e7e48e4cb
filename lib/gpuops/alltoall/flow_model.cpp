// The flow model: water-filling over the edges flows use, an event loop over finishing flows, the model file.
#include "gpuops/alltoall/flow_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <queue>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"

namespace gpuops::alltoall {

using json_io::Json;
using json_io::View;

double ModelParams::efficiency(std::size_t k) const {
    if (eta.empty() || k == 0) return 1;
    return k <= eta.size() ? eta[k - 1] : eta.back();
}

namespace {

constexpr double us_per_s = 1e6;
/// Ends closer than this (relative) are one event even with an exact window: rounding must not split flows
/// that finish together in exact arithmetic into one rate recomputation each.
constexpr double same_end = 1e-12;
/// A heap entry whose edge's share has since grown by more than this (relative) is re-queued.
constexpr double stale = 1e-12;
constexpr auto none = std::numeric_limits<std::uint32_t>::max();

/// The flows of a phase over the edges they use, indexed densely (a dense edge per edge some flow crosses),
/// and their max-min fair rates. Only moving flows (flows still sending data) take part.
class Sharing {
public:
    Sharing(const topo::Topology& topology, std::span<const ModelFlow> flows, std::vector<char> moving,
            const ModelParams& params)
        : params_(params), moving_(std::move(moving)), frozen_(flows.size(), 0), rate_(flows.size(), 0) {
        std::vector<std::uint32_t> dense(topology.edge_count(), none);
        path_begin_.reserve(flows.size() + 1);
        path_begin_.push_back(0);
        for (std::size_t f = 0; f < flows.size(); ++f) {
            if (moving_[f] != 0) {
                for (topo::EdgeId e : flows[f].edges)
                    path_.push_back(dense_edge(topology, dense, e, f));
            }
            path_begin_.push_back(static_cast<std::uint32_t>(path_.size()));
        }
        // Edge -> flows, one entry per crossing (a path that crossed an edge twice would load it twice).
        const std::size_t edges = bandwidth_.size();
        count_.assign(edges, 0);
        for (std::uint32_t e : path_)
            ++count_[e];
        users_begin_.assign(edges + 1, 0);
        for (std::size_t e = 0; e < edges; ++e)
            users_begin_[e + 1] = users_begin_[e] + count_[e];
        users_end_.assign(users_begin_.begin(), users_begin_.end() - 1);
        users_.resize(path_.size());
        for (std::size_t f = 0; f < flows.size(); ++f) {
            for (std::uint32_t k = path_begin_[f]; k < path_begin_[f + 1]; ++k)
                users_[users_end_[path_[k]]++] = static_cast<std::uint32_t>(f);
        }
        state_.resize(edges);
    }

    /// Max-min fair rates of the moving flows by water-filling: saturate the edge with the smallest fair
    /// share, freeze its flows at that share, take their rates off their other edges, repeat. O(C log E) for
    /// C crossings of moving flows over E used edges.
    void fill() {
        ++stamp_;
        for (std::uint32_t e = 0; e < bandwidth_.size(); ++e) {
            EdgeState& state = state_[e];
            state.unfrozen = count_[e];
            if (count_[e] == 0) continue;
            state.residual = bandwidth_[e] * params_.efficiency(count_[e]);
            heap_.push({state.residual / count_[e], e});
        }
        while (!heap_.empty()) {
            const Entry top = heap_.top();
            heap_.pop();
            const std::uint32_t e = top.edge;
            const EdgeState& state = state_[e];
            if (state.unfrozen == 0) continue;
            // Shares only grow as flows freeze elsewhere: an entry below the current share is stale.
            const double share = state.residual / state.unfrozen;
            if (share > top.share * (1 + stale)) {
                heap_.push({share, e});
                continue;
            }
            const double level = std::max(share, 0.0);
            // Freeze the flows still free on e; drop the ones that stopped from its list on the way.
            std::uint32_t keep = users_begin_[e];
            for (std::uint32_t k = users_begin_[e]; k < users_end_[e]; ++k) {
                const std::uint32_t f = users_[k];
                if (moving_[f] == 0) continue;
                users_[keep++] = f;
                if (frozen_[f] != stamp_) freeze(f, level);
            }
            users_end_[e] = keep;
        }
    }

    /// Flow f has delivered its data: it no longer counts on its edges.
    void stop(std::uint32_t f) {
        moving_[f] = 0;
        for (std::uint32_t k = path_begin_[f]; k < path_begin_[f + 1]; ++k)
            --count_[path_[k]];
    }

    [[nodiscard]] double rate(std::size_t f) const { return rate_[f]; }

private:
    struct Entry {
        double share;
        std::uint32_t edge;
        bool operator>(const Entry& o) const { return share > o.share || (share == o.share && edge > o.edge); }
    };
    /// What a water-filling keeps per dense edge, together, since freezing a flow updates both.
    struct EdgeState {
        double residual = 0;         ///< capacity not yet given to frozen flows
        std::uint32_t unfrozen = 0;  ///< crossings by flows not yet frozen
    };

    std::uint32_t dense_edge(const topo::Topology& topology, std::vector<std::uint32_t>& dense, topo::EdgeId e,
                             std::size_t flow) {
        if (e >= dense.size())
            throw InternalError(fmt::format("flow {} names edge {}, but the topology has {}", flow, e, dense.size()));
        if (dense[e] == none) {
            const topo::Edge edge = topology.edge(e);
            if (!(edge.bandwidth > 0) || !std::isfinite(edge.bandwidth)) {
                throw DataError(fmt::format("the edge {} has no usable bandwidth ({} bytes/s)",
                                            quote(topology.label(edge.from) + "->" + topology.label(edge.to)),
                                            edge.bandwidth));
            }
            dense[e] = static_cast<std::uint32_t>(bandwidth_.size());
            bandwidth_.push_back(edge.bandwidth);
        }
        return dense[e];
    }

    void freeze(std::uint32_t f, double level) {
        rate_[f] = level;
        frozen_[f] = stamp_;
        for (std::uint32_t k = path_begin_[f]; k < path_begin_[f + 1]; ++k) {
            EdgeState& state = state_[path_[k]];
            state.residual -= level;
            --state.unfrozen;
        }
    }

    const ModelParams& params_;
    std::vector<char> moving_;
    std::vector<double> bandwidth_;                               ///< per dense edge, bytes/s
    std::vector<std::uint32_t> path_begin_;                       ///< flow -> its range in path_
    std::vector<std::uint32_t> path_;                             ///< dense edges of each flow
    std::vector<std::uint32_t> users_begin_, users_end_, users_;  ///< dense edge -> flows crossing it
    std::vector<std::uint32_t> count_;   ///< per dense edge: crossings by moving flows (what η depends on)
    std::vector<EdgeState> state_;       ///< per dense edge
    std::vector<std::uint32_t> frozen_;  ///< per flow: the stamp of the fill that froze it
    std::uint32_t stamp_ = 0;
    std::vector<double> rate_;  ///< per flow, bytes/s
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
};

void check_bytes(std::span<const ModelFlow> flows) {
    for (std::size_t f = 0; f < flows.size(); ++f) {
        if (!(flows[f].bytes >= 0) || !std::isfinite(flows[f].bytes))
            throw InternalError(fmt::format("flow {} has an invalid byte count {}", f, flows[f].bytes));
    }
}

}  // namespace

std::vector<double> max_min_rates(const topo::Topology& topology, std::span<const ModelFlow> flows,
                                  const ModelParams& params) {
    std::vector<char> moving(flows.size(), 0);
    for (std::size_t f = 0; f < flows.size(); ++f)
        moving[f] = flows[f].edges.empty() ? 0 : 1;
    Sharing sharing(topology, flows, moving, params);
    sharing.fill();
    std::vector<double> rates(flows.size(), std::numeric_limits<double>::infinity());
    for (std::size_t f = 0; f < flows.size(); ++f)
        if (moving[f] != 0) rates[f] = sharing.rate(f);
    return rates;
}

PhaseResult simulate_phase(const topo::Topology& topology, std::span<const ModelFlow> flows, const ModelParams& params,
                           double event_window) {
    check_bytes(flows);
    if (!(event_window >= 0)) throw InternalError(fmt::format("invalid event window {}", event_window));
    const double window = std::max(event_window, same_end);
    PhaseResult result;
    result.finish_us.assign(flows.size(), 0);
    std::vector<char> moving(flows.size(), 0);
    std::vector<std::uint32_t> active;
    std::vector<double> left(flows.size(), 0);  // bytes still to send
    for (std::size_t f = 0; f < flows.size(); ++f) {
        result.finish_us[f] = params.latency_scale * flows[f].latency_us;
        if (flows[f].bytes > 0 && !flows[f].edges.empty()) {
            moving[f] = 1;
            left[f] = flows[f].bytes;
            active.push_back(static_cast<std::uint32_t>(f));
        }
    }
    Sharing sharing(topology, flows, std::move(moving), params);
    double now = 0;  // seconds since the phase start
    while (!active.empty()) {
        sharing.fill();
        double first = std::numeric_limits<double>::infinity();  // seconds to the earliest end
        for (std::uint32_t f : active)
            first = std::min(first, left[f] / sharing.rate(f));
        if (!std::isfinite(first)) throw InternalError("the flow model left flows without bandwidth");
        // Every flow whose data ends by `until` ends in this event, at its own time at the current rates. The
        // others move on to the rate-weighted mean of those ends, when the capacity the group frees is
        // released on average: to first order that cancels the error of releasing it all at one instant.
        const double until = (now + first) * (1 + window);
        double freed = 0;
        double freed_at = 0;
        std::size_t keep = 0;
        for (std::uint32_t f : active) {
            const double rate = sharing.rate(f);
            const double end = left[f] / rate;
            if (now + end <= until) {
                result.finish_us[f] += (now + end) * us_per_s;
                sharing.stop(f);
                freed += rate;
                freed_at += rate * end;
            } else {
                active[keep++] = f;
            }
        }
        active.resize(keep);
        const double step = std::max(first, freed_at / freed);
        for (std::uint32_t f : active)
            left[f] -= sharing.rate(f) * step;
        now += step;
    }
    for (double t : result.finish_us)
        result.time_us = std::max(result.time_us, t);
    return result;
}

// ---- the model file --------------------------------------------------------------------------------------

namespace {

/// η(k) = k^(-1/3) to 4 digits for k = 1..64; the last value, 0.25, holds beyond.
constexpr std::size_t eta_table_size = 64;
constexpr double eta_exponent = -1.0 / 3.0;
constexpr double eta_digits = 1e4;

}  // namespace

ModelParams default_model() {
    ModelParams p;
    p.alpha_us = 10;
    p.eta.reserve(eta_table_size);
    for (std::size_t k = 1; k <= eta_table_size; ++k)
        p.eta.push_back(std::round(std::pow(static_cast<double>(k), eta_exponent) * eta_digits) / eta_digits);
    p.latency_scale = 1;
    p.sources = {
        {"alpha_us",
         "default: 10 us [ours]: a kernel or copy-engine launch (~5 us) plus a flag barrier between GPUs over "
         "PCIe (a few peer-to-peer round trips at 0.36-0.45 us, research/variopath.md 5.2); the middle of the "
         "5-20 us expected per step on PCIe (research/variopath.md 9.2). Measure with vp-bench --calibrate"},
        {"eta", "default: eta(k) = k^(-1/3) to 4 digits for k = 1..64 flows, 0.25 beyond [ours]. Anchor: eta(8) = 0.5, "
                "the middle of the p2pmark dense interconnect score 0.38-0.64 of switch and single-socket 8-GPU boxes, "
                "where each GPU link carries 7-8 concurrent flows and fair sharing alone predicts about 1 (voipmonitor/"
                "rtx6kpro pcie-bandwidth.md via research/variopath.md 1.2). The cube root falls to 0.79 at 2, 0.31 at "
                "32 and 0.25 from 64 flows. Check: an all-peers exchange in this model scores 0.48 on the "
                "pcie-10gpu-1switch preset (measured 0.38-0.64) and 0.15 on the dual-socket pcie-8gpu-gen4 (measured "
                "0.11 on a dual-socket box under 56 flows). Measure with vp-bench --calibrate"},
        {"latency_scale",
         "default: 1, path latencies as the topology states them (link defaults 0.2 us per PCIe hop, 1 us per "
         "network hop; peer-to-peer measured 0.36-0.45 us, research/variopath.md 5.2)"},
    };
    return p;
}

ModelParams read_model(const Json& doc, std::string_view source_name) {
    try {
        json_io::check_header(doc, model_schema, model_schema_version);
        const View root(doc);
        ModelParams p;
        const View alpha = root.at("alpha_us");
        p.alpha_us = alpha.as_number();
        if (p.alpha_us < 0) throw alpha.error(fmt::format("expected a non-negative alpha_us, got {}", p.alpha_us));
        const View eta = root.at("eta");
        const auto values = eta.items();
        if (values.empty()) throw eta.error("expected at least one efficiency (1, for a lone flow)");
        for (const View& v : values) {
            const double x = v.as_number();
            if (!(x > 0 && x <= 1)) throw v.error(fmt::format("expected an efficiency in (0, 1], got {}", x));
            if (p.eta.empty() && x != 1) {
                throw v.error(fmt::format("expected 1 for a lone flow, got {} (a slower single flow is a "
                                          "bandwidth: calibrate the links instead)",
                                          x));
            }
            if (!p.eta.empty() && x > p.eta.back()) {
                throw v.error(fmt::format("expected a non-increasing efficiency, got {} after {}", x, p.eta.back()));
            }
            p.eta.push_back(x);
        }
        if (const auto scale = root.find("latency_scale")) {
            p.latency_scale = scale->as_number();
            if (p.latency_scale < 0)
                throw scale->error(fmt::format("expected a non-negative latency_scale, got {}", p.latency_scale));
        }
        if (const auto sources = root.find("sources")) {
            if (!sources->json().is_object())
                throw sources->error(fmt::format("expected an object, got {}", json_io::type_name(sources->json())));
            for (const auto& item : sources->json().items())
                p.sources[item.key()] = sources->at(item.key()).as_string();
        }
        for (const char* name : {"alpha_us", "eta", "latency_scale"})
            p.sources.try_emplace(name, fmt::format("model file {}", quote(source_name)));
        return p;
    } catch (const DataError& e) {
        if (e.where().file.empty()) throw e.in_file(std::string(source_name));
        throw;
    }
}

Json to_json(const ModelParams& params) {
    Json doc = json_io::make_header(model_schema, model_schema_version, "vp-plan");
    doc["alpha_us"] = params.alpha_us;
    doc["eta"] = params.eta;
    doc["latency_scale"] = params.latency_scale;
    Json sources = Json::object();
    for (const auto& [name, text] : params.sources)
        sources[name] = text;
    doc["sources"] = std::move(sources);
    return doc;
}

// ---- phases and steps -------------------------------------------------------------------------------------

double simulate_steps(const topo::Topology& topology, std::span<const std::vector<ModelFlow>> steps,
                      const ModelParams& params, double event_window) {
    double total = 0;
    for (const auto& step : steps)
        total += params.alpha_us + simulate_phase(topology, step, params, event_window).time_us;
    return total;
}

}  // namespace gpuops::alltoall
