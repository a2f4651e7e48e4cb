// VarioPath step search by packing: node-level rail permutations, then a greedy max-weight channel of GPU flows.
#include "gpuops/alltoall/packing.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"

namespace gpuops::alltoall {
namespace {

constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
/// Durations tried per step, geometrically spaced from the longest drain time down to 1/10⁴ of it.
constexpr int duration_grid = 12;
/// A step runs for the longest of its flows' drain times that scores within this of the best: 5 % halves the
/// steps on the bench (fewer slivers left for steps of their own) at no cost in efficiency.
constexpr double drain_tolerance = 0.05;
/// The grid stops after this many durations in a row score below the best so far.
constexpr int patience = 2;

/// A flow the step may take: a GPU pair, up to three segments, and what it is worth at this step.
struct Candidate {
    std::uint32_t src = 0;
    std::uint32_t dst = 0;
    std::array<std::uint32_t, 3> segments{};
    std::uint32_t count = 0;  ///< segments in use
    std::uint32_t ref = 0;    ///< fixed flow index, or the rails: from · rails + to
    double drain = 0;         ///< seconds to send the pair's residual on this path
    double value = 0;         ///< weighted bytes per second
};

}  // namespace

std::uint32_t PackingPlanner::add_segment(const std::vector<topo::EdgeId>& edges) {
    Segment s;
    s.begin = static_cast<std::uint32_t>(edges_.size());
    s.rate = std::numeric_limits<double>::infinity();
    for (auto e : edges) {
        edges_.push_back(e);
        s.rate = std::min(s.rate, capacity_[e]);
    }
    s.end = static_cast<std::uint32_t>(edges_.size());
    segments_.push_back(s);
    return static_cast<std::uint32_t>(segments_.size() - 1);
}

PackingPlanner::PackingPlanner(const Catalog& catalog, const topo::Router& router) : router_(&router) {
    const auto& t = router.topology();
    if (catalog.fingerprint() != topology_fingerprint(t)) {
        throw DataError("the catalog was built for another topology");
    }
    gpus_ = t.devices_of(topo::DeviceKind::gpu);
    const std::size_t n = gpus_.size();
    std::vector<std::uint32_t> index_of(t.devices.size(), none);
    for (std::size_t i = 0; i < n; ++i)
        index_of[gpus_[i]] = static_cast<std::uint32_t>(i);
    for (topo::EdgeId e = 0; e < t.edge_count(); ++e)
        capacity_.push_back(t.edge(e).bandwidth);

    const auto& domains = catalog.domains();
    part_of_.assign(n, none);
    part_gpus_.resize(domains.size());
    for (std::size_t d = 0; d < domains.size(); ++d)
        for (auto g : domains[d].global)
            if (g < index_of.size() && index_of[g] != none) {
                part_of_[index_of[g]] = static_cast<std::uint32_t>(d);
                part_gpus_[d].push_back(index_of[g]);
            }
    for (std::size_t i = 0; i < n; ++i)
        if (part_of_[i] == none) throw InternalError(fmt::format("packing: {} is in no part", t.label(gpus_[i])));

    // Fixed flows: each part's GPU-to-GPU flows with their alternative paths; across parts joined by a fixed
    // interconnect (socket-links), every path the router offers.
    std::vector<std::vector<Fixed>> by_pair(n * n);
    for (const auto& d : domains) {
        const DomainClass& c = catalog.classes()[d.domain_class];
        for (const auto& f : c.space->flows()) {
            const auto gs = d.global[f.src];
            const auto gd = d.global[f.dst];
            if (index_of[gs] == none || index_of[gd] == none) continue;  // to or from a port
            std::vector<topo::DeviceId> via;
            for (auto v : f.via)
                via.push_back(d.global[v]);
            auto path = router.path_through(f.kind, gs, gd, via);
            by_pair[index_of[gs] * n + index_of[gd]].push_back(Fixed{0, std::move(path)});
        }
    }
    const bool rail_aligned = catalog.pattern() && catalog.pattern()->kind == "rail-aligned";
    if (!rail_aligned && domains.size() > 1) {
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n; ++j)
                if (part_of_[i] != part_of_[j])
                    for (auto& path : router.alternatives(gpus_[i], gpus_[j]))
                        by_pair[i * n + j].push_back(Fixed{0, std::move(path)});
    }
    fixed_start_.push_back(0);
    for (std::size_t p = 0; p < n * n; ++p) {
        for (auto& f : by_pair[p]) {
            f.segment = add_segment(f.path.edges);
            fixed_.push_back(std::move(f));
        }
        fixed_start_.push_back(static_cast<std::uint32_t>(fixed_.size()));
        if (!by_pair[p].empty()) fixed_pairs_.push_back(static_cast<std::uint32_t>(p));
    }

    if (rail_aligned) {
        rails_ = catalog.pattern()->rails;
        const std::size_t parts = domains.size();
        rail_nic_.resize(parts);
        for (std::size_t d = 0; d < parts; ++d) {
            const auto& g = domains[d].global;
            for (auto l : domains[d].port_links) {
                const auto& link = t.links[l];
                rail_nic_[d].push_back(std::find(g.begin(), g.end(), link.a) != g.end() ? link.a : link.b);
            }
            if (rail_nic_[d].size() != rails_) throw InternalError("packing: a node without a port per rail");
        }
        up_segment_.resize(n * rails_);
        down_segment_.resize(n * rails_);
        nearest_rail_.assign(n, none);
        for (std::size_t i = 0; i < n; ++i) {
            const auto nearest = router.nearest_nic(gpus_[i]);
            for (std::size_t r = 0; r < rails_; ++r) {
                const auto nic = rail_nic_[part_of_[i]][r];
                up_segment_[i * rails_ + r] = add_segment(router.route(gpus_[i], nic).edges);
                down_segment_[i * rails_ + r] = add_segment(router.route(nic, gpus_[i]).edges);
                if (nearest && *nearest == nic) nearest_rail_[i] = static_cast<std::uint32_t>(r);
            }
        }
        // Between the NICs of two nodes: rail to rail, and rail to another rail where the fabric joins rails (a
        // spine); rail-only fabrics have no such path.
        fabric_segment_.assign(parts * parts * rails_ * rails_, none);
        for (std::size_t a = 0; a < parts; ++a)
            for (std::size_t b = 0; b < parts; ++b)
                if (a != b)
                    for (std::size_t r = 0; r < rails_; ++r)
                        for (std::size_t q = 0; q < rails_; ++q) {
                            const std::array<topo::DeviceId, 2> nics{rail_nic_[a][r], rail_nic_[b][q]};
                            try {
                                fabric_segment_[((a * parts + b) * rails_ + r) * rails_ + q] = add_segment(
                                    router.path_through(topo::PathKind::direct, nics[0], nics[1], nics).edges);
                            } catch (const DataError&) {
                                if (r == q) throw;
                                cross_rail_ = false;
                            }
                        }
    }

    default_start_.push_back(0);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            if (i != j) {
                const auto path = router.route(gpus_[i], gpus_[j]);
                default_edges_.insert(default_edges_.end(), path.edges.begin(), path.edges.end());
            }
            default_start_.push_back(static_cast<std::uint32_t>(default_edges_.size()));
        }
}

topo::Path PackingPlanner::rail_path(std::size_t i, std::size_t j, std::size_t from_rail, std::size_t to_rail) const {
    const auto& t = router_->topology();
    const auto a = part_of_[i];
    const auto b = part_of_[j];
    topo::Path p;
    p.kind = nearest_rail_[i] == from_rail ? topo::PathKind::direct : topo::PathKind::alternate_nic;
    p.src = gpus_[i];
    p.dst = gpus_[j];
    p.nics = {rail_nic_[a][from_rail], rail_nic_[b][to_rail]};
    p.via = p.nics;
    p.bottleneck = std::numeric_limits<double>::infinity();
    for (auto s :
         {up_segment_[i * rails_ + from_rail], fabric(a, b, from_rail, to_rail), down_segment_[j * rails_ + to_rail]}) {
        const auto& seg = segments_[s];
        p.edges.insert(p.edges.end(), edges_.begin() + seg.begin, edges_.begin() + seg.end);
        p.bottleneck = std::min(p.bottleneck, seg.rate);
        for (auto x = seg.begin; x < seg.end; ++x)
            p.latency_us += t.edge(edges_[x]).latency_us;
    }
    return p;
}

Plan PackingPlanner::plan(const Demand& demand, const ModelParams& model) const {
    const std::size_t n = gpus_.size();
    if (demand.size() != n)
        throw DataError(
            fmt::format("the demand is {}x{}, the catalog's topology has {} GPUs", demand.size(), demand.size(), n));
    Plan plan;
    plan.algorithm = "variopath";
    plan.exclusive = true;
    const std::size_t parts = part_gpus_.size();
    const std::size_t edges = capacity_.size();
    std::vector<std::uint64_t> residual(n * n, 0);
    std::vector<std::uint64_t> sent(n * n, 0);
    std::vector<double> node_residual(parts * parts, 0);  // bytes between parts (rail-aligned clusters)
    std::vector<double> load(edges, 0);                   // residual bytes on default paths / capacity: seconds
    std::uint64_t left = 0;
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            if (i == j || demand.at(i, j) == 0) continue;
            const std::size_t p = i * n + j;
            residual[p] = demand.at(i, j);
            left += residual[p];
            node_residual[part_of_[i] * parts + part_of_[j]] += static_cast<double>(residual[p]);
            for (auto x = default_start_[p]; x < default_start_[p + 1]; ++x)
                load[default_edges_[x]] += static_cast<double>(residual[p]) / capacity_[default_edges_[x]];
        }
    const double alpha = model.alpha_us * 1e-6;

    std::vector<Candidate> cands;
    std::vector<std::uint32_t> by_value;   // candidates by value, descending: their worth when not drained
    std::vector<std::uint32_t> by_weight;  // by weighted residual (drain · value), descending: when drained
    std::vector<std::uint32_t> accepted;
    std::vector<std::uint32_t> best;
    std::vector<std::uint32_t> edge_stamp(edges, 0);
    std::vector<std::uint32_t> send_stamp(n, 0);
    std::vector<std::uint32_t> recv_stamp(n, 0);
    std::uint32_t epoch = 0;
    std::vector<double> durations;
    std::vector<std::pair<double, std::uint32_t>> keyed;
    std::size_t most = n;  // flows a channel of this step can hold at most
    const double grid_ratio = std::pow(1e-4, 1.0 / (duration_grid - 1));
    std::vector<std::uint32_t> peer(rails_ * parts, none);  // per rail, per part: the part it sends to
    std::vector<double> node_weight(parts * parts);
    std::vector<std::uint32_t> node_order;
    std::vector<char> row_used(parts);
    std::vector<char> col_used(parts);

    // Packs the candidates heaviest first at duration tau.
    const auto pack = [&](double tau, std::vector<std::uint32_t>& out) {
        out.clear();
        ++epoch;
        std::size_t a = 0;
        std::size_t b = 0;
        const std::size_t count = cands.size();
        while (out.size() < most) {
            while (a < count && cands[by_value[a]].drain < tau)
                ++a;
            while (b < count && cands[by_weight[b]].drain >= tau)
                ++b;
            if (a == count && b == count) break;
            const double wa = a < count ? tau * cands[by_value[a]].value : -1;
            const double wb = b < count ? cands[by_weight[b]].drain * cands[by_weight[b]].value : -1;
            const std::uint32_t k = wa >= wb ? by_value[a++] : by_weight[b++];
            const Candidate& c = cands[k];
            if (send_stamp[c.src] == epoch || recv_stamp[c.dst] == epoch) continue;
            bool free = true;
            for (std::uint32_t s = 0; s < c.count && free; ++s)
                for (auto x = segments_[c.segments[s]].begin; x < segments_[c.segments[s]].end; ++x)
                    if (edge_stamp[edges_[x]] == epoch) {
                        free = false;
                        break;
                    }
            if (!free) continue;
            for (std::uint32_t s = 0; s < c.count; ++s)
                for (auto x = segments_[c.segments[s]].begin; x < segments_[c.segments[s]].end; ++x)
                    edge_stamp[edges_[x]] = epoch;
            send_stamp[c.src] = epoch;
            recv_stamp[c.dst] = epoch;
            out.push_back(k);
        }
    };

    // A channel's served weight over (alpha + tau) peaks at one of its flows' drain times: the best of them.
    std::vector<std::pair<double, double>> drains;  // (drain, value)
    std::vector<double> scores;
    const auto best_duration = [&](const std::vector<std::uint32_t>& set, double& tau) {
        drains.clear();
        double rest = 0;  // value of the flows still sending at the duration looked at
        for (auto k : set) {
            drains.emplace_back(cands[k].drain, cands[k].value);
            rest += cands[k].value;
        }
        std::sort(drains.begin(), drains.end());
        scores.clear();
        double done = 0;  // weighted bytes of the flows drained before it
        double best_score = -1;
        for (const auto& [d, v] : drains) {
            scores.push_back((done + d * rest) / (alpha + d));
            best_score = std::max(best_score, scores.back());
            done += d * v;
            rest -= v;
        }
        // The longest duration that scores within `drain_tolerance` of the best: a flow a little slower than
        // the rest then drains in this step instead of leaving a sliver for a step of its own later.
        for (std::size_t k = drains.size(); k-- > 0;)
            if (scores[k] >= best_score * (1 - drain_tolerance)) {
                tau = drains[k].first;
                return scores[k];
            }
        return best_score;
    };

    std::vector<double> pair_load(n * n, 0);
    std::vector<std::uint32_t> pair_stamp(n * n, 0);
    std::uint32_t step_number = 0;
    while (left > 0) {
        ++step_number;
        // Weights: a byte counts by how loaded the most loaded edge of its pair's default path is, against the
        // most loaded edge of all.
        double top = 0;
        for (double l : load)
            top = std::max(top, l);

        // Node level: per rail, a matching of the parts, heaviest residual first; a pair already joined on a rail
        // of this step counts half on the next.
        if (rails_ > 0) {
            node_weight = node_residual;
            for (std::size_t r = 0; r < rails_; ++r) {
                node_order.clear();
                for (std::size_t x = 0; x < parts * parts; ++x)
                    if (node_weight[x] > 0 && x / parts != x % parts)
                        node_order.push_back(static_cast<std::uint32_t>(x));
                std::sort(node_order.begin(), node_order.end(), [&](auto x, auto y) {
                    return node_weight[x] > node_weight[y] || (node_weight[x] == node_weight[y] && x < y);
                });
                std::fill(row_used.begin(), row_used.end(), 0);
                std::fill(col_used.begin(), col_used.end(), 0);
                std::fill(peer.begin() + static_cast<std::ptrdiff_t>(r * parts),
                          peer.begin() + static_cast<std::ptrdiff_t>((r + 1) * parts), none);
                for (auto x : node_order) {
                    const std::size_t s = x / parts;
                    const std::size_t d = x % parts;
                    if (row_used[s] || col_used[d]) continue;
                    row_used[s] = col_used[d] = 1;
                    peer[r * parts + s] = static_cast<std::uint32_t>(d);
                    node_weight[x] *= 0.5;
                }
            }
        }

        // GPU level: the candidates of this step.
        cands.clear();
        const auto add = [&](std::uint32_t i, std::uint32_t j, std::array<std::uint32_t, 3> segs, std::uint32_t count,
                             std::uint32_t ref) {
            Candidate c{i, j, segs, count, ref, 0, 0};
            double rate = std::numeric_limits<double>::infinity();
            for (std::uint32_t s = 0; s < count; ++s)
                rate = std::min(rate, segments_[segs[s]].rate);
            // The pair's weight, whatever path this flow takes: a detour through a loaded edge must not make
            // a byte worth more, it only spends that edge.
            const std::size_t p = i * n + j;
            if (pair_stamp[p] != step_number) {
                pair_stamp[p] = step_number;
                double m = 0;
                for (auto x = default_start_[p]; x < default_start_[p + 1]; ++x)
                    m = std::max(m, load[default_edges_[x]]);
                pair_load[p] = m;
            }
            const double w = pair_load[p];
            c.drain = static_cast<double>(residual[i * n + j]) / rate;
            c.value = rate * (top > 0 ? std::max(w / top, 1e-3) : 1.0);
            cands.push_back(c);
        };
        // The parts' own flows, per pair.
        for (auto p : fixed_pairs_) {
            if (residual[p] == 0) continue;
            for (auto k = fixed_start_[p]; k < fixed_start_[p + 1]; ++k)
                add(static_cast<std::uint32_t>(p / n), static_cast<std::uint32_t>(p % n), {fixed_[k].segment, 0, 0}, 1,
                    k);
        }
        // Flows between nodes, per node pair a rail joins: through that rail, and across rails through the spine
        // from the source's nearest NIC to the destination's (no socket interconnect crossed).
        for (std::size_t a = 0; a < parts && rails_ > 0; ++a)
            for (std::size_t r = 0; r < rails_; ++r) {
                const auto b = peer[r * parts + a];
                if (b == none) continue;
                const auto via = fabric(a, b, r, r);
                const auto ref = static_cast<std::uint32_t>(r * rails_ + r);
                for (auto i : part_gpus_[a])
                    for (auto j : part_gpus_[b])
                        if (residual[i * n + j] > 0)
                            add(i, j, {up_segment_[i * rails_ + r], via, down_segment_[j * rails_ + r]}, 3, ref);
                bool seen = !cross_rail_;  // each peer node once
                for (std::size_t q = 0; q < r && !seen; ++q)
                    seen = peer[q * parts + a] == b;
                if (seen) continue;
                for (auto i : part_gpus_[a]) {
                    const auto from = nearest_rail_[i];
                    if (from == none) continue;
                    for (auto j : part_gpus_[b]) {
                        const auto to = nearest_rail_[j];
                        if (to == none || to == from || residual[i * n + j] == 0) continue;
                        add(i, j,
                            {up_segment_[i * rails_ + from], fabric(a, b, from, to), down_segment_[j * rails_ + to]}, 3,
                            static_cast<std::uint32_t>(from * rails_ + to));
                    }
                }
            }
        if (cands.empty()) throw InternalError("variopath: bytes left but no flow can carry them");

        // Both orders by sorting (key, index) pairs: contiguous keys sort several times faster than indexes
        // compared through the candidates. Ties go to the lower index, so plans are deterministic.
        keyed.resize(cands.size());
        double longest = 0;
        for (std::uint32_t k = 0; k < cands.size(); ++k) {
            keyed[k] = {-cands[k].value, k};
            longest = std::max(longest, cands[k].drain);
        }
        std::sort(keyed.begin(), keyed.end());
        by_value.resize(cands.size());
        for (std::size_t k = 0; k < keyed.size(); ++k)
            by_value[k] = keyed[k].second;
        for (std::uint32_t k = 0; k < cands.size(); ++k)
            keyed[k] = {-cands[k].drain * cands[k].value, k};
        std::sort(keyed.begin(), keyed.end());
        by_weight.resize(cands.size());
        for (std::size_t k = 0; k < keyed.size(); ++k)
            by_weight[k] = keyed[k].second;
        // A channel can hold no more flows than there are distinct sources, or distinct destinations.
        ++epoch;
        std::size_t sources = 0;
        std::size_t destinations = 0;
        for (const auto& c : cands) {
            if (send_stamp[c.src] != epoch) ++sources;
            if (recv_stamp[c.dst] != epoch) ++destinations;
            send_stamp[c.src] = recv_stamp[c.dst] = epoch;
        }
        most = std::min(sources, destinations);

        // Durations to try: a geometric grid from the longest drain time down to 1/10^4 of it. Each packing is
        // scored at its own best duration, one of its flows' drain times.
        durations.assign(1, longest);
        for (int g = 1; g < duration_grid; ++g)
            durations.push_back(durations.back() * grid_ratio);
        double best_score = -1;
        double step_tau = 0;
        int worse = 0;  // grid points in a row below the best so far
        for (double tau : durations) {
            pack(tau, accepted);
            double exact_tau = 0;
            const double score = best_duration(accepted, exact_tau);
            if (score > best_score) {
                best_score = score;
                step_tau = exact_tau;
                best.swap(accepted);
                worse = 0;
            } else if (++worse == patience) {
                break;  // past the peak: shorter steps only pay alpha more often
            }
        }

        std::sort(best.begin(), best.end(), [&](auto x, auto y) {
            return std::pair{cands[x].src, cands[x].dst} < std::pair{cands[y].src, cands[y].dst};
        });
        Step step;
        for (auto k : best) {
            const Candidate& c = cands[k];
            const std::size_t p = c.src * n + c.dst;
            const auto path =
                c.count == 1 ? fixed_[c.ref].path : rail_path(c.src, c.dst, c.ref / rails_, c.ref % rails_);
            const double can = step_tau * path.bottleneck;
            const std::uint64_t bytes = can >= static_cast<double>(residual[p]) * (1 - 1e-12)
                                            ? residual[p]
                                            : std::min(residual[p], static_cast<std::uint64_t>(can));
            if (bytes == 0) continue;
            step.transfers.push_back(
                make_transfer(demand, c.src, c.dst, path, chunk_offset(demand, c.src, c.dst) + sent[p], bytes));
            sent[p] += bytes;
            residual[p] -= bytes;
            left -= bytes;
            node_residual[part_of_[c.src] * parts + part_of_[c.dst]] -= static_cast<double>(bytes);
            for (auto x = default_start_[p]; x < default_start_[p + 1]; ++x) {
                load[default_edges_[x]] -= static_cast<double>(bytes) / capacity_[default_edges_[x]];
            }
        }
        if (step.transfers.empty()) throw InternalError("variopath: a step that serves nothing");
        plan.steps.push_back(std::move(step));
    }
    return plan;
}

}  // namespace gpuops::alltoall
