// FAST as a plan of relayed hops: balance inside servers, server-level BvN scale-out on the rails, restore
// pipelined one step behind it.
#include "gpuops/alltoall/fast.hpp"

#include <algorithm>
#include <cstddef>
#include <tuple>

#include <fmt/format.h>

#include "gpuops/alltoall/bvn.hpp"
#include "gpuops/core/error.hpp"

namespace gpuops::alltoall {
namespace {

/// Bytes [offset, offset + bytes) of `origin`'s send buffer, all bound for GPU `target` (part of one chunk).
struct Piece {
    std::size_t origin = 0;
    std::size_t target = 0;
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;
};

/// One hop of bytes of `origin`'s send buffer, from GPU `src` to GPU `dst`.
struct Hop {
    std::size_t src = 0;
    std::size_t dst = 0;
    std::size_t origin = 0;
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;
};

/// The topology's nodes that hold GPUs: FAST's servers.
struct Servers {
    std::vector<std::vector<std::size_t>> gpus;  ///< per server: its GPU indexes, in demand order
    std::size_t per_server = 0;                  ///< g
};

Servers group_servers(const Demand& demand, const topo::Topology& t) {
    std::vector<std::vector<std::size_t>> by_node(t.nodes.size());
    for (std::size_t i = 0; i < demand.size(); ++i)
        by_node.at(static_cast<std::size_t>(t.devices.at(demand.gpus[i]).node)).push_back(i);
    Servers servers;
    std::size_t first_node = 0;
    for (std::size_t k = 0; k < by_node.size(); ++k) {
        if (by_node[k].empty()) continue;
        if (servers.gpus.empty()) {
            servers.per_server = by_node[k].size();
            first_node = k;
        } else if (by_node[k].size() != servers.per_server) {
            throw DataError(fmt::format("fast needs the same number of GPUs in every node: {} has {}, {} has {}",
                                        quote(t.nodes[first_node].hostname), servers.per_server,
                                        quote(t.nodes[k].hostname), by_node[k].size()));
        }
        servers.gpus.push_back(std::move(by_node[k]));
    }
    return servers;
}

/// Cuts `bytes` off the ends of `own`'s pieces: first those bound for `first`, then those not bound for
/// `last`, then those bound for `last`. Cutting from the end keeps what stays a prefix of each chunk.
std::vector<Piece> cut(std::vector<Piece>& own, std::uint64_t bytes, std::size_t first, std::size_t last) {
    std::vector<Piece> given;
    for (int pass = 0; pass < 3 && bytes > 0; ++pass) {
        for (auto& p : own) {
            const bool in_pass = pass == 0   ? p.target == first
                                 : pass == 1 ? p.target != first && p.target != last
                                             : p.target == last;
            if (!in_pass || p.bytes == 0 || bytes == 0) continue;
            const std::uint64_t take = std::min(bytes, p.bytes);
            p.bytes -= take;
            given.push_back(Piece{p.origin, p.target, p.offset + p.bytes, take});
            bytes -= take;
        }
    }
    if (bytes > 0) throw InternalError("fast: a GPU gives away more than it sends");
    return given;
}

/// The intra-server balance of what server `src` sends to server `dst`: each GPU ends up with an equal share
/// (the remainder's extra bytes to the GPUs that send most). Appends the balance hops to `hops`, returns what
/// each GPU of `src` then holds for `dst` (by local index) and sets `share` to the largest per-GPU share.
std::vector<std::vector<Piece>> balance(const Demand& demand, const std::vector<std::uint64_t>& chunk,
                                        const std::vector<std::size_t>& src, const std::vector<std::size_t>& dst,
                                        std::vector<Hop>& hops, std::uint64_t& share) {
    const std::size_t n = demand.size();
    const std::size_t g = src.size();
    std::vector<std::vector<Piece>> own(g);
    std::vector<std::uint64_t> row(g, 0);
    std::uint64_t total = 0;
    for (std::size_t a = 0; a < g; ++a) {
        for (std::size_t j : dst) {
            const std::uint64_t bytes = demand.at(src[a], j);
            if (bytes == 0) continue;
            own[a].push_back(Piece{src[a], j, chunk[src[a] * n + j], bytes});
            row[a] += bytes;
        }
        total += row[a];
    }
    std::vector<std::size_t> order(g);
    for (std::size_t a = 0; a < g; ++a)
        order[a] = a;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return row[x] > row[y]; });
    std::vector<std::uint64_t> target(g, total / g);
    for (std::size_t r = 0; r < total % g; ++r)
        ++target[order[r]];
    share = total / g + (total % g > 0 ? 1 : 0);

    std::vector<std::vector<Piece>> incoming(g);
    for (std::size_t giver = 0, taker = 0;;) {
        while (giver < g && row[giver] <= target[giver])
            ++giver;
        while (taker < g && row[taker] >= target[taker])
            ++taker;
        if (giver == g || taker == g) break;
        const std::uint64_t move = std::min(row[giver] - target[giver], target[taker] - row[taker]);
        // The receiver's own rail first: those bytes need no restore after the scale-out.
        for (const auto& p : cut(own[giver], move, dst[taker], dst[giver])) {
            hops.push_back(Hop{src[giver], src[taker], p.origin, p.offset, p.bytes});
            incoming[taker].push_back(p);
        }
        row[giver] -= move;
        row[taker] += move;
    }
    std::vector<std::vector<Piece>> held(g);
    for (std::size_t a = 0; a < g; ++a) {
        for (const auto& p : own[a])
            if (p.bytes > 0) held[a].push_back(p);
        held[a].insert(held[a].end(), incoming[a].begin(), incoming[a].end());
    }
    return held;
}

}  // namespace

Plan plan_fast(const Demand& demand, const topo::Router& router) {
    const Servers servers = group_servers(demand, router.topology());
    const std::size_t n = demand.size();
    const std::size_t s_count = servers.gpus.size();
    const std::size_t g = servers.per_server;
    std::vector<std::uint64_t> chunk(n * n, 0);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 1; j < n; ++j)
            chunk[i * n + j] = chunk[i * n + j - 1] + demand.at(i, j - 1);

    // Step 0: the intrinsic all-to-all inside each server and the balance copies.
    std::vector<std::vector<Hop>> steps(1);
    for (const auto& members : servers.gpus)
        for (std::size_t i : members)
            for (std::size_t j : members)
                if (i != j && demand.at(i, j) > 0) steps[0].push_back(Hop{i, j, i, chunk[i * n + j], demand.at(i, j)});
    // held[(s * S + s') * g + a]: what GPU a of server s holds for server s', sent front to back.
    std::vector<std::vector<Piece>> held(s_count * s_count * g);
    std::vector<std::uint64_t> matrix(s_count * s_count, 0);
    for (std::size_t s = 0; s < s_count; ++s) {
        for (std::size_t d = 0; d < s_count; ++d) {
            if (d == s) continue;
            auto pieces = balance(demand, chunk, servers.gpus[s], servers.gpus[d], steps[0], matrix[s * s_count + d]);
            std::move(pieces.begin(), pieces.end(), held.begin() + static_cast<std::ptrdiff_t>((s * s_count + d) * g));
        }
    }

    // Scale-out: one step per permutation, each carrying the restore of the step before.
    std::vector<std::size_t> head(held.size(), 0);  // pieces of each list already sent
    std::vector<Hop> restore;
    for (const auto& perm : birkhoff_von_neumann(matrix, s_count)) {
        std::vector<Hop> hops = std::move(restore);
        restore.clear();
        for (std::size_t s = 0; s < s_count; ++s) {
            const std::size_t d = perm.to[s];
            if (d == s) continue;
            for (std::size_t a = 0; a < g; ++a) {
                const std::size_t from = servers.gpus[s][a];
                const std::size_t to = servers.gpus[d][a];  // the same rail
                const std::size_t list = (s * s_count + d) * g + a;
                for (std::uint64_t budget = perm.weight; budget > 0 && head[list] < held[list].size();) {
                    Piece& p = held[list][head[list]];
                    const std::uint64_t take = std::min(budget, p.bytes);
                    hops.push_back(Hop{from, to, p.origin, p.offset, take});
                    if (p.target != to) restore.push_back(Hop{to, p.target, p.origin, p.offset, take});
                    p.offset += take;
                    p.bytes -= take;
                    budget -= take;
                    if (p.bytes == 0) ++head[list];
                }
            }
        }
        steps.push_back(std::move(hops));
    }
    if (!restore.empty()) steps.push_back(std::move(restore));
    for (std::size_t list = 0; list < held.size(); ++list)
        if (head[list] != held[list].size()) throw InternalError("fast: the permutations leave bytes unsent");

    // Hops of one step between the same GPUs over consecutive bytes of one origin are one transfer.
    Plan plan;
    plan.algorithm = "fast";
    plan.exclusive = false;
    for (auto& hops : steps) {
        if (hops.empty()) continue;
        std::sort(hops.begin(), hops.end(), [](const Hop& x, const Hop& y) {
            return std::tie(x.src, x.dst, x.origin, x.offset) < std::tie(y.src, y.dst, y.origin, y.offset);
        });
        std::vector<Hop> merged;
        for (const auto& h : hops) {
            if (!merged.empty()) {
                Hop& last = merged.back();
                if (last.src == h.src && last.dst == h.dst && last.origin == h.origin &&
                    last.offset + last.bytes == h.offset) {
                    last.bytes += h.bytes;
                    continue;
                }
            }
            merged.push_back(h);
        }
        Step step;
        for (const auto& h : merged) {
            const auto path = router.route(demand.gpus[h.src], demand.gpus[h.dst]);
            step.transfers.push_back(make_hop(demand, h.origin, h.src, h.dst, path, h.offset, h.bytes));
        }
        plan.steps.push_back(std::move(step));
    }
    return plan;
}

}  // namespace gpuops::alltoall
