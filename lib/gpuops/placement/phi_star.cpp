// Φ* by the closed form under WCC, else by safe pairings, bounds and an exact memoised bin-completion search.
#include "gpuops/placement/phi_star.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"

namespace gpuops::placement {
namespace {

using Counts = std::vector<std::int64_t>;

constexpr std::int64_t infeasible = std::numeric_limits<std::int64_t>::max() / 4;

/// Deeper than this many bins, the recursion would strain the stack: report the lower bound instead.
constexpr int max_depth = 4000;

struct BudgetExceeded {};

std::int64_t count_at(std::span<const std::int64_t> counts, std::size_t index) {
    return index < counts.size() ? counts[index] : 0;
}

std::int64_t total_gpus(const Counts& items) {
    std::int64_t total = 0;
    for (std::size_t g = 1; g < items.size(); ++g)
        total += static_cast<std::int64_t>(g) * items[g];
    return total;
}

/// A lower bound of the partial bins when every bin holds `g` GPUs: the leftover of T mod g needs a partial bin,
/// and an item larger than g/2 sits alone with items that must fill its complement exactly, which the volume of
/// the items no larger than that complement limits (smallest complements first is the most that can be filled).
std::int64_t homogeneous_lower_bound(const Counts& items, int g) {
    const std::int64_t remainder_bound = total_gpus(items) % g != 0 ? 1 : 0;
    std::int64_t big = 0;
    std::int64_t fillable = 0;
    std::int64_t volume = 0;  // of items no larger than the complement c, not yet spent on smaller complements
    for (int c = 1; c < g - g / 2; ++c) {
        volume += c * count_at(items, static_cast<std::size_t>(c));
        const std::int64_t n = count_at(items, static_cast<std::size_t>(g - c));
        const std::int64_t k = std::min(n, volume / c);
        big += n;
        fillable += k;
        volume -= k * c;
    }
    return std::max(remainder_bound, big - fillable);
}

class Search {
public:
    Search(Counts items, std::vector<int> capacities, Counts nodes, std::int64_t budget)
        : items_(std::move(items)), capacities_(std::move(capacities)), nodes_(std::move(nodes)), budget_(budget) {}

    std::int64_t run() { return solve(0); }
    [[nodiscard]] std::int64_t lower_bound() const {
        return capacities_.size() == 1 ? homogeneous_lower_bound(items_, capacities_.front()) : 0;
    }
    [[nodiscard]] std::int64_t states() const { return visited_; }

private:
    struct Frame {
        int capacity = 0;
        std::int64_t bound = 0;
        std::int64_t best = infeasible;
        int depth = 0;
    };

    std::string key() const {
        std::string k;
        k.reserve((items_.size() + nodes_.size()) * sizeof(std::int64_t));
        for (const auto v : items_)
            k.append(reinterpret_cast<const char*>(&v), sizeof v);  // NOLINT(*-reinterpret-cast)
        for (const auto v : nodes_)
            k.append(reinterpret_cast<const char*>(&v), sizeof v);  // NOLINT(*-reinterpret-cast)
        return k;
    }

    /// The fewest partial bins for the items left, or `infeasible`.
    std::int64_t solve(int depth) {
        std::size_t largest = items_.size();
        while (largest > 1 && items_[largest - 1] == 0)
            --largest;
        if (largest <= 1) return 0;
        const auto size = static_cast<int>(largest - 1);
        std::string k = key();
        if (const auto it = memo_.find(k); it != memo_.end()) return it->second;
        if (++visited_ > budget_ || depth >= max_depth) throw BudgetExceeded{};

        Frame frame;
        frame.bound = lower_bound();
        frame.depth = depth;
        // The bin that holds one of the largest items: try each capacity, then every completion of it.
        --items_[static_cast<std::size_t>(size)];
        for (std::size_t c = 0; c < capacities_.size() && frame.best > frame.bound; ++c) {
            if (capacities_[c] < size || nodes_[c] == 0) continue;
            --nodes_[c];
            frame.capacity = capacities_[c];
            complete(frame, size, capacities_[c] - size, size);
            ++nodes_[c];
        }
        ++items_[static_cast<std::size_t>(size)];
        memo_.emplace(std::move(k), frame.best);
        return frame.best;
    }

    /// Adds items of size <= `size` to the open bin (room `room`, load `load`), fullest completions first.
    void complete(Frame& frame, int size, int room, int load) {
        if (frame.best <= frame.bound) return;
        const int s = std::min(size, room);
        if (s == 0) {
            const std::int64_t rest = solve(frame.depth + 1);
            if (rest < infeasible) frame.best = std::min(frame.best, rest + (load < frame.capacity ? 1 : 0));
            return;
        }
        auto& count = items_[static_cast<std::size_t>(s)];
        const std::int64_t most = std::min<std::int64_t>(count, room / s);
        for (std::int64_t take = most; take >= 0 && frame.best > frame.bound; --take) {
            count -= take;
            complete(frame, s - 1, room - static_cast<int>(take) * s, load + static_cast<int>(take) * s);
            count += take;
        }
    }

    Counts items_;
    std::vector<int> capacities_;  // distinct capacities, largest first
    Counts nodes_;                 // nodes left of each capacity
    std::int64_t budget_;
    std::int64_t visited_ = 0;  // states solved (memo hits not counted)
    std::unordered_map<std::string, std::int64_t> memo_;
};

}  // namespace

Wcc check_wcc(std::span<const std::int64_t> n) {
    const std::int64_t need = count_at(n, 3) + 3 * count_at(n, 5) + 2 * count_at(n, 6) + count_at(n, 7);
    const std::int64_t deficit = std::max<std::int64_t>(0, need - count_at(n, 1));
    return {deficit == 0, deficit};
}

std::string_view to_string(PhiStarMethod method) {
    switch (method) {
        case PhiStarMethod::closed_form: return "closed-form";
        case PhiStarMethod::search: return "search";
        case PhiStarMethod::lower_bound: return "lower-bound";
    }
    return "unknown";
}

PhiStar min_partial_nodes(const PackingProblem& problem, std::int64_t state_budget) {
    std::vector<int> capacities;
    Counts nodes;
    for (std::size_t c = problem.nodes_by_capacity.size(); c-- > 1;) {
        if (problem.nodes_by_capacity[c] < 0) throw DataError("a negative node count");
        if (problem.nodes_by_capacity[c] == 0) continue;
        capacities.push_back(static_cast<int>(c));
        nodes.push_back(problem.nodes_by_capacity[c]);
    }
    const int largest_node = capacities.empty() ? 0 : capacities.front();
    Counts items(static_cast<std::size_t>(largest_node) + 1, 0);
    for (std::size_t g = 1; g < problem.instances_by_size.size(); ++g) {
        const std::int64_t n = problem.instances_by_size[g];
        if (n < 0) throw DataError("a negative instance count");
        if (n == 0) continue;
        if (static_cast<int>(g) > largest_node) {
            throw DataError(
                fmt::format("an instance of {} GPUs is larger than every node (at most {})", g, largest_node));
        }
        items[g] = n;
    }
    std::int64_t capacity = 0;
    for (std::size_t c = 0; c < capacities.size(); ++c)
        capacity += capacities[c] * nodes[c];
    if (total_gpus(items) > capacity) {
        throw DataError(
            fmt::format("the instances hold {} GPUs, more than the {} the nodes have", total_gpus(items), capacity));
    }
    if (total_gpus(items) == 0) return {};

    if (capacities.size() == 1) {
        const int g = capacities.front();
        if (g == 8 && check_wcc(items).holds) return {total_gpus(items) % 8 != 0 ? 1 : 0, true, {}, 0};
        // Pairings some optimal packing always has (exchange arguments): an item of size g fills a node alone;
        // two items of g/2 fill one; an item s > g/2 with an item of exactly g - s fills one, since swapping that
        // item for whatever shares the node with s never adds a partial node. Each makes a full node.
        Counts reduced = items;
        std::int64_t full = reduced[static_cast<std::size_t>(g)];
        reduced[static_cast<std::size_t>(g)] = 0;
        if (g % 2 == 0) {
            const std::int64_t pairs = reduced[static_cast<std::size_t>(g / 2)] / 2;
            reduced[static_cast<std::size_t>(g / 2)] -= 2 * pairs;
            full += pairs;
        }
        for (int s = g / 2 + 1; s < g; ++s) {
            auto& big = reduced[static_cast<std::size_t>(s)];
            auto& small = reduced[static_cast<std::size_t>(g - s)];
            const std::int64_t pairs = std::min(big, small);
            big -= pairs;
            small -= pairs;
            full += pairs;
        }
        if (full <= nodes.front()) {
            items = std::move(reduced);
            nodes.front() -= full;
        }
    }

    Search search(std::move(items), capacities, std::move(nodes), state_budget);
    const std::int64_t bound = search.lower_bound();  // before the search: an abandoned one leaves its state
    try {
        const std::int64_t value = search.run();
        if (value >= infeasible) throw DataError("the instances fit no packing into the nodes");
        return {value, true, PhiStarMethod::search, search.states()};
    } catch (const BudgetExceeded&) {
        return {bound, false, PhiStarMethod::lower_bound, search.states()};
    }
}

}  // namespace gpuops::placement
