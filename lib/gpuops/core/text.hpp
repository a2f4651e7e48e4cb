// Small text helpers shared by the parsers (units, hostlists, XML attributes, sysfs files).
#pragma once

#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>

namespace gpuops::text {

/// ASCII whitespace only: parsers of operator input must not depend on the locale.
[[nodiscard]] constexpr bool is_space(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
[[nodiscard]] constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

/// `s` without leading and trailing ASCII whitespace.
[[nodiscard]] constexpr std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && is_space(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && is_space(s.back()))
        s.remove_suffix(1);
    return s;
}

/// The integer at the start of `s` ("2.0" gives 2, "85" gives 85); nullopt when it does not start with one.
[[nodiscard]] inline std::optional<int> leading_int(std::string_view s) noexcept {
    int value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || end == s.data()) return std::nullopt;
    return value;
}

}  // namespace gpuops::text
