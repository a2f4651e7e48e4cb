// What the admin commands print: the coordinator's state after the command, as a gpuops document or as text.
#pragma once

#include <string>
#include <string_view>

#include "gpuops/core/json_io.hpp"
#include "gpuops/rescale/protocol.hpp"

namespace gpuops::rescale {

inline constexpr std::string_view status_schema = "gpuops.rescale-status";
inline constexpr int status_schema_version = 1;

/// The header, the coordinator's message for the command, then the status fields (job, epoch, size, phase, ...,
/// members) as the coordinator sent them. For an accepted command only.
[[nodiscard]] json_io::Json admin_report_json(const AdminReply& reply, std::string_view tool);
/// The same for people: the message, a summary line, the transition in flight, and a member table.
[[nodiscard]] std::string admin_report_text(const AdminReply& reply);

}  // namespace gpuops::rescale
