// The metadata poller against a fake metadata server on 127.0.0.1: the IMDSv2 token flow and its fallback, the
// providers' headers, dedupe, the Azure acknowledgement, and failures (server down, slow, malformed) that never
// stop the loop.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "gpuops/core/error.hpp"
#include "gpuops/rescale/metadata_poller.hpp"

#include "support/fake_http_server.hpp"

using namespace gpuops;
using namespace gpuops::rescale;
using namespace std::chrono_literals;
using gpuops::test::CannedResponse;
using gpuops::test::FakeHttpServer;

namespace {

const std::string token_path = "/latest/api/token";
const std::string aws_path = "/latest/meta-data/spot/instance-action";
const std::string gcp_path = "/computeMetadata/v1/instance/preempted";
const std::string azure_path = "/metadata/scheduledevents?api-version=2020-07-01";

const std::string aws_stop = R"({"action": "stop", "time": "2024-05-01T12:02:00Z"})";
const std::string aws_terminate = R"({"action": "terminate", "time": "2024-05-01T12:02:00Z"})";
const std::string azure_event_id = "C7061BAC-AFDC-4513-B24B-AA5F13A16123";

std::string fixture(const std::string& name) {
    std::ifstream in(std::string(GPUOPS_FIXTURES_DIR) + "/spot/" + name, std::ios::binary);
    REQUIRE(in);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

/// 2024-05-01 12:00:00 UTC.
const UtcTime noon = std::chrono::sys_days{2024y / 5 / 1} + 12h;

/// Time that moves only when the poller sleeps, and a hook that runs between polls (to change the server's
/// answers or to stop the loop).
struct FakeTime {
    UtcTime now = noon;
    int sleeps = 0;
    std::function<void(int)> between_polls = [](int) {};

    PollerClock clock() {
        return {[this](std::chrono::milliseconds d) {
                    now += d;
                    between_polls(++sleeps);
                },
                [this] { return now; }};
    }
};

/// What the callbacks saw.
struct Seen {
    std::vector<SpotNotice> notices;
    std::vector<std::string> errors;
    std::vector<ExitCode> codes;

    NoticeHandler on_notice() {
        return [this](const SpotNotice& n) { notices.push_back(n); };
    }
    PollErrorHandler on_error() {
        return [this](const Error& e) {
            errors.emplace_back(e.what());
            codes.push_back(e.code());
        };
    }
};

PollerOptions options_for(Provider provider, const std::string& url) {
    PollerOptions options;
    options.provider = provider;
    options.metadata_url = url;
    options.interval = 5s;
    options.request_timeout = 2s;
    return options;
}

/// Runs the poller's loop for exactly `polls` polls; `between_polls(n)` runs after the n-th.
void run_polls(
    MetadataPoller& poller, FakeTime& time, int polls, Seen& seen,
    const std::function<void(int)>& between_polls = [](int) {}) {
    std::atomic<bool> stop = false;
    time.between_polls = [&](int done) {
        between_polls(done);
        if (done >= polls) stop = true;  // the loop ends before its next poll
    };
    poller.run(stop, seen.on_notice(), seen.on_error());
}

}  // namespace

TEST_CASE("aws poller takes an IMDSv2 token and delivers the notice once it appears") {
    FakeHttpServer server;
    server.set("PUT", token_path, {200, "tok-1", 0ms, {}});
    server.set("GET", aws_path, {404, "", 0ms, {{"x-aws-ec2-metadata-token", "tok-1"}}});
    FakeTime time;
    MetadataPoller poller(options_for(Provider::aws, server.url()), time.clock());
    Seen seen;
    run_polls(poller, time, 3, seen, [&](int done) {
        if (done == 1) server.set("GET", aws_path, {200, aws_stop, 0ms, {{"x-aws-ec2-metadata-token", "tok-1"}}});
    });

    CHECK(seen.errors.empty());
    REQUIRE(seen.notices.size() == 1);
    CHECK(seen.notices[0].action == SpotAction::stop);
    CHECK(seen.notices[0].deadline == noon + 2min);
    const auto puts = server.requests("PUT", token_path);
    REQUIRE(puts.size() == 1);  // the token is reused across polls
    CHECK(puts[0].header("x-aws-ec2-metadata-token-ttl-seconds") == "21600");
    const auto gets = server.requests("GET", aws_path);
    REQUIRE(gets.size() == 3);
    for (const auto& get : gets)
        CHECK(get.header("x-aws-ec2-metadata-token") == "tok-1");
    CHECK(time.sleeps == 3);
}

TEST_CASE("aws poller renews its token at half the lifetime") {
    FakeHttpServer server;
    server.set("PUT", token_path, {200, "tok-1", 0ms, {}});
    auto options = options_for(Provider::aws, server.url());
    options.aws_token_ttl = 60s;
    options.interval = 10s;
    FakeTime time;
    MetadataPoller poller(options, time.clock());
    Seen seen;
    run_polls(poller, time, 4, seen);  // at 0, 10, 20 and 30 s: renewed at 30 s

    CHECK(seen.errors.empty());
    const auto puts = server.requests("PUT", token_path);
    REQUIRE(puts.size() == 2);
    CHECK(puts[0].header("x-aws-ec2-metadata-token-ttl-seconds") == "60");
}

TEST_CASE("aws poller falls back to IMDSv1 when the token PUT is refused") {
    FakeHttpServer server;
    server.set("PUT", token_path, {403, "", 0ms, {}});
    server.set("GET", aws_path, {200, aws_terminate, 0ms, {}});
    FakeTime time;
    MetadataPoller poller(options_for(Provider::aws, server.url()), time.clock());
    Seen seen;
    run_polls(poller, time, 2, seen);

    CHECK(seen.errors.empty());
    REQUIRE(seen.notices.size() == 1);
    CHECK(seen.notices[0].action == SpotAction::terminate);
    CHECK(server.requests("PUT", token_path).size() == 1);  // no second try while IMDSv1 answers
    for (const auto& get : server.requests("GET", aws_path))
        CHECK_FALSE(get.has_header("x-aws-ec2-metadata-token"));
}

TEST_CASE("aws poller falls back to IMDSv1 when the token PUT times out") {
    FakeHttpServer server;
    // Beyond the IMDS hop limit (a container) the PUT's answer never arrives.
    server.set("PUT", token_path, {200, "tok-1", 3000ms, {}});
    server.set("GET", aws_path, {200, aws_stop, 0ms, {}});
    auto options = options_for(Provider::aws, server.url());
    options.request_timeout = 200ms;
    MetadataPoller poller(options);
    Seen seen;
    const auto start = std::chrono::steady_clock::now();
    CHECK(poller.poll_and_dispatch(seen.on_notice(), seen.on_error()));
    CHECK(std::chrono::steady_clock::now() - start < 2s);
    CHECK(seen.errors.empty());
    REQUIRE(server.requests("GET", aws_path).size() == 1);
    CHECK_FALSE(server.requests("GET", aws_path)[0].has_header("x-aws-ec2-metadata-token"));
}

TEST_CASE("aws poller asks for a token again when IMDSv1 answers 401") {
    FakeHttpServer server;
    server.set("PUT", token_path, {500, "", 0ms, {}});
    server.set("GET", aws_path, {200, aws_stop, 0ms, {{"x-aws-ec2-metadata-token", "tok-2"}}});
    FakeTime time;
    MetadataPoller poller(options_for(Provider::aws, server.url()), time.clock());
    Seen seen;
    run_polls(poller, time, 2, seen, [&](int) { server.set("PUT", token_path, {200, "tok-2", 0ms, {}}); });

    // First poll: no token, and IMDSv1 is switched off. Second poll: the 401 brings a token, then the notice.
    REQUIRE(seen.errors.size() == 1);
    CHECK(seen.errors[0] == "metadata server answered HTTP 401 for '/latest/meta-data/spot/instance-action'");
    REQUIRE(seen.notices.size() == 1);
    CHECK(server.requests("GET", aws_path).back().header("x-aws-ec2-metadata-token") == "tok-2");
}

TEST_CASE("repeated polls of one notice deliver it once and a revised notice again") {
    FakeHttpServer server;
    server.set("PUT", token_path, {200, "tok-1", 0ms, {}});
    server.set("GET", aws_path, {200, aws_stop, 0ms, {}});
    FakeTime time;
    MetadataPoller poller(options_for(Provider::aws, server.url()), time.clock());
    Seen seen;
    run_polls(poller, time, 5, seen, [&](int done) {
        if (done == 3) server.set("GET", aws_path, {200, aws_terminate, 0ms, {}});
    });

    CHECK(server.requests("GET", aws_path).size() == 5);
    REQUIRE(seen.notices.size() == 2);
    CHECK(seen.notices[0].action == SpotAction::stop);
    CHECK(seen.notices[1].action == SpotAction::terminate);
}

TEST_CASE("gcp poller sends Metadata-Flavor and dates the notice by the injected clock") {
    FakeHttpServer server;
    server.set("GET", gcp_path, {200, "FALSE", 0ms, {}});
    FakeTime time;
    MetadataPoller poller(options_for(Provider::gcp, server.url()), time.clock());
    Seen seen;
    run_polls(poller, time, 4, seen, [&](int done) {
        if (done == 2) server.set("GET", gcp_path, {200, "TRUE", 0ms, {}});
    });

    CHECK(seen.errors.empty());
    REQUIRE(seen.notices.size() == 1);  // TRUE was seen twice: the re-estimated deadline is not a new notice
    CHECK(seen.notices[0].deadline == noon + 2 * 5s + 30s);
    CHECK(seen.notices[0].deadline_estimated);
    const auto gets = server.requests("GET", gcp_path);
    REQUIRE(gets.size() == 4);
    CHECK(gets[0].header("metadata-flavor") == "Google");
}

TEST_CASE("azure poller sends Metadata true and acknowledges the event after the callback") {
    FakeHttpServer server;
    server.set("GET", azure_path, {200, fixture("azure_scheduled_events_preempt.json"), 0ms, {}});
    server.set("POST", azure_path, {200, "", 0ms, {}});
    auto options = options_for(Provider::azure, server.url());
    options.azure_acknowledge = true;
    options.azure_vm_name = "gpu-node-1";
    MetadataPoller poller(options);
    std::size_t posts_during_callback = 99;
    int calls = 0;
    const NoticeHandler forward = [&](const SpotNotice& n) {
        ++calls;
        CHECK(n.event_id == azure_event_id);
        posts_during_callback = server.requests("POST", azure_path).size();
    };
    Seen seen;
    CHECK(poller.poll_and_dispatch(forward, seen.on_error()));
    CHECK_FALSE(poller.poll_and_dispatch(forward, seen.on_error()));

    CHECK(seen.errors.empty());
    CHECK(calls == 1);
    CHECK(posts_during_callback == 0);
    const auto gets = server.requests("GET", azure_path);
    REQUIRE(gets.size() == 2);
    CHECK(gets[0].header("metadata") == "true");
    const auto posts = server.requests("POST", azure_path);
    REQUIRE(posts.size() == 1);
    CHECK(posts[0].header("metadata") == "true");
    CHECK(posts[0].header("content-type") == "application/json");
    CHECK(json_io::Json::parse(posts[0].body) ==
          json_io::Json::parse(R"({"StartRequests": [{"EventId": ")" + azure_event_id + R"("}]})"));
}

TEST_CASE("azure event whose callback failed is not acknowledged and is offered again") {
    FakeHttpServer server;
    server.set("GET", azure_path, {200, fixture("azure_scheduled_events_preempt.json"), 0ms, {}});
    server.set("POST", azure_path, {200, "", 0ms, {}});
    auto options = options_for(Provider::azure, server.url());
    options.azure_acknowledge = true;
    MetadataPoller poller(options);
    int calls = 0;
    const NoticeHandler forward = [&](const SpotNotice&) {
        if (++calls == 1) throw UnavailableError("cannot reach the coordinator");
    };
    Seen seen;
    CHECK_FALSE(poller.poll_and_dispatch(forward, seen.on_error()));
    CHECK(server.requests("POST", azure_path).empty());
    CHECK(poller.poll_and_dispatch(forward, seen.on_error()));

    CHECK(calls == 2);
    CHECK(seen.errors == std::vector<std::string>{"cannot reach the coordinator"});
    CHECK(server.requests("POST", azure_path).size() == 1);
}

TEST_CASE("azure failed acknowledgement is retried without a second delivery") {
    FakeHttpServer server;
    server.set("GET", azure_path, {200, fixture("azure_scheduled_events_preempt.json"), 0ms, {}});
    server.set("POST", azure_path, {500, "", 0ms, {}});
    auto options = options_for(Provider::azure, server.url());
    options.azure_acknowledge = true;
    FakeTime time;
    MetadataPoller poller(options, time.clock());
    Seen seen;
    run_polls(poller, time, 3, seen, [&](int done) {
        if (done == 1) server.set("POST", azure_path, {200, "", 0ms, {}});
    });

    CHECK(seen.notices.size() == 1);
    REQUIRE(seen.errors.size() == 1);
    CHECK(seen.errors[0] ==
          "metadata server answered HTTP 500 to the acknowledgement of event '" + azure_event_id + "'");
    CHECK(server.requests("POST", azure_path).size() == 2);  // failed, then succeeded; none on the third poll
}

TEST_CASE("azure poller without acknowledgement posts nothing") {
    FakeHttpServer server;
    server.set("GET", azure_path, {200, fixture("azure_scheduled_events_preempt.json"), 0ms, {}});
    MetadataPoller poller(options_for(Provider::azure, server.url()));
    Seen seen;
    CHECK(poller.poll_and_dispatch(seen.on_notice(), seen.on_error()));
    CHECK(seen.errors.empty());
    CHECK(server.requests("POST", azure_path).empty());
}

TEST_CASE("server down: every poll reports an unavailable error and the loop keeps polling") {
    FakeTime time;
    MetadataPoller poller(options_for(Provider::aws, gpuops::test::refused_url()), time.clock());
    Seen seen;
    run_polls(poller, time, 3, seen);

    CHECK(seen.notices.empty());
    REQUIRE(seen.errors.size() == 3);
    CHECK(seen.codes == std::vector<ExitCode>(3, ExitCode::unavailable));
    CHECK_THAT(seen.errors[0], Catch::StartsWith("cannot GET 'http://127.0.0.1:"));
}

TEST_CASE("slow server: the request times out after request_timeout") {
    FakeHttpServer server;
    server.set("GET", gcp_path, {200, "TRUE", 3000ms, {}});
    auto options = options_for(Provider::gcp, server.url());
    options.request_timeout = 200ms;
    MetadataPoller poller(options);
    Seen seen;
    const auto start = std::chrono::steady_clock::now();
    CHECK_FALSE(poller.poll_and_dispatch(seen.on_notice(), seen.on_error()));
    CHECK(std::chrono::steady_clock::now() - start < 2s);

    CHECK(seen.notices.empty());
    REQUIRE(seen.codes.size() == 1);
    CHECK(seen.codes[0] == ExitCode::temporary);
    CHECK_THAT(seen.errors[0], Catch::EndsWith("did not answer GET within 200ms"));
    CHECK_THROWS_AS(poller.poll_once(), TimeoutError);
}

TEST_CASE("a malformed answer is reported and a later good one is delivered") {
    FakeHttpServer server;
    server.set("GET", gcp_path, {200, "MAYBE", 0ms, {}});
    FakeTime time;
    MetadataPoller poller(options_for(Provider::gcp, server.url()), time.clock());
    Seen seen;
    run_polls(poller, time, 2, seen, [&](int) { server.set("GET", gcp_path, {200, "TRUE", 0ms, {}}); });

    CHECK(seen.errors ==
          std::vector<std::string>{"'/computeMetadata/v1/instance/preempted': expected TRUE or FALSE, got 'MAYBE'"});
    CHECK(seen.codes == std::vector<ExitCode>{ExitCode::data});
    CHECK(seen.notices.size() == 1);
}

TEST_CASE("a loop stopped before it starts makes no request") {
    FakeHttpServer server;
    MetadataPoller poller(options_for(Provider::gcp, server.url()));
    Seen seen;
    const std::atomic<bool> stop = true;
    poller.run(stop, seen.on_notice(), seen.on_error());
    CHECK(server.requests().empty());
}

TEST_CASE("poller options that would hang or that IMDS refuses are usage errors") {
    auto options = options_for(Provider::aws, "http://127.0.0.1:1");
    options.request_timeout = 0ms;
    CHECK_THROWS_AS(MetadataPoller(options), UsageError);
    options = options_for(Provider::aws, "http://127.0.0.1:1");
    options.interval = -1ms;
    CHECK_THROWS_AS(MetadataPoller(options), UsageError);
    options = options_for(Provider::aws, "http://127.0.0.1:1");
    options.aws_token_ttl = 21601s;
    CHECK_THROWS_WITH(MetadataPoller(options), "the IMDSv2 token lifetime must be between 1s and 6h");
}

TEST_CASE("default metadata urls and acknowledging a non-azure notice") {
    CHECK(default_metadata_url(Provider::aws) == "http://169.254.169.254");
    CHECK(default_metadata_url(Provider::azure) == "http://169.254.169.254");
    CHECK(default_metadata_url(Provider::gcp) == "http://metadata.google.internal");
    MetadataPoller poller(PollerOptions{Provider::gcp, "http://127.0.0.1:1/", 1s, 1s, 60s, false, {}});
    CHECK(poller.options().metadata_url == "http://127.0.0.1:1");
    CHECK_THROWS_AS(poller.acknowledge(SpotNotice{Provider::gcp, SpotAction::preempt, noon, true, {}, "TRUE"}),
                    UsageError);
}
