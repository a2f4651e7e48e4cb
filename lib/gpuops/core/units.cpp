// Parsing and printing of bandwidths, PCIe links, sizes and durations, exactly where exactness is possible.
#include "gpuops/core/units.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <system_error>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"
#include "gpuops/core/text.hpp"

namespace gpuops::units {
namespace {

constexpr std::string_view bandwidth_hint = "expected a number and a unit such as 25GB/s or 200Gb/s";
constexpr std::string_view size_hint = "expected a number and an optional unit such as 4096, 64K, 1.5MiB or 1GB";
constexpr std::string_view duration_hint = "expected a number and a unit such as 30s, 250ms or 1m30s";
constexpr std::string_view pcie_hint = "expected a speed and a width such as 16GT/s x16 or Gen4 x16";

using text::is_digit;
using text::is_space;
using text::trim;

void skip_spaces(std::string_view& rest) {
    while (!rest.empty() && is_space(rest.front()))
        rest.remove_prefix(1);
}

bool take_prefix(std::string_view& rest, std::string_view prefix) {
    if (!rest.starts_with(prefix)) return false;
    rest.remove_prefix(prefix.size());
    return true;
}

[[noreturn]] void fail(std::string_view what, std::string_view text, std::string_view detail) {
    throw DataError(fmt::format("invalid {} {} ({})", what, quote(text), detail));
}

/// A non-negative decimal as typed: digits, then optionally '.' and more digits. No sign, no exponent.
struct Decimal {
    std::string_view text;
    std::string_view whole;
    std::string_view fraction;
};

/// Takes a decimal from the front of `rest`; absent (and `rest` untouched) when `rest` does not start with one.
std::optional<Decimal> take_decimal(std::string_view& rest) {
    std::size_t n = 0;
    while (n < rest.size() && is_digit(rest[n]))
        ++n;
    if (n == 0) return std::nullopt;
    Decimal d;
    d.whole = rest.substr(0, n);
    if (n + 1 < rest.size() && rest[n] == '.' && is_digit(rest[n + 1])) {
        std::size_t end = n + 1;
        while (end < rest.size() && is_digit(rest[end]))
            ++end;
        d.fraction = rest.substr(n + 1, end - n - 1);
        n = end;
    }
    d.text = rest.substr(0, n);
    rest.remove_prefix(n);
    return d;
}

/// The value of a run of digits; absent when it does not fit in 64 bits.
std::optional<std::uint64_t> digits_value(std::string_view digits) {
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
    return value;
}

/// The nearest double; absent when it is out of range.
std::optional<double> decimal_value(const Decimal& d) {
    double value = 0;
    auto [end, ec] = std::from_chars(d.text.data(), d.text.data() + d.text.size(), value);
    if (ec != std::errc{} || end != d.text.data() + d.text.size() || !std::isfinite(value)) return std::nullopt;
    return value;
}

bool checked_mul(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
    if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return false;
    out = a * b;
    return true;
}

bool checked_add(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
    if (b > std::numeric_limits<std::uint64_t>::max() - a) return false;
    out = a + b;
    return true;
}

std::uint64_t pow_u64(std::uint64_t base, int exponent) {
    std::uint64_t out = 1;
    for (int i = 0; i < exponent; ++i)
        out *= base;
    return out;
}

/// At most 4 significant digits, no trailing zeros, never an exponent for the values we print (>= 1e-4).
std::string significant(double v) {
    if (v >= 1e4) return fmt::format("{:.0f}", v);
    return fmt::format("{:.4g}", v);
}

/// The number `significant` printed, to see whether rounding carried into the next unit.
double printed_value(const std::string& text) {
    double value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value);
    return value;
}

/// `v` in the largest unit that keeps it at least 1, where each unit is `step` times the previous one.
std::string scaled(double v, double step, std::span<const std::string_view> names) {
    std::size_t i = 0;
    double unit = 1;
    while (i + 1 < names.size() && v >= unit * step) {
        unit *= step;
        ++i;
    }
    std::string text = significant(v / unit);
    if (i + 1 < names.size() && printed_value(text) >= step) {
        unit *= step;
        ++i;
        text = significant(v / unit);
    }
    return text + " " + std::string(names[i]);
}

char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
char ascii_upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }

/// Bytes per unit of a size; 0 when the unit is unknown. Bare letters are binary in either case (dd, OSU and
/// nccl-tests read 64K and 64k as 65536); "<letter>B" is SI and "<letter>iB" IEC, upper case but for k.
std::uint64_t size_multiplier(std::string_view unit) {
    if (unit.empty() || unit == "B") return 1;
    constexpr std::string_view letters = "KMGTPE";
    const char first = unit.front();
    const std::string_view tail = unit.substr(1);
    if (tail.empty()) {
        const auto power = letters.find(ascii_upper(first));
        return power == std::string_view::npos ? 0 : pow_u64(1024, static_cast<int>(power) + 1);
    }
    const auto power = letters.find(first == 'k' ? 'K' : first);
    if (power == std::string_view::npos) return 0;
    if (tail == "iB") return pow_u64(1024, static_cast<int>(power) + 1);
    if (tail == "B") return pow_u64(1000, static_cast<int>(power) + 1);
    return 0;
}

// ---- PCIe tables ----

struct PcieGeneration {
    int gen;
    double gts;
    double encoding;  ///< payload bits per line bit
};

constexpr std::array<PcieGeneration, 7> pcie_generations{{
    {1, 2.5, 8.0 / 10.0},
    {2, 5.0, 8.0 / 10.0},
    {3, 8.0, 128.0 / 130.0},
    {4, 16.0, 128.0 / 130.0},
    {5, 32.0, 128.0 / 130.0},
    {6, 64.0, 242.0 / 256.0},
    {7, 128.0, 242.0 / 256.0},
}};

constexpr std::array<int, 7> pcie_widths{1, 2, 4, 8, 12, 16, 32};

const PcieGeneration* find_generation(int gen) {
    for (const auto& g : pcie_generations)
        if (g.gen == gen) return &g;
    return nullptr;
}

bool is_pcie_separator(char c) { return is_space(c) || c == ','; }

void skip_pcie_separators(std::string_view& rest) {
    while (!rest.empty() && is_pcie_separator(rest.front()))
        rest.remove_prefix(1);
}

// ---- durations ----

struct DurationUnit {
    std::string_view name;
    std::int64_t ns;
};

constexpr std::array<DurationUnit, 8> duration_units{{
    {"ns", 1},
    {"us", 1'000},
    {"\xC2\xB5s", 1'000},  // MICRO SIGN
    {"\xCE\xBCs", 1'000},  // GREEK SMALL LETTER MU
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
}};

/// Nanoseconds in `d` units of `unit_ns`, rounded; absent when that does not fit in an int64.
std::optional<std::int64_t> component_ns(const Decimal& d, std::int64_t unit_ns) {
    const auto whole = digits_value(d.whole);
    if (!whole || *whole > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max() / unit_ns))
        return std::nullopt;
    std::int64_t total = static_cast<std::int64_t>(*whole) * unit_ns;
    // Digits past the 18th change the result by far less than a nanosecond.
    const std::string_view fraction = d.fraction.substr(0, 18);
    if (!fraction.empty()) {
        const std::uint64_t numerator = digits_value(fraction).value_or(0);
        const std::uint64_t denominator = pow_u64(10, static_cast<int>(fraction.size()));
        const long double part = static_cast<long double>(numerator) * static_cast<long double>(unit_ns) /
                                 static_cast<long double>(denominator);
        const std::int64_t rounded = std::llround(part);
        if (rounded > std::numeric_limits<std::int64_t>::max() - total) return std::nullopt;
        total += rounded;
    }
    return total;
}

}  // namespace

// ---- bandwidth ------------------------------------------------------------------------------------------------

double parse_bandwidth(std::string_view text) {
    const std::string_view t = trim(text);
    if (t.starts_with('-')) fail("bandwidth", text, "must be greater than zero");
    std::string_view rest = t;
    const auto number = take_decimal(rest);
    if (!number) fail("bandwidth", text, bandwidth_hint);
    skip_spaces(rest);

    double multiplier = 1;
    constexpr std::string_view prefixes = "kKMGTP";
    if (!rest.empty()) {
        if (const auto p = prefixes.find(rest.front()); p != std::string_view::npos) {
            const int power = p == 0 ? 1 : static_cast<int>(p);  // k and K are both kilo
            rest.remove_prefix(1);
            const bool binary = take_prefix(rest, "i");
            multiplier = std::pow(binary ? 1024.0 : 1000.0, power);
        }
    }
    const bool bytes = rest == "B/s" || rest == "Bps";
    const bool bits = rest == "b/s" || rest == "bps" || rest == "bit/s" || rest == "bits/s";
    if (!bytes && !bits) fail("bandwidth", text, bandwidth_hint);
    if (bits) multiplier /= 8;

    const auto value = decimal_value(*number);
    if (!value) fail("bandwidth", text, "too large");
    const double bytes_per_s = *value * multiplier;
    if (!std::isfinite(bytes_per_s)) fail("bandwidth", text, "too large");
    if (bytes_per_s <= 0) fail("bandwidth", text, "must be greater than zero");
    return bytes_per_s;
}

std::string format_bandwidth(double bytes_per_s) {
    if (!std::isfinite(bytes_per_s)) return "n/a";
    if (bytes_per_s < 0) return "-" + format_bandwidth(-bytes_per_s);
    static constexpr std::array<std::string_view, 7> names{"B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s", "EB/s"};
    return scaled(bytes_per_s, 1000.0, names);
}

// ---- PCIe links -----------------------------------------------------------------------------------------------

double pcie_gts_for_gen(int gen) noexcept {
    const PcieGeneration* g = find_generation(gen);
    return g ? g->gts : 0.0;
}

int pcie_gen_for_gts(double gts) noexcept {
    for (const auto& g : pcie_generations)
        if (std::fabs(gts - g.gts) <= g.gts * 0.02) return g.gen;
    return 0;
}

double pcie_raw_bandwidth(int gen, int width) noexcept {
    const PcieGeneration* g = find_generation(gen);
    if (!g || width <= 0) return 0.0;
    return g->gts * 1e9 * g->encoding / 8.0 * width;
}

PcieLink parse_pcie_link(std::string_view text) {
    std::string lower(trim(text));
    for (char& c : lower)
        c = ascii_lower(c);
    std::string_view rest = lower;

    PcieLink link;
    if (take_prefix(rest, "pcie")) skip_pcie_separators(rest);
    if (take_prefix(rest, "gen")) {
        skip_spaces(rest);
        const auto number = take_decimal(rest);
        if (!number || !number->fraction.empty()) fail("PCIe link", text, pcie_hint);
        const auto gen = digits_value(number->whole);
        if (!gen || !find_generation(static_cast<int>(std::min<std::uint64_t>(*gen, 1000))))
            fail("PCIe link", text, fmt::format("unknown PCIe generation {}", number->whole));
        link.gen = static_cast<int>(*gen);
    } else {
        const auto number = take_decimal(rest);
        if (!number) fail("PCIe link", text, pcie_hint);
        skip_spaces(rest);
        if (!take_prefix(rest, "gt/s")) fail("PCIe link", text, pcie_hint);
        link.gen = pcie_gen_for_gts(decimal_value(*number).value_or(0.0));
        if (link.gen == 0) fail("PCIe link", text, fmt::format("unknown PCIe speed {}GT/s", number->text));
    }
    link.gts = pcie_gts_for_gen(link.gen);

    skip_pcie_separators(rest);
    if (take_prefix(rest, "pcie")) {
        take_prefix(rest, "/s");  // NCCL's topology dump writes "32 GT/s PCIe/s x16"
        skip_pcie_separators(rest);
    }
    if (take_prefix(rest, "x")) {
        const auto number = take_decimal(rest);
        if (!number || !number->fraction.empty()) fail("PCIe link", text, pcie_hint);
        const auto width = digits_value(number->whole);
        bool known = false;
        for (int w : pcie_widths)
            known = known || (width && *width == static_cast<std::uint64_t>(w));
        if (!known)
            fail("PCIe link", text,
                 fmt::format("unsupported link width x{}; expected x1, x2, x4, x8, x12, x16 or x32", number->whole));
        link.width = static_cast<int>(*width);
        skip_pcie_separators(rest);
    }
    if (!rest.empty()) fail("PCIe link", text, pcie_hint);
    return link;
}

std::string format_pcie_link(const PcieLink& link) {
    const double gts = link.gts > 0 ? link.gts : pcie_gts_for_gen(link.gen);
    if (!(gts > 0) || !std::isfinite(gts)) return "unknown";
    std::string out = significant(gts) + "GT/s";
    if (link.width > 0) out += fmt::format(" x{}", link.width);
    return out;
}

// ---- sizes ----------------------------------------------------------------------------------------------------

std::uint64_t parse_size(std::string_view text) {
    const std::string_view t = trim(text);
    if (t.starts_with('-')) fail("size", text, "must not be negative");
    std::string_view rest = t;
    const auto number = take_decimal(rest);
    if (!number) fail("size", text, size_hint);
    skip_spaces(rest);

    const std::uint64_t multiplier = size_multiplier(rest);
    if (multiplier == 0) fail("size", text, size_hint);

    const auto whole = digits_value(number->whole);
    std::uint64_t bytes = 0;
    if (!whole || !checked_mul(*whole, multiplier, bytes)) fail("size", text, "too large; the maximum is 2^64-1 bytes");

    std::string_view fraction = number->fraction;
    while (!fraction.empty() && fraction.back() == '0')
        fraction.remove_suffix(1);
    if (!fraction.empty()) {
        // bytes += fraction / 10^n * multiplier, exactly: reduce by the common factor, then require divisibility.
        if (fraction.size() > 19) fail("size", text, "too many decimal places");
        const std::uint64_t numerator = *digits_value(fraction);
        const std::uint64_t denominator = pow_u64(10, static_cast<int>(fraction.size()));
        const std::uint64_t common = std::gcd(multiplier, denominator);
        const std::uint64_t reduced_denominator = denominator / common;
        if (numerator % reduced_denominator != 0) fail("size", text, "not a whole number of bytes");
        std::uint64_t part = 0;
        if (!checked_mul(numerator / reduced_denominator, multiplier / common, part) ||
            !checked_add(bytes, part, bytes))
            fail("size", text, "too large; the maximum is 2^64-1 bytes");
    }
    return bytes;
}

std::string format_size(std::uint64_t bytes) {
    static constexpr std::array<std::string_view, 7> names{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    return scaled(static_cast<double>(bytes), 1024.0, names);
}

// ---- durations ------------------------------------------------------------------------------------------------

std::chrono::nanoseconds parse_duration(std::string_view text) {
    const std::string_view t = trim(text);
    if (t.starts_with('-')) fail("duration", text, "must not be negative");
    if (t.empty()) fail("duration", text, duration_hint);

    std::string_view rest = t;
    std::int64_t total = 0;
    bool first = true;
    while (!rest.empty()) {  // every pass consumes at least one digit
        skip_spaces(rest);
        const auto number = take_decimal(rest);
        if (!number) fail("duration", text, duration_hint);
        skip_spaces(rest);
        std::size_t unit_length = 0;
        while (unit_length < rest.size() && !is_digit(rest[unit_length]) && !is_space(rest[unit_length]) &&
               rest[unit_length] != '.')
            ++unit_length;
        const std::string_view unit = rest.substr(0, unit_length);
        rest.remove_prefix(unit_length);

        std::int64_t unit_ns = 0;
        if (unit.empty()) {
            if (!first || !rest.empty()) fail("duration", text, duration_hint);  // "1m30" is ambiguous
            unit_ns = 1'000'000'000;
        }
        for (const auto& u : duration_units)
            if (u.name == unit) unit_ns = u.ns;
        if (unit_ns == 0) fail("duration", text, duration_hint);

        const auto ns = component_ns(*number, unit_ns);
        if (!ns || *ns > std::numeric_limits<std::int64_t>::max() - total)
            fail("duration", text, "too long; the maximum is 2562047h47m16s");
        total += *ns;
        first = false;
    }
    return std::chrono::nanoseconds(total);
}

std::string format_duration(std::chrono::nanoseconds duration) {
    const std::int64_t count = duration.count();
    if (count == 0) return "0s";
    if (count < 0) {
        // -(count + 1) + 1 avoids overflowing on the most negative count.
        const std::uint64_t magnitude = static_cast<std::uint64_t>(-(count + 1)) + 1;
        if (magnitude <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            return "-" + format_duration(std::chrono::nanoseconds(static_cast<std::int64_t>(magnitude)));
        return "-" + format_duration(std::chrono::nanoseconds::max());  // one nanosecond off, invisibly
    }
    const auto ns = static_cast<std::uint64_t>(count);
    if (ns < 1'000) return fmt::format("{}ns", ns);

    struct Step {
        std::string_view name;
        double unit_ns;
        double limit;  ///< where the next unit takes over
    };
    static constexpr std::array<Step, 3> steps{{{"us", 1e3, 1000}, {"ms", 1e6, 1000}, {"s", 1e9, 60}}};
    for (const auto& step : steps) {
        if (static_cast<double>(ns) >= step.unit_ns * step.limit) continue;
        std::string text = significant(static_cast<double>(ns) / step.unit_ns);
        if (printed_value(text) < step.limit) return text + std::string(step.name);
    }

    const std::uint64_t seconds = (ns + 500'000'000) / 1'000'000'000;
    std::string out;
    if (const auto h = seconds / 3600; h > 0) out += fmt::format("{}h", h);
    if (const auto m = seconds % 3600 / 60; m > 0) out += fmt::format("{}m", m);
    if (const auto s = seconds % 60; s > 0) out += fmt::format("{}s", s);
    return out;
}

}  // namespace gpuops::units
