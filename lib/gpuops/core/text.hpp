// Small text helpers shared by the parsers (units, hostlists, XML attributes, sysfs files).
#pragma once

#include <string_view>

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

}  // namespace gpuops::text
