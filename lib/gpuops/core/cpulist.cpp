// Formatting and parsing of CPU index lists in the "0-3,8" list format.
#include "gpuops/core/cpulist.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"

namespace gpuops::cpulist {

std::string format(std::span<const int> indexes) {
    std::vector<int> sorted(indexes.begin(), indexes.end());
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    std::string out;
    for (std::size_t i = 0; i < sorted.size();) {
        std::size_t j = i;
        while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1)
            ++j;
        if (!out.empty()) out += ',';
        out += i == j ? fmt::format("{}", sorted[i]) : fmt::format("{}-{}", sorted[i], sorted[j]);
        i = j + 1;
    }
    return out;
}

std::vector<int> parse(std::string_view text) {
    constexpr std::size_t max_entries = 1U << 20;
    std::vector<int> out;
    auto fail = [&](std::string_view why) {
        return DataError(fmt::format("invalid CPU list {} ({})", quote(text), why));
    };
    auto number = [&](std::string_view s) {
        int v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0) throw fail("expected numbers");
        return v;
    };
    if (text.empty()) return out;
    std::size_t start = 0;
    while (true) {
        const auto comma = text.find(',', start);
        const auto item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        const auto dash = item.find('-');
        const int first = number(item.substr(0, dash));
        const int last = dash == std::string_view::npos ? first : number(item.substr(dash + 1));
        if (last < first) throw fail("descending range");
        if (out.size() + static_cast<std::size_t>(last - first) + 1 > max_entries) throw fail("too many CPUs");
        for (int v = first; v <= last; ++v)
            out.push_back(v);
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

}  // namespace gpuops::cpulist
