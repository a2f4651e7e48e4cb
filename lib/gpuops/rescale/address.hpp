// Coordinator addresses as operators write them ("127.0.0.1:7100", "[::1]:7100", "7100"), parsed and printed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpuops::rescale {

/// The loopback address a coordinator listens on, and a client connects to, unless told otherwise.
inline constexpr std::string_view default_host = "127.0.0.1";
inline constexpr std::uint16_t default_port = 7100;

struct HostPort {
    std::string host{default_host};
    std::uint16_t port = default_port;  ///< 0 when listening: the system picks a free port
    bool operator==(const HostPort&) const = default;
};

/// "HOST:PORT", "[IPv6]:PORT", or a bare "PORT" (on the default host). DataError with the reason otherwise;
/// the caller names the option.
[[nodiscard]] HostPort parse_host_port(std::string_view text);
/// The inverse of parse_host_port: brackets around an IPv6 host.
[[nodiscard]] std::string to_string(const HostPort& address);

}  // namespace gpuops::rescale
