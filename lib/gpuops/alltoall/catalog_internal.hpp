// Internal to the catalog's sources (catalog.cpp, catalog_document.cpp, catalog_check.cpp): the names they
// share and the small helpers the build, the document and the checker all use.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpuops/alltoall/catalog.hpp"
#include "gpuops/core/json_io.hpp"
#include "gpuops/topo/routing.hpp"

namespace gpuops::alltoall::catalog_detail {

using json_io::Json;
using json_io::View;
using topo::DeviceId;
using topo::DeviceKind;
using topo::EdgeId;
using topo::LinkId;
using topo::LinkKind;
using topo::PathKind;
using topo::Topology;

constexpr double exact_limit = 9007199254740992.0;  // 2^53

/// 10^x, or infinity beyond a double.
[[nodiscard]] double from_log10(double x);
/// x rounded to an integer when it is below 2^53 (where a double counts exactly).
[[nodiscard]] double round_if_exact(double x);
/// GB/s (1e9 bytes/s) to a millionth, for documents.
[[nodiscard]] double gbytes(double bytes_per_s);
/// A count for documents: the number, or null when it does not fit a double.
[[nodiscard]] Json count_json(double x);
/// "1234", or "1.23e+45" beyond 2^53.
[[nodiscard]] std::string count_text(double x, double log10);
/// "gpu0>sw0": a directed edge by its ends.
[[nodiscard]] std::string edge_text(const Topology& t, EdgeId e);
/// Labels joined by commas.
[[nodiscard]] std::string join_names(const Topology& t, std::span<const DeviceId> ids);
/// Whether every port of the class sends one flow and receives one.
[[nodiscard]] bool saturates_ports(const DomainClass& c, std::span<const FlowId> channel);
/// Per edge class of the class: how many of its edges the channel uses.
[[nodiscard]] std::vector<std::uint32_t> shape_of(const DomainClass& c, std::span<const FlowId> channel,
                                                  const std::unordered_map<EdgeId, std::uint32_t>& class_of_edge);
/// Edge id → index of its edge class.
[[nodiscard]] std::unordered_map<EdgeId, std::uint32_t> edge_class_index(const DomainClass& c);
/// The rate of the channel's slowest flow (bytes/s).
[[nodiscard]] double channel_rate(const DomainClass& c, std::span<const FlowId> channel);
/// "gpu0->gpu1 (nic_loopback via nic0)".
[[nodiscard]] std::string flow_text(const Topology& t, const Flow& f);
/// Whether a path could still run beside a channel (its ends free, its edges unused): why not, or nullopt.
[[nodiscard]] std::optional<std::string> blocked(const std::vector<bool>& sending, const std::vector<bool>& receiving,
                                                 const std::vector<bool>& used, const topo::Path& path);

}  // namespace gpuops::alltoall::catalog_detail
