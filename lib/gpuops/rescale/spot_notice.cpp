// Parsers of the three providers' interruption notices, and the two date formats they use.
#include "gpuops/rescale/spot_notice.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"
#include "gpuops/core/text.hpp"

namespace gpuops::rescale {
namespace {

using namespace std::chrono;

constexpr std::array<std::string_view, 3> provider_names = {"aws", "gcp", "azure"};
constexpr std::array<std::string_view, 4> action_names = {"terminate", "stop", "hibernate", "preempt"};
constexpr std::array<std::string_view, 7> weekday_names = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
constexpr std::array<std::string_view, 12> month_names = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

template <typename Enum, std::size_t N>
std::optional<Enum> enum_from_name(const std::array<std::string_view, N>& names, std::string_view name) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) return std::nullopt;
    return static_cast<Enum>(it - names.begin());
}

// ---- dates ----------------------------------------------------------------------------------------------------

/// Reads exactly `count` decimal digits at `pos`.
std::optional<int> read_digits(std::string_view s, std::size_t& pos, std::size_t count) {
    if (pos + count > s.size()) return std::nullopt;
    int value = 0;
    for (std::size_t i = 0; i < count; ++i) {
        const char c = s[pos + i];
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + (c - '0');
    }
    pos += count;
    return value;
}

bool read_literal(std::string_view s, std::size_t& pos, std::string_view literal) {
    if (s.substr(pos, literal.size()) != literal) return false;
    pos += literal.size();
    return true;
}

bool read_any_of(std::string_view s, std::size_t& pos, std::string_view chars) {
    if (pos >= s.size() || chars.find(s[pos]) == std::string_view::npos) return false;
    ++pos;
    return true;
}

/// Index of the name at `pos` in `names` (all of one length), advancing past it.
template <std::size_t N>
std::optional<int> read_name(std::string_view s, std::size_t& pos, const std::array<std::string_view, N>& names) {
    const std::string_view word = s.substr(pos, names[0].size());
    const auto it = std::find(names.begin(), names.end(), word);
    if (it == names.end()) return std::nullopt;
    pos += word.size();
    return static_cast<int>(it - names.begin());
}

struct CivilTime {
    int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
};

std::optional<sys_seconds> to_sys(const CivilTime& t) {
    const year_month_day date{year{t.year}, month{static_cast<unsigned>(t.month)}, day{static_cast<unsigned>(t.day)}};
    // 60 is a leap second, which both RFCs allow; it lands on the next minute's first second.
    if (!date.ok() || t.hour > 23 || t.minute > 59 || t.second > 60) return std::nullopt;
    return sys_days{date} + hours{t.hour} + minutes{t.minute} + seconds{t.second};
}

/// `HH:MM:SS` into `t`.
bool read_clock(std::string_view s, std::size_t& pos, CivilTime& t) {
    const auto h = read_digits(s, pos, 2);
    if (!h || !read_literal(s, pos, ":")) return false;
    const auto m = read_digits(s, pos, 2);
    if (!m || !read_literal(s, pos, ":")) return false;
    const auto sec = read_digits(s, pos, 2);
    if (!sec) return false;
    t.hour = *h;
    t.minute = *m;
    t.second = *sec;
    return true;
}

/// `.ddd…` after the seconds, as nanoseconds (digits past the ninth are dropped).
std::optional<nanoseconds> read_fraction(std::string_view s, std::size_t& pos) {
    if (!read_literal(s, pos, ".")) return nanoseconds{0};
    std::int64_t ns = 0;
    std::size_t digits = 0;
    for (; pos < s.size() && text::is_digit(s[pos]); ++pos, ++digits) {
        if (digits < 9) ns = ns * 10 + (s[pos] - '0');
    }
    if (digits == 0) return std::nullopt;
    for (; digits < 9; ++digits)
        ns *= 10;
    return nanoseconds{ns};
}

/// `Z` or `±HH:MM`, as the offset to subtract to get UTC.
std::optional<minutes> read_offset(std::string_view s, std::size_t& pos) {
    if (read_any_of(s, pos, "Zz")) return minutes{0};
    const bool negative = pos < s.size() && s[pos] == '-';
    if (!read_any_of(s, pos, "+-")) return std::nullopt;
    const auto h = read_digits(s, pos, 2);
    if (!h || *h > 23 || !read_literal(s, pos, ":")) return std::nullopt;
    const auto m = read_digits(s, pos, 2);
    if (!m || *m > 59) return std::nullopt;
    const minutes offset{*h * 60 + *m};
    return negative ? -offset : offset;
}

std::optional<UtcTime> try_rfc3339(std::string_view s) {
    std::size_t pos = 0;
    CivilTime t;
    const auto y = read_digits(s, pos, 4);
    if (!y || !read_literal(s, pos, "-")) return std::nullopt;
    const auto mo = read_digits(s, pos, 2);
    if (!mo || !read_literal(s, pos, "-")) return std::nullopt;
    const auto d = read_digits(s, pos, 2);
    if (!d || !read_any_of(s, pos, "Tt") || !read_clock(s, pos, t)) return std::nullopt;
    t.year = *y;
    t.month = *mo;
    t.day = *d;
    const auto fraction = read_fraction(s, pos);
    const auto offset = fraction ? read_offset(s, pos) : std::nullopt;
    const auto base = to_sys(t);
    if (!offset || !base || pos != s.size()) return std::nullopt;
    return UtcTime{*base - *offset + *fraction};
}

std::optional<UtcTime> try_rfc1123(std::string_view s) {
    std::size_t pos = 0;
    CivilTime t;
    if (!read_name(s, pos, weekday_names) || !read_literal(s, pos, ", ")) return std::nullopt;
    // RFC 1123 allows a one-digit day; HTTP dates always have two.
    auto d = read_digits(s, pos, 2);
    if (!d) d = read_digits(s, pos, 1);
    if (!d || !read_literal(s, pos, " ")) return std::nullopt;
    const auto mo = read_name(s, pos, month_names);
    if (!mo || !read_literal(s, pos, " ")) return std::nullopt;
    const auto y = read_digits(s, pos, 4);
    if (!y || !read_literal(s, pos, " ") || !read_clock(s, pos, t)) return std::nullopt;
    if (!read_literal(s, pos, " GMT") && !read_literal(s, pos, " UTC")) return std::nullopt;
    t.year = *y;
    t.month = *mo + 1;
    t.day = *d;
    const auto base = to_sys(t);
    if (!base || pos != s.size()) return std::nullopt;
    return UtcTime{*base};
}

// ---- responses ------------------------------------------------------------------------------------------------

/// The start of a body for a one-line message: control characters shown as '?', long bodies cut.
std::string excerpt(std::string_view body) {
    constexpr std::size_t limit = 40;
    std::string out(body.substr(0, limit));
    std::replace_if(
        out.begin(), out.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }, '?');
    if (body.size() > limit) out += "...";
    return out;
}

void expect_ok(const HttpResponse& response, Provider provider) {
    if (response.status == 200) return;
    throw UnavailableError(
        fmt::format("metadata server answered HTTP {} for {}", response.status, quote(notice_path(provider))));
}

/// Runs `parse`, attributing its DataErrors to the metadata path of `provider`.
template <typename Parse>
auto located(Provider provider, Parse&& parse) {
    try {
        return parse();
    } catch (const DataError& e) {
        throw e.in_file(std::string(notice_path(provider)));
    }
}

/// A date field through `parse`, with the field's JSON pointer in the error.
template <typename Parse>
UtcTime date_field(const json_io::View& field, Parse&& parse) {
    const std::string text = field.as_string();
    try {
        return parse(text);
    } catch (const DataError& e) {
        throw field.error(e.reason());
    }
}

std::optional<SpotAction> azure_action(std::string_view event_type) {
    if (event_type == "Preempt") return SpotAction::preempt;
    if (event_type == "Terminate") return SpotAction::terminate;
    return std::nullopt;
}

bool iequals(std::string_view a, std::string_view b) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [&](char x, char y) { return lower(x) == lower(y); });
}

/// Whether the event's Resources list names `vm_name` (Azure names are case-insensitive).
bool affects(const json_io::View& event, std::string_view vm_name) {
    if (vm_name.empty()) return true;
    const auto resources = event.at("Resources").items();
    return std::any_of(resources.begin(), resources.end(),
                       [&](const json_io::View& r) { return iequals(r.as_string(), vm_name); });
}

SpotNotice azure_notice(const json_io::View& event, SpotAction action, const HttpResponse& response, UtcTime now) {
    const auto id = event.at("EventId");
    SpotNotice notice{Provider::azure, action, now, false, id.as_string(), response.body};
    if (notice.event_id.empty()) throw id.error("expected a non-empty event id");
    // NotBefore is empty once the event has Started: the interruption is under way, so the deadline is now.
    const auto not_before = event.at("NotBefore");
    if (!not_before.as_string().empty()) notice.deadline = date_field(not_before, parse_rfc1123);
    return notice;
}

}  // namespace

std::string_view to_string(Provider provider) { return provider_names.at(static_cast<std::size_t>(provider)); }

std::optional<Provider> parse_provider(std::string_view name) { return enum_from_name<Provider>(provider_names, name); }

std::string_view to_string(SpotAction action) { return action_names.at(static_cast<std::size_t>(action)); }

std::optional<SpotAction> parse_spot_action(std::string_view name) {
    return enum_from_name<SpotAction>(action_names, name);
}

std::string_view notice_path(Provider provider) {
    switch (provider) {
        case Provider::aws: return "/latest/meta-data/spot/instance-action";
        case Provider::gcp: return "/computeMetadata/v1/instance/preempted";
        case Provider::azure: return "/metadata/scheduledevents?api-version=2020-07-01";
    }
    throw InternalError("unknown provider");
}

std::string SpotNotice::identity() const {
    switch (provider) {
        // One notice per instance, but AWS may revise it (stop, then terminate; another time): a revision is news.
        case Provider::aws: return fmt::format("aws {} {}", to_string(action), format_rfc3339(deadline));
        // One flag that stays set until the VM is gone.
        case Provider::gcp: return "gcp preempted";
        // Events are named; NotBefore empties when the event starts, so it cannot be part of the identity.
        case Provider::azure: return "azure " + event_id;
    }
    throw InternalError("unknown provider");
}

json_io::Json to_json(const SpotNotice& notice) {
    json_io::Json j;
    j["provider"] = to_string(notice.provider);
    j["action"] = to_string(notice.action);
    j["deadline_utc"] = format_rfc3339(notice.deadline);
    j["deadline_estimated"] = notice.deadline_estimated;
    j["event_id"] = notice.event_id;
    j["raw"] = notice.raw;
    return j;
}

std::optional<SpotNotice> parse_aws_instance_action(const HttpResponse& response) {
    // IMDS answers 404 until the instance is marked for interruption.
    if (response.status == 404) return std::nullopt;
    expect_ok(response, Provider::aws);
    return located(Provider::aws, [&] {
        const auto doc = json_io::parse_document(response.body, notice_path(Provider::aws));
        const json_io::View root(doc);
        const auto action_field = root.at("action");
        const auto action = parse_spot_action(action_field.as_string());
        if (!action || *action == SpotAction::preempt) {
            throw action_field.error(
                fmt::format("expected terminate, stop or hibernate, got {}", quote(excerpt(action_field.as_string()))));
        }
        return SpotNotice{Provider::aws, *action, date_field(root.at("time"), parse_rfc3339), false, {}, response.body};
    });
}

std::optional<SpotNotice> parse_gcp_preempted(const HttpResponse& response, UtcTime now) {
    expect_ok(response, Provider::gcp);
    const std::string_view flag = text::trim(response.body);
    if (flag == "FALSE") return std::nullopt;
    if (flag != "TRUE") {
        throw DataError(fmt::format("expected TRUE or FALSE, got {}", quote(excerpt(flag))),
                        {std::string(notice_path(Provider::gcp)), {}, 0});
    }
    return SpotNotice{Provider::gcp, SpotAction::preempt, now + gcp_preemption_notice, true, {}, response.body};
}

std::optional<SpotNotice> parse_azure_scheduled_events(const HttpResponse& response, const NoticeContext& context) {
    expect_ok(response, Provider::azure);
    return located(Provider::azure, [&] {
        const auto doc = json_io::parse_document(response.body, notice_path(Provider::azure));
        std::optional<SpotNotice> earliest;
        for (const auto& event : json_io::View(doc).at("Events").items()) {
            const auto action = azure_action(event.at("EventType").as_string());
            if (!action || !affects(event, context.azure_vm_name)) continue;
            auto notice = azure_notice(event, *action, response, context.now);
            if (!earliest || notice.deadline < earliest->deadline) earliest = std::move(notice);
        }
        return earliest;
    });
}

std::optional<SpotNotice> parse_notice(Provider provider, const HttpResponse& response, const NoticeContext& context) {
    switch (provider) {
        case Provider::aws: return parse_aws_instance_action(response);
        case Provider::gcp: return parse_gcp_preempted(response, context.now);
        case Provider::azure: return parse_azure_scheduled_events(response, context);
    }
    throw InternalError("unknown provider");
}

UtcTime parse_rfc3339(std::string_view text) {
    if (const auto t = try_rfc3339(text)) return *t;
    throw DataError(
        fmt::format("expected an RFC 3339 time such as '2024-05-01T12:00:00Z', got {}", quote(excerpt(text))));
}

UtcTime parse_rfc1123(std::string_view text) {
    if (const auto t = try_rfc1123(text)) return *t;
    throw DataError(
        fmt::format("expected an RFC 1123 date such as 'Wed, 01 May 2024 12:00:00 GMT', got {}", quote(excerpt(text))));
}

std::string format_rfc3339(UtcTime time) {
    const auto secs = floor<seconds>(time);
    const auto day_start = floor<days>(secs);
    const year_month_day date{day_start};
    const hh_mm_ss clock{secs - day_start};
    const auto ms = duration_cast<milliseconds>(time - secs).count();
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{}Z", static_cast<int>(date.year()),
                       static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()), clock.hours().count(),
                       clock.minutes().count(), clock.seconds().count(), ms ? fmt::format(".{:03}", ms) : "");
}

}  // namespace gpuops::rescale
