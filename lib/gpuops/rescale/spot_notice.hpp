// Spot interruption notices of AWS, GCP and Azure: pure parsers from metadata-server responses to one notice.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "gpuops/core/json_io.hpp"

namespace gpuops::rescale {

enum class Provider { aws, gcp, azure };
[[nodiscard]] std::string_view to_string(Provider provider);  ///< "aws", "gcp", "azure"
/// nullopt for an unknown name.
[[nodiscard]] std::optional<Provider> parse_provider(std::string_view name);

/// What the provider is about to do to the instance.
enum class SpotAction {
    terminate,  ///< AWS terminate; Azure Terminate (the VM is deleted, e.g. scale-set scale-in)
    stop,       ///< AWS stop
    hibernate,  ///< AWS hibernate (no two-minute lead: hibernation starts at once)
    preempt,    ///< GCP preemption; Azure Preempt (Spot eviction)
};
[[nodiscard]] std::string_view to_string(SpotAction action);  ///< "terminate", "stop", "hibernate", "preempt"
[[nodiscard]] std::optional<SpotAction> parse_spot_action(std::string_view name);

/// The metadata path (below the server's base URL) that carries `provider`'s notices; also names the source
/// in parse errors.
[[nodiscard]] std::string_view notice_path(Provider provider);

using UtcTime = std::chrono::system_clock::time_point;  ///< system_clock counts Unix time, which is UTC

/// One interruption notice, as the spot agent forwards it (NOTICE in research/rescale.md §6.2).
struct SpotNotice {
    Provider provider = Provider::aws;
    SpotAction action = SpotAction::terminate;
    UtcTime deadline;                 ///< when the instance goes away (at the latest)
    bool deadline_estimated = false;  ///< true when the provider gave no time and the deadline is our estimate
    std::string event_id;             ///< Azure's EventId; empty for AWS and GCP, which have no event ids
    std::string raw;                  ///< the response body the notice came from, as received
    bool operator==(const SpotNotice&) const = default;

    /// What tells two polls of the same notice apart from a new one. Not the deadline alone: GCP's deadline is
    /// re-estimated on every poll, and Azure's body changes whenever an unrelated event comes or goes.
    [[nodiscard]] std::string identity() const;
};

/// `{"provider", "action", "deadline_utc", "deadline_estimated", "event_id", "raw"}`; deadline as RFC 3339.
[[nodiscard]] json_io::Json to_json(const SpotNotice& notice);

/// A metadata-server answer: the HTTP status and the body.
struct HttpResponse {
    long status = 0;
    std::string body;
    bool operator==(const HttpResponse&) const = default;
};

/// GCP gives no time with `preempted=TRUE`: a Spot VM gets 30 s between the ACPI soft-off and the hard stop
/// (research/rescale.md §2.6), so the deadline is estimated as the time of the poll plus that.
inline constexpr std::chrono::seconds gcp_preemption_notice{30};

/// What a parse needs besides the response.
struct NoticeContext {
    UtcTime now;  ///< time of the poll, for GCP's estimated deadline
    /// Azure delivers the events of a whole availability set or scale-set placement group to every VM in it;
    /// with a name, only events whose Resources list it are kept. Empty keeps every event.
    std::string azure_vm_name;
};

/// AWS `GET /latest/meta-data/spot/instance-action`: 404 is "no notice"; 200 carries
/// `{"action": "terminate"|"stop"|"hibernate", "time": "2024-05-01T12:00:00Z"}`.
/// Throws DataError on a malformed body, UnavailableError on another status.
[[nodiscard]] std::optional<SpotNotice> parse_aws_instance_action(const HttpResponse& response);

/// GCP `GET /computeMetadata/v1/instance/preempted`: `TRUE` or `FALSE` (surrounding whitespace ignored).
/// The deadline is `now + gcp_preemption_notice`, marked estimated. Throws DataError on another body,
/// UnavailableError on a status other than 200. (`instance/maintenance-event` is not read: host maintenance
/// announces itself an hour ahead and stops the VM for a while, which is not the loss of a Spot VM.)
[[nodiscard]] std::optional<SpotNotice> parse_gcp_preempted(const HttpResponse& response, UtcTime now);

/// Azure `GET /metadata/scheduledevents`: the earliest `Preempt` or `Terminate` event (for `vm_name`, when given),
/// deadline from its `NotBefore` (RFC 1123, "Mon, 19 Sep 2016 18:29:47 GMT"; empty once the event has Started,
/// when `now` is the deadline). Freeze (a pause of seconds, memory kept), Reboot and Redeploy (the VM comes back)
/// are not interruptions of capacity and are ignored. Throws DataError on a malformed document, naming the JSON
/// pointer, and UnavailableError on a status other than 200.
[[nodiscard]] std::optional<SpotNotice> parse_azure_scheduled_events(const HttpResponse& response,
                                                                     const NoticeContext& context);

/// The parser of `provider`.
[[nodiscard]] std::optional<SpotNotice> parse_notice(Provider provider, const HttpResponse& response,
                                                     const NoticeContext& context);

/// `2024-05-01T12:00:00Z`, optionally with a fraction and a `±HH:MM` offset instead of `Z`. Throws DataError.
[[nodiscard]] UtcTime parse_rfc3339(std::string_view text);
/// `Mon, 19 Sep 2016 18:29:47 GMT` (the HTTP date of RFC 1123; the weekday is checked to be a weekday name
/// but not against the date). Throws DataError.
[[nodiscard]] UtcTime parse_rfc1123(std::string_view text);
/// `2024-05-01T12:00:00Z`, or with milliseconds (`12:00:00.250Z`) when the time has any.
[[nodiscard]] std::string format_rfc3339(UtcTime time);

}  // namespace gpuops::rescale
