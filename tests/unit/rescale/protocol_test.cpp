// The wire codec: every message type survives encode/decode, and every kind of bad line becomes a typed error.
#include <catch2/catch.hpp>

#include <set>

#include "gpuops/rescale/codec.hpp"
#include "gpuops/rescale/records.hpp"

using namespace gpuops::rescale;
using gpuops::json_io::Json;

namespace {

/// One message of every type, with every field away from its default.
std::vector<Message> samples() {
    return {
        Hello{"job", "tok", "i-1", "inc-9", "host-a", "QUJD", Json{{"gpus", 8}}, ResumeInfo{7, "sess", 3}},
        Heartbeat{4},
        SafePoint{4, 99},
        Drained{4, 99},
        Ack{5, "abcd", false, "ep create failed"},
        Ready{5},
        Put{5, "ucx", "AAA=", KvScope::job},
        Fence{5, "f1", true},
        Get{5, "ucx", 3, KvScope::job},
        Notice{"i-1", "aws", "2026-01-01T00:00:00Z", 120000, "tok"},
        Leave{"done"},
        Welcome{7, "sess", 2, JoinState::active, ViewInfo{5, "abcd", {{7, 0, "QQ=="}, {9, 1, "Qg=="}}}},
        HbAck{5, PendingInfo{99, TransitionKind::mixed, {3}}},
        Transition{99, 4, TransitionKind::shrink, {3}, {8}, 20000},
        Prepare{5, 4, "abcd", {7, 9, 8}, {{8, 2, "Qw=="}}, {3}, false},
        Commit{5, "abcd"},
        Abort{5, 99, "member 3 is gone"},
        Release{5},
        FenceDone{5, "f1", false, "member 3 is gone", {{7, "ucx", "AAA="}}},
        GetReply{5, "ucx", 3, true, "AAA=", ""},
        Evicted{5, "stale incarnation"},
        ErrorReply{ErrorCode::stale_epoch, "epoch 3 is over", 12},
        StatusCmd{"adm"},
        ShrinkCmd{"adm", {3, 4}, 0, 30000},
        ExpandCmd{"adm", 2, {"i-7"}},
        DrainHostCmd{"adm", "node-3", 10000},
        SetCmd{"adm", 2, 16, 250},
        CloseCmd{"adm"},
        AdminReply{false, ErrorCode::invalid, "below min size", Json{{"epoch", 5}}},
    };
}

DecodeError error_of(const Decoded& d) {
    REQUIRE(std::holds_alternative<DecodeError>(d));
    return std::get<DecodeError>(d);
}

}  // namespace

TEST_CASE("every message type round-trips through one JSON line") {
    const auto all = samples();
    std::set<std::string_view> types;
    std::uint64_t seq = 1;
    for (const Message& m : all) {
        const Envelope sent{seq++, m};
        const std::string line = encode(sent);
        INFO(line);
        CHECK(line.find('\n') == std::string::npos);
        const Decoded got = decode(line);
        REQUIRE(std::holds_alternative<Envelope>(got));
        CHECK(std::get<Envelope>(got) == sent);
        types.insert(type_of(m));
    }
    CHECK(types.size() == std::variant_size_v<Message>);  // no type left out, no name used twice
}

TEST_CASE("a message encoded once gives each seq the line encode gives") {
    for (const Message& m : samples()) {
        const EncodedMessage once(m);
        for (const std::uint64_t seq : {0ULL, 7ULL, 10ULL, 18446744073709551615ULL}) {
            INFO(type_of(m) << " seq " << seq);
            CHECK(once.line(seq) == encode(Envelope{seq, m}));
        }
    }
}

TEST_CASE("bad lines become typed errors, never exceptions") {
    CHECK(error_of(decode("{not json")).code == ErrorCode::protocol);
    CHECK(error_of(decode("[1,2]")).code == ErrorCode::protocol);
    CHECK(error_of(decode("")).code == ErrorCode::protocol);

    const DecodeError unknown = error_of(decode(R"({"v":1,"t":"JUMP","seq":41})"));
    CHECK(unknown.code == ErrorCode::unknown_type);
    CHECK(unknown.seq == 41);

    const DecodeError missing = error_of(decode(R"({"v":1,"t":"ACK","seq":3,"epoch":5})"));
    CHECK(missing.code == ErrorCode::protocol);
    CHECK(missing.message.find("/view_hash") != std::string::npos);
    CHECK(missing.seq == 3);

    const DecodeError mistyped = error_of(decode(R"({"t":"HEARTBEAT","epoch":"five"})"));
    CHECK(mistyped.code == ErrorCode::protocol);
    CHECK(mistyped.message.find("/epoch") != std::string::npos);

    CHECK(error_of(decode(R"({"t":"HEARTBEAT","epoch":-1})")).code == ErrorCode::protocol);
    CHECK(error_of(decode(R"({"v":2,"t":"HEARTBEAT","epoch":1})")).code == ErrorCode::protocol);
    CHECK(error_of(decode(R"({"t":"ERROR","code":"NOPE"})")).code == ErrorCode::protocol);
    CHECK(error_of(decode(R"({"v":1,"seq":1})")).code == ErrorCode::protocol);

    const std::string big = R"({"t":"LEAVE","reason":")" + std::string(200, 'x') + R"("})";
    CHECK(error_of(decode(big, 100)).code == ErrorCode::too_large);
    CHECK(std::holds_alternative<Envelope>(decode(big, 1000)));
}

TEST_CASE("a PREPARE names each member once, in rank order") {
    const auto prepare = [](const std::string& members, const std::string& size = "") {
        return decode(R"({"t":"PREPARE","epoch":2,"from_epoch":1,"view_hash":"h","added":[],"removed":[],"members":)" +
                      members + size + "}");
    };
    REQUIRE(std::holds_alternative<Envelope>(prepare("[3,7]")));
    CHECK(std::get<Prepare>(std::get<Envelope>(prepare("[7,3]")).body).members == std::vector<MemberId>{7, 3});
    CHECK(error_of(prepare("[7,3,7]")).code == ErrorCode::protocol);     // a member twice
    CHECK(error_of(prepare(R"(["x"])")).code == ErrorCode::protocol);    // not a member id
    CHECK(error_of(prepare(R"({"7":0})")).code == ErrorCode::protocol);  // the old object form
    CHECK(error_of(prepare("[7]", R"(,"size":2)")).code == ErrorCode::protocol);
    CHECK(error_of(prepare("[7,3,7]")).message.find("/members") != std::string::npos);
}

TEST_CASE("a bad field deep in a line is named by its JSON pointer") {
    const DecodeError e = error_of(
        decode(R"({"t":"PREPARE","seq":4,"epoch":2,"from_epoch":1,"view_hash":"h","members":[1,2],"removed":[],)"
               R"("added":[{"member_id":1,"rank":0,"addr_b64":""},{"member_id":2,"rank":"one","addr_b64":""}]})"));
    CHECK(e.code == ErrorCode::protocol);
    CHECK(e.seq == 4);
    CHECK(e.message.find("/added/1/rank") != std::string::npos);
    CHECK(e.message.find("expected an integer, got string") != std::string::npos);
    const DecodeError no_addr =
        error_of(decode(R"({"t":"PREPARE","epoch":2,"from_epoch":1,"view_hash":"h","members":[1],"removed":[],)"
                        R"("added":[{"rank":0,"member_id":1}]})"));
    CHECK(no_addr.message.find("/added/0/addr_b64") != std::string::npos);
    CHECK(no_addr.message.find("missing required field") != std::string::npos);
    const DecodeError missing = error_of(decode(R"({"t":"HELLO","job":"j","token":"t","incarnation":"i"})"));
    CHECK(missing.message.find("/worker_id") != std::string::npos);
    const DecodeError meta =
        error_of(decode(R"({"t":"HELLO","job":"j","token":"t","worker_id":"w","incarnation":"i","meta":[1]})"));
    CHECK(meta.message.find("/meta") != std::string::npos);
}

TEST_CASE("unknown fields are ignored") {
    const Decoded d = decode(R"({"v":1,"t":"HEARTBEAT","seq":2,"epoch":3,"future":{"x":1}})");
    REQUIRE(std::holds_alternative<Envelope>(d));
    CHECK(std::get<Envelope>(d) == Envelope{2, Heartbeat{3}});
}

TEST_CASE("records round-trip through JSON and unknown kinds are data errors") {
    const std::vector<Record> records{
        StartRecord{3},
        ConfigRecord{2, 16, 100},
        RegisterRecord{4, "i-1", "inc", "sess", "host", "QQ==", Json{{"gpus", 8}}},
        ProposeRecord{5, 4, {1, 4, 2}, "abcd"},
        CommitRecord{5, "abcd"},
        AbortRecord{6},
        DeadRecord{2, 5, "lease expired"},
        LeftRecord{3, 5},
        KvPutRecord{5, KvScope::epoch, 4, "k", "dg=="},
        CloseRecord{},
    };
    for (const Record& r : records)
        CHECK(record_from_json(to_json(r)) == r);
    CHECK_THROWS_AS(record_from_json(Json{{"r", "SNAPSHOT"}}), gpuops::DataError);
    CHECK_THROWS_AS(record_from_json(Json{{"r", "COMMIT"}, {"epoch", 1}}), gpuops::DataError);
}
