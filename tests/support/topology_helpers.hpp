// Test helpers for looking things up in a Topology; REQUIRE-fails the calling test when something is missing.
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "gpuops/topo/topology.hpp"

namespace gpuops::test {

inline std::size_t count(const topo::Topology& t, topo::DeviceKind kind) { return t.devices_of(kind).size(); }

inline const topo::Device& by_bus_id(const topo::Topology& t, const std::string& bus_id, int node = 0) {
    const auto id = t.find_by_bus_id(node, bus_id);
    REQUIRE(id);
    return t.device(*id);
}

inline const topo::Device& by_name(const topo::Topology& t, const std::string& name, int node = 0) {
    const auto id = t.find(node, name);
    REQUIRE(id);
    return t.device(*id);
}

inline const topo::Link& uplink_of(const topo::Topology& t, topo::DeviceId id) {
    const auto link = t.uplink(id);
    REQUIRE(link);
    return t.links.at(*link);
}

}  // namespace gpuops::test
