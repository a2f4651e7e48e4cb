// Locale-independent parsing of trace fields: counts, seconds and wall-clock times, with row-level reasons.
#include "gpuops/placement/trace_fields.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <system_error>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"
#include "gpuops/core/text.hpp"

namespace gpuops::placement::trace_fields {
namespace {

char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

RowError missing(std::string_view column) {
    return {"missing value", fmt::format("column {}: missing value", quote(column))};
}

/// The whole of `text` as a double; nullopt when anything is left over or it is not finite.
std::optional<double> full_double(std::string_view text) noexcept {
    double value = 0;
    const auto* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc() || ptr != end || !std::isfinite(value)) return std::nullopt;
    return value;
}

/// `digits` decimal digits at `pos` of `s` as a number; advances pos.
std::optional<int> fixed_digits(std::string_view s, std::size_t& pos, std::size_t digits) noexcept {
    if (pos + digits > s.size()) return std::nullopt;
    int value = 0;
    for (std::size_t i = 0; i < digits; ++i) {
        const char c = s[pos + i];
        if (!text::is_digit(c)) return std::nullopt;
        value = value * 10 + (c - '0');
    }
    pos += digits;
    return value;
}

bool expect(std::string_view s, std::size_t& pos, char c) noexcept {
    if (pos >= s.size() || s[pos] != c) return false;
    ++pos;
    return true;
}

}  // namespace

void split_fields(std::string_view line, char delim, std::vector<std::string_view>& out) {
    out.clear();
    std::size_t pos = 0;
    while (true) {
        std::size_t end = 0;
        std::string_view field;
        const auto start = line.find_first_not_of(" \t", pos);
        if (start != std::string_view::npos && line[start] == '"') {
            // A quoted field runs to the next quote that is not doubled.
            std::size_t close = start + 1;
            while (true) {
                close = line.find('"', close);
                if (close == std::string_view::npos || close + 1 >= line.size() || line[close + 1] != '"') break;
                close += 2;
            }
            if (close == std::string_view::npos) close = line.size();
            field = line.substr(start + 1, close - start - 1);
            end = std::min(line.find(delim, close), line.size());
        } else {
            end = std::min(line.find(delim, pos), line.size());
            field = text::trim(line.substr(pos, end - pos));
        }
        out.push_back(field);
        if (end >= line.size()) break;
        pos = end + 1;
    }
}

bool iequals(std::string_view a, std::string_view b) noexcept {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

Header::Header(std::string_view line, char delim) {
    // A UTF-8 byte order mark is not part of the first name.
    if (line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);
    std::vector<std::string_view> fields;
    split_fields(line, delim, fields);
    names_.reserve(fields.size());
    for (const auto f : fields)
        names_.emplace_back(f);
}

std::optional<std::size_t> Header::find(std::string_view name) const {
    for (std::size_t i = 0; i < names_.size(); ++i)
        if (iequals(names_[i], name)) return i;
    return std::nullopt;
}

double number(std::string_view text, std::string_view column) {
    if (text.empty()) throw missing(column);
    if (const auto v = full_double(text)) return *v;
    throw RowError{"unparsable number",
                   fmt::format("column {}: expected a number, got {}", quote(column), quote(text))};
}

double duration(std::string_view text, std::string_view column) {
    const double v = number(text, column);
    if (v < 0) {
        throw RowError{
            "negative duration",
            fmt::format("column {}: expected a non-negative duration in seconds, got {}", quote(column), quote(text))};
    }
    return v;
}

int count(std::string_view text, std::string_view column, std::string_view what) {
    if (text.empty()) throw missing(column);
    std::int64_t value = 0;
    const auto* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc() || ptr != end) {
        // "8.0" is a whole count written as a float; "1.5" is not a count at all.
        const auto v = full_double(text);
        if (!v) {
            throw RowError{"unparsable number",
                           fmt::format("column {}: expected a whole {}, got {}", quote(column), what, quote(text))};
        }
        if (std::floor(*v) != *v) {
            throw RowError{"non-integer GPU count",
                           fmt::format("column {}: expected a whole {}, got {}", quote(column), what, quote(text))};
        }
        value = *v < 0 ? -1 : (*v > static_cast<double>(max_gpus) ? max_gpus + 1 : static_cast<std::int64_t>(*v));
    }
    if (value < 0) {
        throw RowError{"negative GPU count",
                       fmt::format("column {}: expected a non-negative {}, got {}", quote(column), what, quote(text))};
    }
    if (value > max_gpus) {
        throw RowError{"GPU count out of range", fmt::format("column {}: {} {} is out of range (at most {})",
                                                             quote(column), what, text, max_gpus)};
    }
    return static_cast<int>(value);
}

std::optional<double> parse_datetime(std::string_view s) noexcept {
    std::size_t pos = 0;
    const auto y = fixed_digits(s, pos, 4);
    if (!y || !expect(s, pos, '-')) return std::nullopt;
    const auto mo = fixed_digits(s, pos, 2);
    if (!mo || !expect(s, pos, '-')) return std::nullopt;
    const auto d = fixed_digits(s, pos, 2);
    if (!d || !(expect(s, pos, ' ') || expect(s, pos, 'T'))) return std::nullopt;
    const auto h = fixed_digits(s, pos, 2);
    if (!h || !expect(s, pos, ':')) return std::nullopt;
    const auto mi = fixed_digits(s, pos, 2);
    if (!mi || !expect(s, pos, ':')) return std::nullopt;
    const auto sec = fixed_digits(s, pos, 2);
    if (!sec) return std::nullopt;
    double fraction = 0;
    if (pos < s.size()) {
        if (s[pos] != '.' || pos + 1 >= s.size()) return std::nullopt;
        const auto f = full_double(s.substr(pos));  // ".25"
        if (!f || s.substr(pos + 1).find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
        fraction = *f;
    }
    using namespace std::chrono;
    const year_month_day date{year{*y}, month{static_cast<unsigned>(*mo)}, day{static_cast<unsigned>(*d)}};
    if (!date.ok() || *h > 23 || *mi > 59 || *sec > 60) return std::nullopt;
    const auto days = sys_days{date}.time_since_epoch().count();
    return static_cast<double>(days) * 86400.0 + *h * 3600.0 + *mi * 60.0 + *sec + fraction;
}

double time_point(std::string_view text, std::string_view column) {
    if (text.empty()) throw missing(column);
    if (const auto t = parse_datetime(text)) return *t;
    if (const auto v = full_double(text)) return *v;
    throw RowError{"bad time", fmt::format("column {}: expected a time (YYYY-MM-DD HH:MM:SS or seconds), got {}",
                                           quote(column), quote(text))};
}

}  // namespace gpuops::placement::trace_fields
