// Coordinator addresses: HOST:PORT, [IPv6]:PORT, a bare port, and what is refused.
#include <catch2/catch.hpp>

#include "gpuops/core/error.hpp"
#include "gpuops/rescale/address.hpp"

using namespace gpuops::rescale;

TEST_CASE("address: host and port, bracketed IPv6, and a bare port on the loopback") {
    CHECK(parse_host_port("10.0.0.5:7100") == HostPort{"10.0.0.5", 7100});
    CHECK(parse_host_port("coord.example:0") == HostPort{"coord.example", 0});
    CHECK(parse_host_port("[::1]:65535") == HostPort{"::1", 65535});
    CHECK(parse_host_port("7200") == HostPort{"127.0.0.1", 7200});
    CHECK(to_string(HostPort{"::1", 80}) == "[::1]:80");
    CHECK(to_string(parse_host_port("127.0.0.1:9")) == "127.0.0.1:9");
}

TEST_CASE("address: a bad port, an empty host or an unbracketed IPv6 address is refused") {
    for (const char* bad : {"host:", "host:65536", "host:-1", "host:7x", ":7100", "::1:7100", "", "host"}) {
        INFO(bad);
        CHECK_THROWS_AS(parse_host_port(bad), gpuops::DataError);
    }
}
