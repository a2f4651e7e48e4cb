// The seeded demand generators (uniform, zipf, hot, moe) and their specs.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gpuops/alltoall/demand.hpp"
#include "gpuops/alltoall/demand_internal.hpp"
#include "gpuops/core/error.hpp"
#include "gpuops/core/units.hpp"

namespace gpuops::alltoall {
namespace {

using namespace demand_detail;
using topo::Topology;

/// The seeded randomness of every generator. std::mt19937_64's output sequence is fixed by the standard; the
/// distributions are written here because the standard library's differ between implementations.
class Rng {
public:
    explicit Rng(std::uint64_t seed) : engine_(seed) {}

    /// Uniform in [0, 1) from the top 53 bits.
    double uniform() { return static_cast<double>(engine_() >> 11U) * 0x1.0p-53; }

    /// Uniform in [0, m), m ≥ 1, without modulo bias (draws below 2^64 mod m are rejected).
    std::uint64_t below(std::uint64_t m) {
        const std::uint64_t threshold = (max_u64 - m + 1) % m;
        while (true) {
            const std::uint64_t x = engine_();
            if (x >= threshold) return x % m;
        }
    }

    /// Fisher–Yates, from the back.
    template <typename T>
    void shuffle(std::vector<T>& v) {
        for (std::size_t i = v.size(); i > 1; --i)
            std::swap(v[i - 1], v[static_cast<std::size_t>(below(i))]);
    }

private:
    std::mt19937_64 engine_;
};

/// Weights 1/(r+1)^s for ranks r = 0..count-1.
std::vector<double> zipf_weights(std::size_t count, double s) {
    std::vector<double> w(count);
    for (std::size_t r = 0; r < count; ++r)
        w[r] = s == 0 ? 1.0 : 1.0 / std::pow(static_cast<double>(r + 1), s);
    return w;
}

/// Inverse-CDF sampling over a precomputed cumulative table.
class ZipfTable {
public:
    explicit ZipfTable(const std::vector<double>& weights) : weights_(weights), cdf_(weights.size()) {
        double sum = 0;
        for (std::size_t r = 0; r < weights.size(); ++r)
            cdf_[r] = sum += weights[r];
    }

    std::size_t draw(Rng& rng) const {
        const double target = rng.uniform() * cdf_.back();
        const auto it = std::upper_bound(cdf_.begin(), cdf_.end(), target);
        return std::min(static_cast<std::size_t>(it - cdf_.begin()), cdf_.size() - 1);
    }

    /// A draw among the ranks not `taken`, in proportion to their weights (what rejecting taken draws converges
    /// to, in one linear pass).
    std::size_t draw_excluding(Rng& rng, const std::vector<char>& taken) const {
        double remaining = 0;
        std::size_t last = 0;
        for (std::size_t r = 0; r < weights_.size(); ++r) {
            if (taken[r] == 0) {
                remaining += weights_[r];
                last = r;
            }
        }
        double target = rng.uniform() * remaining;
        for (std::size_t r = 0; r < weights_.size(); ++r) {
            if (taken[r] != 0) continue;
            if (target < weights_[r]) return r;
            target -= weights_[r];
        }
        return last;
    }

private:
    std::vector<double> weights_;
    std::vector<double> cdf_;
};

/// Splits `total` (≤ 2^53) into integer parts proportional to `weights` that add up to it exactly: each part
/// is its quota rounded down, and the bytes left go one each to the largest remainders (ties: lower index).
std::vector<std::uint64_t> apportion(std::uint64_t total, const std::vector<double>& weights) {
    double sum = 0;
    for (const double w : weights)
        sum += w;
    std::vector<std::uint64_t> parts(weights.size(), 0);
    std::vector<double> remainders(weights.size(), 0);
    std::uint64_t assigned = 0;
    for (std::size_t r = 0; r < weights.size(); ++r) {
        const double quota = static_cast<double>(total) * weights[r] / sum;
        const double whole = std::floor(quota);
        parts[r] = static_cast<std::uint64_t>(whole);
        remainders[r] = quota - whole;
        assigned += parts[r];
    }
    std::vector<std::size_t> order(weights.size());
    for (std::size_t r = 0; r < order.size(); ++r)
        order[r] = r;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return remainders[a] > remainders[b]; });
    // Rounding of the quotas themselves can leave `assigned` a few bytes off either way; each pass moves it
    // by up to one byte per part.
    while (assigned < total) {
        for (std::size_t k = 0; k < order.size() && assigned < total; ++k, ++assigned)
            ++parts[order[k]];
    }
    while (assigned > total) {
        for (std::size_t k = order.size(); k > 0 && assigned > total; --k) {
            if (parts[order[k - 1]] == 0) continue;
            --parts[order[k - 1]];
            --assigned;
        }
    }
    return parts;
}

/// `total` split evenly over `destinations` of row `source`; the odd bytes go to the destinations that follow
/// the source in its list (rotated by the source), so no column collects every row's remainder.
void spread_evenly(Demand& d, std::size_t source, const std::vector<std::size_t>& destinations, std::uint64_t total) {
    if (destinations.empty()) return;
    const std::uint64_t m = destinations.size();
    const std::uint64_t each = total / m;
    const std::uint64_t extra = total % m;
    for (std::uint64_t k = 0; k < m; ++k) {
        const auto slot = static_cast<std::size_t>((source + k) % m);
        d.at(source, destinations[slot]) = each + (k < extra ? 1 : 0);
    }
}

/// The key=value list of a spec, checked against the generator's keys.
class SpecArgs {
public:
    SpecArgs(std::string_view generator, std::string_view body, std::vector<std::string_view> keys)
        : generator_(generator), keys_(std::move(keys)) {
        if (trim(body).empty()) return;
        for (const std::string_view item : split(body, ',')) {
            const auto eq = item.find('=');
            if (eq == std::string_view::npos) fail(fmt::format("expected key=value, got {}", quote(trim(item))));
            const std::string_view key = trim(item.substr(0, eq));
            const std::string_view value = trim(item.substr(eq + 1));
            if (std::find(keys_.begin(), keys_.end(), key) == keys_.end())
                fail(fmt::format("unknown key {} (keys: {})", quote(key), fmt::join(keys_, ", ")));
            if (get(key)) fail(fmt::format("key {} given twice", quote(key)));
            values_.emplace_back(key, value);
        }
    }

    [[nodiscard]] std::optional<std::string_view> get(std::string_view key) const {
        for (const auto& [k, v] : values_)
            if (k == key) return v;
        return std::nullopt;
    }

    /// The value of `key`: nullopt when it is absent and `optional`, an error when it is absent otherwise.
    [[nodiscard]] std::optional<std::string_view> lookup(std::string_view key, bool optional) const {
        const auto v = get(key);
        if (!v && !optional) fail(fmt::format("missing required key {}", quote(key)));
        return v;
    }

    [[noreturn]] void fail(const std::string& reason) const {
        throw DataError(fmt::format("{}: {}", generator_, reason));
    }
    [[noreturn]] void bad_value(std::string_view key, std::string_view value, std::string_view expected) const {
        fail(fmt::format("bad value for {}: expected {}, got {}", quote(key), expected, quote(value)));
    }

    /// An integer in [min, max]; `fallback` when absent and given.
    [[nodiscard]] std::uint64_t integer(std::string_view key, std::uint64_t min, std::uint64_t max,
                                        std::optional<std::uint64_t> fallback = std::nullopt) const {
        const auto text = lookup(key, fallback.has_value());
        if (!text) return *fallback;
        const auto v = parse_u64(*text);
        if (!v || *v < min || *v > max) bad_value(key, *text, fmt::format("an integer from {} to {}", min, max));
        return *v;
    }

    /// A finite number in [min, max].
    [[nodiscard]] double number(std::string_view key, double min, double max,
                                std::optional<double> fallback = std::nullopt) const {
        const auto text = lookup(key, fallback.has_value());
        if (!text) return *fallback;
        double v = 0;
        const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
        if (text->empty() || ec != std::errc() || end != text->data() + text->size() || !std::isfinite(v) || v < min ||
            v > max) {
            bad_value(key, *text,
                      max == std::numeric_limits<double>::max() ? fmt::format("a number of at least {}", min)
                                                                : fmt::format("a number from {} to {}", min, max));
        }
        return v;
    }

    /// A size with an optional unit (units::parse_size), at most `max` bytes.
    [[nodiscard]] std::uint64_t size(std::string_view key, std::uint64_t max,
                                     std::optional<std::uint64_t> fallback = std::nullopt) const {
        const auto text = lookup(key, fallback.has_value());
        if (!text) return *fallback;
        std::uint64_t v = 0;
        try {
            v = units::parse_size(*text);
        } catch (const DataError& e) {
            fail(fmt::format("bad value for {}: {}", quote(key), e.reason()));
        }
        if (v > max) bad_value(key, *text, fmt::format("at most {} bytes", max));
        return v;
    }

    /// One of `choices`; the index of the one given, or `fallback` when absent.
    [[nodiscard]] std::size_t choice(std::string_view key, const std::vector<std::string_view>& choices,
                                     std::size_t fallback) const {
        const auto text = get(key);
        if (!text) return fallback;
        for (std::size_t k = 0; k < choices.size(); ++k)
            if (*text == choices[k]) return k;
        bad_value(key, *text, fmt::format("{}", fmt::join(choices, " or ")));
    }

    [[nodiscard]] std::uint64_t seed() const { return integer("seed", 0, max_u64, default_seed); }

private:
    std::string generator_;
    std::vector<std::string_view> keys_;
    std::vector<std::pair<std::string_view, std::string_view>> values_;
};

void check_generated_total(const Demand& d, const SpecArgs& args) {
    if (!checked_total(d)) args.fail("the matrix would hold more than 2^64-1 bytes in all");
}

void generate_uniform(Demand& d, const SpecArgs& args) {
    const std::uint64_t bytes = args.size("bytes", max_u64);
    const std::size_t n = d.size();
    std::uint64_t total = 0;
    if (!checked_mul(bytes, static_cast<std::uint64_t>(n) * (n - 1), total))
        args.fail("the matrix would hold more than 2^64-1 bytes in all");
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
            d.at(i, j) = i == j ? 0 : bytes;
}

void generate_zipf(Demand& d, const SpecArgs& args) {
    const double s = args.number("s", 0, std::numeric_limits<double>::max());
    const std::uint64_t bytes = args.size("bytes", max_generated_bytes);
    Rng rng(args.seed());
    const std::size_t n = d.size();
    const auto weights = zipf_weights(n - 1, s);
    const auto parts = apportion(bytes, weights);  // by rank; every row has the same shares
    for (std::size_t i = 0; i < n; ++i) {
        std::vector<std::size_t> destinations;
        for (std::size_t j = 0; j < n; ++j)
            if (j != i) destinations.push_back(j);
        rng.shuffle(destinations);
        for (std::size_t r = 0; r < destinations.size(); ++r)
            d.at(i, destinations[r]) = parts[r];
    }
    check_generated_total(d, args);
}

void generate_hot(Demand& d, const SpecArgs& args) {
    const std::size_t n = d.size();
    const auto experts = static_cast<std::size_t>(args.integer("experts", 1, n - 1));
    const double fraction = args.number("fraction", 0, 1);
    const std::uint64_t bytes = args.size("bytes", max_generated_bytes, std::uint64_t{64} << 20U);
    Rng rng(args.seed());
    std::vector<std::size_t> order(n);
    for (std::size_t k = 0; k < n; ++k)
        order[k] = k;
    rng.shuffle(order);
    std::vector<char> hot(n, 0);
    for (std::size_t k = 0; k < experts; ++k)
        hot[order[k]] = 1;
    const auto hot_bytes =
        std::min(bytes, static_cast<std::uint64_t>(std::floor(fraction * static_cast<double>(bytes) + 0.5)));
    for (std::size_t i = 0; i < n; ++i) {
        std::vector<std::size_t> hot_dst;
        std::vector<std::size_t> cold_dst;
        for (std::size_t j = 0; j < n; ++j)
            if (j != i) (hot[j] != 0 ? hot_dst : cold_dst).push_back(j);
        if (hot_dst.empty() || cold_dst.empty()) {
            spread_evenly(d, i, hot_dst.empty() ? cold_dst : hot_dst, bytes);
        } else {
            spread_evenly(d, i, hot_dst, hot_bytes);
            spread_evenly(d, i, cold_dst, bytes - hot_bytes);
        }
    }
    check_generated_total(d, args);
}

void generate_moe(Demand& d, const SpecArgs& args) {
    const std::size_t n = d.size();
    const auto experts = static_cast<std::size_t>(args.integer("experts", 1, std::uint64_t{1} << 20U));
    const auto topk = static_cast<std::size_t>(args.integer("topk", 1, experts));
    const std::uint64_t tokens = args.integer("tokens", 1, max_moe_picks);
    const std::uint64_t hidden = args.integer("hidden", 1, std::uint64_t{1} << 32U);
    const std::uint64_t dtype_bytes = args.choice("dtype", {"bf16", "fp8"}, 0) == 0 ? 2 : 1;
    const double s = args.number("zipf", 0, std::numeric_limits<double>::max(), 0.0);
    const bool round_robin = args.choice("placement", {"contiguous", "round-robin"}, 0) == 1;
    Rng rng(args.seed());

    std::uint64_t picks = 0;
    if (!checked_mul(static_cast<std::uint64_t>(n) * topk, tokens, picks) || picks > max_moe_picks) {
        args.fail(fmt::format("GPUs × tokens × topk = {} × {} × {} is more picks than the {} simulated at most", n,
                              tokens, topk, max_moe_picks));
    }
    const std::uint64_t token_bytes = hidden * dtype_bytes;  // both below 2^33
    std::uint64_t row_bytes = 0;
    if (!checked_mul(token_bytes, tokens * topk, row_bytes) || !checked_mul(row_bytes, n, row_bytes))
        args.fail("the matrix would hold more than 2^64-1 bytes in all");

    std::vector<std::size_t> owner(experts);
    for (std::size_t e = 0; e < experts; ++e)
        owner[e] = round_robin ? e % n : static_cast<std::size_t>(static_cast<std::uint64_t>(e) * n / experts);

    const ZipfTable table(zipf_weights(experts, s));
    constexpr int max_rejections = 32;  // then draw among the experts left directly
    std::vector<char> taken(experts, 0);
    std::vector<std::size_t> picked;
    std::vector<std::uint64_t> last_token(n, max_u64);  // per GPU: the last token sent to it (dedup)
    std::uint64_t token_id = 0;
    for (std::size_t i = 0; i < n; ++i) {
        for (std::uint64_t t = 0; t < tokens; ++t, ++token_id) {
            picked.clear();
            for (std::size_t p = 0; p < topk; ++p) {
                std::size_t e = table.draw(rng);
                for (int tries = 1; taken[e] != 0 && tries < max_rejections; ++tries)
                    e = table.draw(rng);
                if (taken[e] != 0) e = table.draw_excluding(rng, taken);
                taken[e] = 1;
                picked.push_back(e);
            }
            for (const std::size_t e : picked) {
                taken[e] = 0;
                const std::size_t j = owner[e];
                if (last_token[j] == token_id) continue;  // already sent to that GPU for another of its experts
                last_token[j] = token_id;
                d.at(i, j) += token_bytes;
            }
        }
    }
}

struct Generator {
    std::string_view name;
    std::vector<std::string_view> keys;
    void (*run)(Demand&, const SpecArgs&);
};

const std::vector<Generator>& generators() {
    static const std::vector<Generator> all{
        {"uniform", {"bytes"}, generate_uniform},
        {"zipf", {"s", "bytes", "seed"}, generate_zipf},
        {"hot", {"experts", "fraction", "bytes", "seed"}, generate_hot},
        {"moe", {"experts", "topk", "tokens", "hidden", "dtype", "zipf", "placement", "seed"}, generate_moe},
    };
    return all;
}

}  // namespace

namespace demand_detail {

bool looks_like_spec(std::string_view text) {
    const auto colon = text.find(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    const std::string_view name = text.substr(0, colon);
    for (const auto& g : generators())
        if (g.name == name) return true;
    const bool word = std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    });
    return word && name.front() >= 'a' && name.front() <= 'z' && text.find('=', colon) != std::string_view::npos;
}

}  // namespace demand_detail

std::vector<std::string_view> demand_generator_names() {
    std::vector<std::string_view> names;
    for (const auto& g : generators())
        names.push_back(g.name);
    return names;
}

Demand generate_demand(std::string_view spec, const Topology& topology) {
    const std::string_view text = trim(spec);
    const auto colon = text.find(':');
    const std::string_view name = text.substr(0, colon);
    const auto g =
        std::find_if(generators().begin(), generators().end(), [&](const Generator& x) { return x.name == name; });
    if (g == generators().end()) {
        throw DataError(fmt::format("unknown demand generator {} (generators: {})", quote(name),
                                    fmt::join(demand_generator_names(), ", ")));
    }
    const SpecArgs args(g->name, colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1),
                        g->keys);
    Demand d = empty_demand(topology, text);
    d.spec = text;
    g->run(d, args);
    return d;
}

}  // namespace gpuops::alltoall
