// Spot notice parsers over our own samples of each provider's format (tests/fixtures/spot), malformed answers,
// the two date formats, identities and the JSON form.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "gpuops/core/error.hpp"
#include "gpuops/rescale/spot_notice.hpp"

using namespace gpuops;
using namespace gpuops::rescale;
using namespace std::chrono_literals;

namespace {

std::string fixture(const std::string& name) {
    std::ifstream in(std::string(GPUOPS_FIXTURES_DIR) + "/spot/" + name, std::ios::binary);
    REQUIRE(in);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

HttpResponse ok(std::string body) { return {200, std::move(body)}; }

UtcTime utc(std::chrono::sys_seconds t) { return t; }

/// 2024-05-01 12:00:00 UTC, the time of every sample.
const UtcTime noon = utc(std::chrono::sys_days{2024y / 5 / 1} + 12h);

template <typename Parse>
std::string data_error_of(Parse&& parse) {
    try {
        (void)parse();
    } catch (const DataError& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("aws instance-action samples give the action and the time") {
    const auto terminate = parse_aws_instance_action(ok(fixture("aws_instance_action_terminate.json")));
    REQUIRE(terminate);
    CHECK(terminate->provider == Provider::aws);
    CHECK(terminate->action == SpotAction::terminate);
    CHECK(terminate->deadline == noon + 2min);
    CHECK_FALSE(terminate->deadline_estimated);
    CHECK(terminate->event_id.empty());
    CHECK(terminate->raw == fixture("aws_instance_action_terminate.json"));

    CHECK(parse_aws_instance_action(ok(fixture("aws_instance_action_stop.json")))->action == SpotAction::stop);
    const auto hibernate = parse_aws_instance_action(ok(fixture("aws_instance_action_hibernate.json")));
    CHECK(hibernate->action == SpotAction::hibernate);
    CHECK(hibernate->deadline == noon + 5s);
}

TEST_CASE("aws 404 means no notice and other statuses are unavailable errors") {
    CHECK_FALSE(parse_aws_instance_action({404, "<html>Not Found</html>"}));
    CHECK_THROWS_AS(parse_aws_instance_action({500, ""}), UnavailableError);
    CHECK_THROWS_WITH(parse_aws_instance_action({401, ""}),
                      "metadata server answered HTTP 401 for '/latest/meta-data/spot/instance-action'");
}

TEST_CASE("malformed aws bodies are data errors naming the field") {
    const auto error = [](const std::string& body) {
        return data_error_of([&] { return parse_aws_instance_action(ok(body)); });
    };
    const std::string where = "'/latest/meta-data/spot/instance-action': ";
    CHECK(error(R"({"time": "2024-05-01T12:02:00Z"})") == where + "(/action) missing required field");
    CHECK(error(R"({"action": "reboot", "time": "2024-05-01T12:02:00Z"})") ==
          where + "(/action) expected terminate, stop or hibernate, got 'reboot'");
    CHECK(error(R"({"action": "preempt", "time": "2024-05-01T12:02:00Z"})") ==
          where + "(/action) expected terminate, stop or hibernate, got 'preempt'");
    CHECK(error(R"({"action": "stop", "time": 1714564920})") == where + "(/time) expected a string, got number");
    CHECK(error(R"({"action": "stop", "time": "2024-05-01 12:02"})") ==
          where + "(/time) expected an RFC 3339 time such as '2024-05-01T12:00:00Z', got '2024-05-01 12:02'");
    CHECK(error(R"(["stop"])") == where + "(/) expected an object, got array");
    const std::string not_json = "'/latest/meta-data/spot/instance-action' line 1: invalid JSON: syntax error";
    CHECK_THAT(error(""), Catch::StartsWith(not_json));
    CHECK_THAT(error(R"({"action": "stop",)"), Catch::StartsWith(not_json));
}

TEST_CASE("gcp preempted TRUE is a notice with an estimated deadline 30 s after the poll") {
    const auto notice = parse_gcp_preempted(ok(fixture("gcp_preempted_true.txt")), noon);
    REQUIRE(notice);
    CHECK(notice->provider == Provider::gcp);
    CHECK(notice->action == SpotAction::preempt);
    CHECK(notice->deadline == noon + 30s);
    CHECK(notice->deadline_estimated);
    CHECK(notice->raw == "TRUE");

    CHECK_FALSE(parse_gcp_preempted(ok(fixture("gcp_preempted_false.txt")), noon));
    CHECK(parse_gcp_preempted(ok("TRUE\n"), noon));
}

TEST_CASE("gcp answers other than TRUE and FALSE are errors") {
    const std::string where = "'/computeMetadata/v1/instance/preempted': ";
    CHECK(data_error_of([] { return parse_gcp_preempted(ok("true"), noon); }) ==
          where + "expected TRUE or FALSE, got 'true'");
    CHECK(data_error_of([] { return parse_gcp_preempted(ok(""), noon); }) == where + "expected TRUE or FALSE, got ''");
    // A long body with line breaks still makes a one-line message.
    const std::string html = "<html>\n<body>" + std::string(100, 'x') + "</body></html>";
    const auto message = data_error_of([&] { return parse_gcp_preempted(ok(html), noon); });
    CHECK(message.find('\n') == std::string::npos);
    CHECK(message.size() < 120);
    CHECK_THROWS_AS(parse_gcp_preempted({503, ""}, noon), UnavailableError);
    CHECK_THROWS_AS(parse_gcp_preempted({404, ""}, noon), UnavailableError);
}

TEST_CASE("azure Preempt event gives its id and NotBefore") {
    const auto notice = parse_azure_scheduled_events(ok(fixture("azure_scheduled_events_preempt.json")), {noon, {}});
    REQUIRE(notice);
    CHECK(notice->provider == Provider::azure);
    CHECK(notice->action == SpotAction::preempt);
    CHECK(notice->event_id == "C7061BAC-AFDC-4513-B24B-AA5F13A16123");
    CHECK(notice->deadline == noon + 30s);
    CHECK_FALSE(notice->deadline_estimated);
    CHECK(notice->raw == fixture("azure_scheduled_events_preempt.json"));
}

TEST_CASE("azure Freeze, Reboot and Redeploy events and an empty list are no notice") {
    CHECK_FALSE(parse_azure_scheduled_events(ok(fixture("azure_scheduled_events_maintenance.json")), {noon, {}}));
    CHECK_FALSE(parse_azure_scheduled_events(ok(fixture("azure_scheduled_events_none.json")), {noon, {}}));
}

TEST_CASE("azure events of a placement group are filtered by this VM's name") {
    const auto body = ok(fixture("azure_scheduled_events_placement_group.json"));
    // Without a name every VM's event counts and the earliest wins.
    const auto any = parse_azure_scheduled_events(body, {noon, {}});
    REQUIRE(any);
    CHECK(any->event_id == "A1B2C3D4-0000-4000-8000-000000000001");
    // This VM's own event is a Terminate (scale-in); its name matches case-insensitively.
    const auto mine = parse_azure_scheduled_events(body, {noon, "gpu-node-1"});
    REQUIRE(mine);
    CHECK(mine->event_id == "A1B2C3D4-0000-4000-8000-000000000002");
    CHECK(mine->action == SpotAction::terminate);
    CHECK(mine->deadline == noon + 5min);
    CHECK_FALSE(parse_azure_scheduled_events(body, {noon, "gpu-node-9"}));
}

TEST_CASE("azure started event with an empty NotBefore is due now") {
    const auto notice = parse_azure_scheduled_events(ok(fixture("azure_scheduled_events_started.json")), {noon, {}});
    REQUIRE(notice);
    CHECK(notice->deadline == noon);
}

TEST_CASE("malformed azure documents are data errors naming the field") {
    const auto error = [](const std::string& body) {
        return data_error_of([&] { return parse_azure_scheduled_events(ok(body), {noon, "gpu-node-1"}); });
    };
    const std::string where = "'/metadata/scheduledevents?api-version=2020-07-01': ";
    CHECK(error(R"({"DocumentIncarnation": 1})") == where + "(/Events) missing required field");
    CHECK(error(R"({"Events": {}})") == where + "(/Events) expected an array, got object");
    CHECK(error(R"({"Events": [{"EventId": "e1"}]})") == where + "(/Events/0/EventType) missing required field");
    CHECK(error(R"({"Events": [{"EventType": "Preempt", "Resources": ["gpu-node-1"], "NotBefore": ""}]})") ==
          where + "(/Events/0/EventId) missing required field");
    CHECK(error(R"({"Events": [{"EventType": "Preempt", "EventId": "", "Resources": ["gpu-node-1"],
                    "NotBefore": ""}]})") == where + "(/Events/0/EventId) expected a non-empty event id");
    CHECK(error(R"({"Events": [{"EventType": "Preempt", "EventId": "e1", "Resources": "gpu-node-1"}]})") ==
          where + "(/Events/0/Resources) expected an array, got string");
    CHECK(error(R"({"Events": [{"EventType": "Preempt", "EventId": "e1", "Resources": ["gpu-node-1"],
                    "NotBefore": "2024-05-01T12:00:30Z"}]})") ==
          where + "(/Events/0/NotBefore) expected an RFC 1123 date such as 'Wed, 01 May 2024 12:00:00 GMT', got "
                  "'2024-05-01T12:00:30Z'");
    CHECK_THAT(error("<html>"),
               Catch::StartsWith("'/metadata/scheduledevents?api-version=2020-07-01' line 1: invalid JSON"));
    CHECK_THROWS_AS(parse_azure_scheduled_events({500, ""}, {noon, {}}), UnavailableError);
}

TEST_CASE("parse_notice dispatches on the provider") {
    CHECK(parse_notice(Provider::aws, ok(fixture("aws_instance_action_stop.json")), {noon, {}})->action ==
          SpotAction::stop);
    CHECK(parse_notice(Provider::gcp, ok("TRUE"), {noon, {}})->provider == Provider::gcp);
    CHECK(parse_notice(Provider::azure, ok(fixture("azure_scheduled_events_preempt.json")), {noon, {}})->provider ==
          Provider::azure);
}

TEST_CASE("rfc 3339 times with fractions and offsets") {
    CHECK(parse_rfc3339("2024-05-01T12:00:00Z") == noon);
    CHECK(parse_rfc3339("2024-05-01t12:00:00z") == noon);
    CHECK(parse_rfc3339("2024-05-01T12:00:00.25Z") == noon + 250ms);
    CHECK(parse_rfc3339("2024-05-01T14:30:00+02:30") == noon);
    CHECK(parse_rfc3339("2024-05-01T07:00:00-05:00") == noon);
    CHECK(parse_rfc3339("2024-02-29T00:00:00Z") == utc(std::chrono::sys_days{2024y / 2 / 29}));
    for (const char* bad : {"", "2024-05-01", "2024-05-01T12:00:00", "2024-13-01T12:00:00Z", "2023-02-29T00:00:00Z",
                            "2024-05-01T24:00:00Z", "2024-05-01T12:00:00.Z", "2024-05-01T12:00:00+0200",
                            "2024-05-01T12:00:00Z trailing", "Wed, 01 May 2024 12:00:00 GMT"}) {
        INFO(bad);
        CHECK_THROWS_AS(parse_rfc3339(bad), DataError);
    }
}

TEST_CASE("rfc 1123 dates as azure writes them") {
    CHECK(parse_rfc1123("Wed, 01 May 2024 12:00:00 GMT") == noon);
    CHECK(parse_rfc1123("Wed, 1 May 2024 12:00:00 GMT") == noon);
    CHECK(parse_rfc1123("Mon, 19 Sep 2016 18:29:47 GMT") ==
          utc(std::chrono::sys_days{2016y / 9 / 19} + 18h + 29min + 47s));
    for (const char* bad : {"", "Wed, 01 May 2024 12:00:00", "Wed, 01 Mai 2024 12:00:00 GMT",
                            "Xyz, 01 May 2024 12:00:00 GMT", "Wed 01 May 2024 12:00:00 GMT",
                            "Wed, 31 Apr 2024 12:00:00 GMT", "Wed, 01 May 2024 12:00 GMT", "2024-05-01T12:00:00Z"}) {
        INFO(bad);
        CHECK_THROWS_AS(parse_rfc1123(bad), DataError);
    }
}

TEST_CASE("rfc 3339 formatting round-trips") {
    CHECK(format_rfc3339(noon) == "2024-05-01T12:00:00Z");
    CHECK(format_rfc3339(noon + 250ms) == "2024-05-01T12:00:00.250Z");
    CHECK(parse_rfc3339(format_rfc3339(noon + 30s)) == noon + 30s);
}

TEST_CASE("notice identities tell repeated polls from new notices") {
    const auto gcp_first = parse_gcp_preempted(ok("TRUE"), noon);
    const auto gcp_later = parse_gcp_preempted(ok("TRUE"), noon + 5s);
    CHECK(gcp_first->identity() == gcp_later->identity());

    const auto stop = parse_aws_instance_action(ok(R"({"action": "stop", "time": "2024-05-01T12:02:00Z"})"));
    const auto same = parse_aws_instance_action(ok(R"({"time": "2024-05-01T12:02:00Z", "action": "stop"})"));
    const auto revised = parse_aws_instance_action(ok(R"({"action": "terminate", "time": "2024-05-01T12:02:00Z"})"));
    CHECK(stop->identity() == same->identity());
    CHECK(stop->identity() != revised->identity());

    const auto scheduled = parse_azure_scheduled_events(ok(fixture("azure_scheduled_events_preempt.json")), {noon, {}});
    const auto started = parse_azure_scheduled_events(ok(fixture("azure_scheduled_events_started.json")), {noon, {}});
    CHECK(scheduled->identity() == started->identity());
    CHECK(scheduled->identity() != gcp_first->identity());
}

TEST_CASE("notice as json carries what NOTICE forwards") {
    const auto notice = parse_azure_scheduled_events(ok(fixture("azure_scheduled_events_preempt.json")), {noon, {}});
    const auto j = to_json(*notice);
    CHECK(j.at("provider") == "azure");
    CHECK(j.at("action") == "preempt");
    CHECK(j.at("deadline_utc") == "2024-05-01T12:00:30Z");
    CHECK(j.at("deadline_estimated") == false);
    CHECK(j.at("event_id") == "C7061BAC-AFDC-4513-B24B-AA5F13A16123");
    CHECK(j.at("raw") == notice->raw);
}

TEST_CASE("provider and action names round-trip") {
    for (const auto p : {Provider::aws, Provider::gcp, Provider::azure})
        CHECK(parse_provider(to_string(p)) == p);
    for (const auto a : {SpotAction::terminate, SpotAction::stop, SpotAction::hibernate, SpotAction::preempt})
        CHECK(parse_spot_action(to_string(a)) == a);
    CHECK_FALSE(parse_provider("oci"));
    CHECK_FALSE(parse_spot_action("Preempt"));
}
