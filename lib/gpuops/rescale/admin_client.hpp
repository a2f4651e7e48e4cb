// The admin side of the protocol (rescale-coord status, shrink, ...): one command to a running coordinator, one
// reply back, over a short-lived connection on the workers' port.
#pragma once

#include <chrono>

#include "gpuops/rescale/address.hpp"
#include "gpuops/rescale/protocol.hpp"

namespace gpuops::rescale {

/// Sends `command` (with its admin token set) to the coordinator at `coord` and waits for the answer, at most
/// `timeout` for connecting, sending and receiving together. An ERROR answer (BAD_TOKEN, say) comes back as
/// AdminReply{ok = false, code, msg}. Throws UnavailableError (69) when the coordinator cannot be reached or
/// hangs up without answering, TimeoutError (75) when it does not answer in time, DataError (65) when the answer
/// is not a protocol line.
[[nodiscard]] AdminReply request_admin(const HostPort& coord, const AdminCommand& command,
                                       std::chrono::milliseconds timeout);

/// An interruption notice from an agent on the instance (with the job token): the coordinator's answer, ok when
/// the notice was taken; an ERROR (no such worker, a wrong token) comes back as a reply that is not ok.
[[nodiscard]] AdminReply send_notice(const HostPort& coord, const Notice& notice, std::chrono::milliseconds timeout);

}  // namespace gpuops::rescale
