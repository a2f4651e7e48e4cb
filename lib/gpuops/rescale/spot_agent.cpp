// forward_notice: a spot notice becomes one NOTICE request with a relative deadline.
#include "gpuops/rescale/spot_agent.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"
#include "gpuops/rescale/admin_client.hpp"

namespace gpuops::rescale {

std::string forward_notice(const NoticeForwarder& forwarder, const SpotNotice& notice) {
    // The coordinator's clock is its own: it gets the lead time, not the cloud's wall-clock deadline.
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(notice.deadline - std::chrono::system_clock::now());
    const AdminReply reply =
        send_notice(forwarder.coord,
                    Notice{forwarder.worker_id, std::string(to_string(notice.provider)),
                           format_rfc3339(notice.deadline), std::max<TimeMs>(left.count(), 0), forwarder.token},
                    forwarder.timeout);
    if (!reply.ok) throw UnavailableError(fmt::format("the coordinator refused the notice: {}", reply.msg));
    return reply.msg;
}

}  // namespace gpuops::rescale
