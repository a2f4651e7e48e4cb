// Polls a cloud metadata server for spot interruption notices and hands each new notice to a callback once.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpuops/core/error.hpp"
#include "gpuops/rescale/spot_notice.hpp"

namespace gpuops::rescale {

/// Where the provider's metadata server answers from inside an instance: `http://169.254.169.254` for AWS and
/// Azure, `http://metadata.google.internal` for GCP.
[[nodiscard]] std::string_view default_metadata_url(Provider provider);

struct PollerOptions {
    Provider provider = Provider::aws;
    std::string metadata_url;  ///< base URL (scheme, host, port); empty means default_metadata_url(provider)
    /// Between the end of one poll and the start of the next. AWS recommends 5 s; research/rescale.md §2.6 polls
    /// every second because detection latency eats into a 30 s notice.
    std::chrono::milliseconds interval{1000};
    std::chrono::milliseconds request_timeout{2000};  ///< per HTTP request, connecting included
    std::chrono::seconds aws_token_ttl{21600};        ///< IMDSv2 session token lifetime to ask for (1 s to 6 h)
    /// Azure: POST StartRequests for a notice once the callback returned. That lets Azure evict before NotBefore,
    /// so the callback must return only when this VM may go.
    bool azure_acknowledge = false;
    std::string azure_vm_name;  ///< keep only Azure events for this VM (NoticeContext::azure_vm_name)
};

/// The poller's view of time, replaceable so tests neither wait nor depend on the wall clock.
struct PollerClock {
    std::function<void(std::chrono::milliseconds)> sleep;  ///< empty: std::this_thread::sleep_for
    std::function<UtcTime()> now;                          ///< empty: std::chrono::system_clock::now
};

using NoticeHandler = std::function<void(const SpotNotice&)>;
/// Receives every failed poll, failed callback and failed acknowledgement; the poller keeps going.
using PollErrorHandler = std::function<void(const Error&)>;

class MetadataPoller {
public:
    /// Throws UsageError for a timeout that is not positive, a negative interval or a token lifetime outside
    /// 1 s to 6 h.
    explicit MetadataPoller(PollerOptions options, PollerClock clock = {});

    /// One look at the metadata server: nullopt when there is no notice. For AWS this is the IMDSv2 token PUT
    /// (when no valid token is held) and the instance-action GET; a failed PUT falls back to IMDSv1 until a GET
    /// answers 401, which asks for a token again. Throws UnavailableError (no connection, unexpected status),
    /// TimeoutError (no answer within request_timeout) and DataError (a malformed body).
    [[nodiscard]] std::optional<SpotNotice> poll_once();

    /// poll_once, then `on_notice` for a notice not delivered before, then the Azure acknowledgement when asked
    /// for. A notice counts as delivered only when `on_notice` returned: one that threw is offered again on the
    /// next poll. A failed acknowledgement is retried on the next poll without delivering the notice again.
    /// Every failure goes to `on_error`. Returns whether a notice was delivered.
    bool poll_and_dispatch(const NoticeHandler& on_notice, const PollErrorHandler& on_error);

    /// poll_and_dispatch, then sleep `interval`, until `stop` is set (checked before each poll and each sleep, so
    /// a stop takes effect within one interval plus one request). Returns only on stop, or when `on_error` throws.
    void run(const std::atomic<bool>& stop, const NoticeHandler& on_notice, const PollErrorHandler& on_error);

    /// Azure: POST `{"StartRequests": [{"EventId": ...}]}` for the notice's event. Throws like poll_once, and
    /// UsageError for a notice that is not Azure's.
    void acknowledge(const SpotNotice& notice);

    [[nodiscard]] const PollerOptions& options() const noexcept { return options_; }

private:
    struct AwsToken {
        std::string value;
        UtcTime refresh_at;
    };

    [[nodiscard]] std::string url(std::string_view path) const;
    [[nodiscard]] HttpResponse get(std::string_view path, std::vector<std::string> headers) const;
    [[nodiscard]] HttpResponse get_aws_instance_action();
    [[nodiscard]] std::optional<std::string> aws_token();
    [[nodiscard]] bool wants_acknowledgement(const SpotNotice& notice) const;

    PollerOptions options_;
    PollerClock clock_;
    std::optional<AwsToken> aws_token_;
    bool imds_v1_ = false;  ///< the token PUT failed: GET without a token until a 401 says IMDSv2 is required
    std::set<std::string> delivered_;     ///< SpotNotice::identity of the notices the callback took
    std::set<std::string> acknowledged_;  ///< the same, for Azure acknowledgements that succeeded
};

}  // namespace gpuops::rescale
