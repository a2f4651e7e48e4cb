// Calibration overrides (--links FILE, schema gpuops.links): measured bandwidth/latency replace the defaults.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuops/core/json_io.hpp"
#include "gpuops/topo/topology.hpp"

namespace gpuops::topo {

inline constexpr std::string_view links_schema = "gpuops.links";
inline constexpr int links_schema_version = 1;

/// One rule: which links it matches (every given field must match) and what it sets.
struct LinkRule {
    std::optional<LinkKind> kind;
    std::optional<int> gen;
    std::optional<int> width;
    std::optional<std::pair<std::string, std::string>> between;  ///< device names, either order, any node
    std::optional<double> bandwidth;                             ///< bytes/s
    std::optional<double> latency_us;
    std::string pointer;  ///< where the rule is in its document, for messages
};

/// Parses a gpuops.links document. Errors carry the JSON pointer.
[[nodiscard]] std::vector<LinkRule> parse_link_rules(const json_io::Json& doc);

/// Applies rules in order (a later rule wins). Returns one warning per rule that matched no link.
[[nodiscard]] std::vector<std::string> apply_link_rules(Topology& topology, const std::vector<LinkRule>& rules,
                                                        std::string_view origin);

}  // namespace gpuops::topo
