// Slurm hostlist expansion and compression, bounded so that no expression can exhaust memory or time.
#include "gpuops/core/hostlist.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <iterator>
#include <map>
#include <set>
#include <system_error>
#include <tuple>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"
#include "gpuops/core/text.hpp"

namespace gpuops::hostlist {
namespace {

using text::is_digit;
using text::is_space;
using text::trim;

/// The expression as an error message shows it: on one line and not absurdly long.
std::string shown(std::string_view expr) {
    constexpr std::size_t limit = 200;
    std::string out(expr.substr(0, limit));
    for (char& c : out)
        if (static_cast<unsigned char>(c) < 0x20 || c == '\x7f') c = ' ';
    if (expr.size() > limit) out += "...";
    return out;
}

[[noreturn]] void fail(std::string_view expr, std::string_view detail) {
    throw DataError(fmt::format("invalid hostlist {} ({})", quote(shown(expr)), detail));
}

/// lo..hi inclusive, printed zero-padded to `width` digits.
struct Range {
    std::uint64_t lo = 0;
    std::uint64_t hi = 0;
    std::size_t width = 1;
};

std::size_t digit_count(std::uint64_t v) {
    std::size_t n = 1;
    while (v >= 10) {
        v /= 10;
        ++n;
    }
    return n;
}

void append_number(std::string& out, std::uint64_t value, std::size_t width) {
    fmt::format_to(std::back_inserter(out), "{:0{}}", value, width);
}

/// One host of an expression: literals[0] group[0] literals[1] ... group[n-1] literals[n].
struct Pattern {
    std::vector<std::string_view> literals;
    std::vector<std::vector<Range>> groups;
};

std::uint64_t parse_number(std::string_view digits, std::string_view expr) {
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc{} || end != digits.data() + digits.size())
        fail(expr, fmt::format("number {} is too large", digits));
    return value;
}

/// The ranges inside one pair of brackets: `01-04,07`, spaces around numbers tolerated.
std::vector<Range> parse_group(std::string_view content, std::string_view expr) {
    if (trim(content).empty()) fail(expr, "empty '[]'");
    const std::string hint = fmt::format("expected numbers or ranges such as 1-4 inside '[{}]'", content);
    std::vector<Range> ranges;
    std::string_view rest = content;
    while (true) {  // every pass consumes at least one digit or ends
        const std::size_t comma = rest.find(',');
        const std::string_view item = trim(rest.substr(0, comma));
        std::size_t n = 0;
        while (n < item.size() && is_digit(item[n]))
            ++n;
        if (n == 0) fail(expr, hint);
        Range range;
        range.width = n;
        range.lo = range.hi = parse_number(item.substr(0, n), expr);
        std::string_view tail = trim(item.substr(n));
        if (!tail.empty()) {
            if (tail.front() != '-') fail(expr, hint);
            const std::string_view hi_text = trim(tail.substr(1));
            if (hi_text.empty() || !std::all_of(hi_text.begin(), hi_text.end(), is_digit)) fail(expr, hint);
            range.hi = parse_number(hi_text, expr);
            if (range.hi < range.lo) fail(expr, fmt::format("descending range {}", item));
        }
        ranges.push_back(range);
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
    }
    return ranges;
}

Pattern parse_host(std::string_view host, std::string_view expr) {
    Pattern pattern;
    std::size_t literal_start = 0;
    std::size_t i = 0;
    while (i < host.size()) {
        if (host[i] != '[') {
            ++i;
            continue;
        }
        const std::size_t close = host.find(']', i);  // brackets were checked to balance
        pattern.literals.push_back(host.substr(literal_start, i - literal_start));
        pattern.groups.push_back(parse_group(host.substr(i + 1, close - i - 1), expr));
        i = close + 1;
        literal_start = i;
    }
    pattern.literals.push_back(host.substr(literal_start));
    return pattern;
}

/// Splits at commas and whitespace outside brackets, checking that brackets pair up and no name is empty.
std::vector<std::string_view> split_hosts(std::string_view expr) {
    std::vector<std::string_view> hosts;
    if (trim(expr).empty()) return hosts;
    bool in_brackets = false;
    bool name_expected = true;  // at the start and after a comma a name must follow
    std::size_t start = std::string_view::npos;
    auto end_name = [&](std::size_t at) {
        if (start != std::string_view::npos) hosts.push_back(expr.substr(start, at - start));
        start = std::string_view::npos;
    };
    for (std::size_t i = 0; i < expr.size(); ++i) {
        const char c = expr[i];
        if (in_brackets) {
            if (c == '[') fail(expr, "nested '['");
            if (c == ']') in_brackets = false;
            continue;
        }
        if (c == ',' || is_space(c)) {
            const bool had_name = start != std::string_view::npos;
            end_name(i);
            if (c == ',') {
                if (name_expected && !had_name) fail(expr, "empty host name");
                name_expected = true;
            } else if (had_name) {
                name_expected = false;
            }
            continue;
        }
        if (c == ']') fail(expr, "unexpected ']'");
        if (c == '[') in_brackets = true;
        if (start == std::string_view::npos) start = i;
        name_expected = false;
    }
    if (in_brackets) fail(expr, "unclosed '['");
    end_name(expr.size());
    if (name_expected) fail(expr, "empty host name");
    return hosts;
}

/// Names one pattern expands to, or more than `cap` when that is more than `cap`.
std::uint64_t count_names(const Pattern& pattern, std::uint64_t cap) {
    std::uint64_t product = 1;
    for (const auto& group : pattern.groups) {
        std::uint64_t in_group = 0;
        for (const auto& r : group) {
            if (r.hi - r.lo >= cap) return cap + 1;
            in_group += r.hi - r.lo + 1;
            if (in_group > cap) return cap + 1;
        }
        if (in_group > cap / product) return cap + 1;
        product *= in_group;
    }
    return product;
}

std::size_t longest_name(const Pattern& pattern) {
    std::size_t length = 0;
    for (const auto& literal : pattern.literals)
        length += literal.size();
    for (const auto& group : pattern.groups) {
        std::size_t widest = 0;
        for (const auto& r : group)
            widest = std::max({widest, r.width, digit_count(r.hi)});
        length += widest;
    }
    return length;
}

/// Appends every name of `pattern`, the first group varying slowest (Slurm's order). Iterative: a name may hold
/// many groups, and recursion over them could exhaust the stack.
void expand_pattern(const Pattern& pattern, std::vector<std::string>& out) {
    const std::size_t groups = pattern.groups.size();
    std::vector<std::size_t> range_index(groups, 0);
    std::vector<std::uint64_t> value(groups);
    for (std::size_t g = 0; g < groups; ++g)
        value[g] = pattern.groups[g][0].lo;
    while (true) {
        std::string name(pattern.literals[0]);
        for (std::size_t g = 0; g < groups; ++g) {
            append_number(name, value[g], pattern.groups[g][range_index[g]].width);
            name += pattern.literals[g + 1];
        }
        out.push_back(std::move(name));

        std::size_t g = groups;
        while (g > 0) {
            --g;
            const auto& group = pattern.groups[g];
            if (value[g] < group[range_index[g]].hi) {
                ++value[g];
                break;
            }
            if (range_index[g] + 1 < group.size()) {
                value[g] = group[++range_index[g]].lo;
                break;
            }
            range_index[g] = 0;
            value[g] = group[0].lo;
            if (g == 0) return;  // the first group wrapped: every combination is out
        }
        if (groups == 0) return;
    }
}

// ---- compress ----

struct Numbered {
    std::uint64_t value = 0;
    std::size_t digits = 0;
    bool padded = false;  ///< written with leading zeros, so only a range of exactly this width can hold it
};

bool fits_hostlist(const std::string& host) {
    if (host.empty()) return false;
    return std::none_of(host.begin(), host.end(),
                        [](char c) { return c == '[' || c == ']' || c == ',' || is_space(c); });
}

/// `prefix[ranges]` for the numbered hosts sharing one prefix.
std::string compress_group(const std::string& prefix, const std::vector<Numbered>& items) {
    // An unpadded number of d digits prints the same in any range of width <= d; put it with the widest padded
    // width that allows that, so node08,node09,node10 becomes node[08-10] as Slurm writes it.
    std::set<std::size_t> padded_widths;
    for (const auto& item : items)
        if (item.padded) padded_widths.insert(item.digits);
    std::vector<std::tuple<std::size_t, std::uint64_t>> keyed;  // (width, value)
    keyed.reserve(items.size());
    for (const auto& item : items) {
        std::size_t width = 1;
        if (item.padded) {
            width = item.digits;
        } else if (auto it = padded_widths.upper_bound(item.digits); it != padded_widths.begin()) {
            width = *std::prev(it);
        }
        keyed.emplace_back(width, item.value);
    }
    std::sort(keyed.begin(), keyed.end());
    keyed.erase(std::unique(keyed.begin(), keyed.end()), keyed.end());

    std::vector<Range> ranges;
    for (const auto& [width, value] : keyed) {
        if (!ranges.empty() && ranges.back().width == width && ranges.back().hi + 1 == value) {
            ranges.back().hi = value;
        } else {
            ranges.push_back(Range{value, value, width});
        }
    }
    std::sort(ranges.begin(), ranges.end(),
              [](const Range& a, const Range& b) { return std::tie(a.lo, a.width) < std::tie(b.lo, b.width); });

    std::string out = prefix;
    if (ranges.size() == 1 && ranges[0].lo == ranges[0].hi) {
        append_number(out, ranges[0].lo, ranges[0].width);
        return out;
    }
    out += '[';
    for (std::size_t i = 0; i < ranges.size(); ++i) {
        if (i > 0) out += ',';
        append_number(out, ranges[i].lo, ranges[i].width);
        if (ranges[i].hi != ranges[i].lo) {
            out += '-';
            append_number(out, ranges[i].hi, ranges[i].width);
        }
    }
    out += ']';
    return out;
}

}  // namespace

std::vector<std::string> expand(std::string_view expr) {
    std::vector<Pattern> patterns;
    std::uint64_t total = 0;
    for (std::string_view host : split_hosts(expr)) {
        Pattern pattern = parse_host(host, expr);
        total += count_names(pattern, max_expanded_hosts);
        if (total > max_expanded_hosts) fail(expr, fmt::format("expands to more than {} names", max_expanded_hosts));
        if (longest_name(pattern) > max_host_name_length)
            fail(expr, fmt::format("a host name would be longer than {} characters", max_host_name_length));
        patterns.push_back(std::move(pattern));
    }
    std::vector<std::string> out;
    out.reserve(static_cast<std::size_t>(total));
    for (const auto& pattern : patterns)
        expand_pattern(pattern, out);
    return out;
}

std::string compress(std::span<const std::string> hosts) {
    std::set<std::string> plain;                            // names without a usable trailing number
    std::map<std::string, std::vector<Numbered>> numbered;  // by prefix
    for (const auto& host : hosts) {
        if (!fits_hostlist(host))
            throw DataError(fmt::format("invalid host name {} (a hostlist name must be non-empty and free of "
                                        "brackets, commas and whitespace)",
                                        quote(shown(host))));
        std::size_t split = host.size();
        while (split > 0 && is_digit(host[split - 1]))
            --split;
        const std::string_view digits = std::string_view(host).substr(split);
        std::uint64_t value = 0;
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size()) {
            plain.insert(host);
            continue;
        }
        const bool padded = digits.size() > 1 && digits[0] == '0';
        numbered[host.substr(0, split)].push_back(Numbered{value, digits.size(), padded});
    }

    // (sort key, text): a plain name sorts before a group with the same prefix.
    std::vector<std::tuple<std::string_view, int, std::string>> parts;
    parts.reserve(plain.size() + numbered.size());
    for (const auto& name : plain)
        parts.emplace_back(name, 0, name);
    for (const auto& [prefix, items] : numbered)
        parts.emplace_back(prefix, 1, compress_group(prefix, items));
    std::sort(parts.begin(), parts.end());

    std::string out;
    for (const auto& part : parts) {
        if (!out.empty()) out += ',';
        out += std::get<2>(part);
    }
    return out;
}

}  // namespace gpuops::hostlist
