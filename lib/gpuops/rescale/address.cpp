// Parsing and printing of coordinator addresses.
#include "gpuops/rescale/address.hpp"

#include <charconv>
#include <system_error>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"

namespace gpuops::rescale {
namespace {

std::uint16_t parse_port(std::string_view text, std::string_view whole) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value > 65535) {
        throw DataError(fmt::format("expected HOST:PORT with a port from 0 to 65535, got {}", quote(whole)));
    }
    return static_cast<std::uint16_t>(value);
}

}  // namespace

HostPort parse_host_port(std::string_view text) {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return {std::string(default_host), parse_port(text, text)};
    std::string_view host = text.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    } else if (host.find(':') != std::string_view::npos) {
        throw DataError(fmt::format("an IPv6 address needs brackets, as in [::1]:7100, got {}", quote(text)));
    }
    if (host.empty()) throw DataError(fmt::format("expected HOST:PORT, got {}", quote(text)));
    return {std::string(host), parse_port(text.substr(colon + 1), text)};
}

std::string to_string(const HostPort& address) {
    if (address.host.find(':') != std::string::npos) return fmt::format("[{}]:{}", address.host, address.port);
    return fmt::format("{}:{}", address.host, address.port);
}

}  // namespace gpuops::rescale
