// What `rescale-coord spot-agent` does with a notice the poller found: forward it to the coordinator as a NOTICE
// for the worker on this instance, with the time left until the cloud's deadline.
#pragma once

#include <chrono>
#include <string>

#include "gpuops/rescale/address.hpp"
#include "gpuops/rescale/spot_notice.hpp"

namespace gpuops::rescale {

struct NoticeForwarder {
    HostPort coord;
    std::string token;      ///< the job token: the agent has no member connection
    std::string worker_id;  ///< the worker on this instance, as it registered
    std::chrono::milliseconds timeout{10'000};
};

/// Sends the NOTICE and returns the coordinator's answer (what it will drain). Throws UnavailableError when the
/// coordinator refuses it, so that the poller offers the notice again at its next poll and acknowledges nothing.
std::string forward_notice(const NoticeForwarder& forwarder, const SpotNotice& notice);

}  // namespace gpuops::rescale
