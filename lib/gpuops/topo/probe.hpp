// What vp-probe does, as a library call: pick a source, import it, compose a cluster, apply calibration.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuops/topo/topology.hpp"

namespace gpuops::topo {

struct ProbeOptions {
    std::string document;  ///< a gpuops.topology document ("-" = stdin); empty = none
    std::string xml;       ///< hwloc XML file
    std::string nccl_xml;  ///< NCCL topology XML file
    std::string preset;    ///< preset name, or a path to a preset spec (*.json)
    std::optional<int> nodes;
    std::string fabric;  ///< e.g. nonblocking:400Gb/s
    std::string hosts;   ///< Slurm hostlist naming the nodes
    std::string links;   ///< gpuops.links calibration file
};

struct ProbeResult {
    Topology topology;
    std::vector<std::string> warnings;
};

/// Runs the probe. Without a source it discovers this machine with hwloc.
/// Throws UsageError for conflicting options and DataError/InputMissingError for bad inputs.
[[nodiscard]] ProbeResult probe(const ProbeOptions& options);

/// Renders for --format: json, text, dot or gres-conf. `tool` names the generator.
[[nodiscard]] std::string render(const Topology& topology, std::string_view format, bool compact,
                                 std::string_view tool);

}  // namespace gpuops::topo
