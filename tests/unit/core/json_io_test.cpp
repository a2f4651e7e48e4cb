// The JSON front door: documents, JSON Lines, schema headers, pointer-carrying errors.
#include <catch2/catch.hpp>

#include <sstream>

#include "gpuops/core/error.hpp"
#include "gpuops/core/json_io.hpp"

using gpuops::DataError;
using namespace gpuops::json_io;

TEST_CASE("header: schema, version and generator come first, in that order", "[json]") {
    Json doc = make_header("gpuops.topology", 1, "vp-probe");
    doc["devices"] = Json::array();
    const std::string text = doc.dump();
    CHECK(text.rfind(R"({"schema":"gpuops.topology","schema_version":1,"generator":{"tool":"vp-probe","version":)",
                     0) == 0);
    CHECK(check_header(doc, "gpuops.topology", 1) == 1);
}

TEST_CASE("header: another schema, a newer major, a missing version are data errors with pointers", "[json]") {
    const Json other = {{"schema", "gpuops.plan"}, {"schema_version", 1}};
    CHECK_THROWS_WITH(check_header(other, "gpuops.topology", 1),
                      "(/schema) expected a 'gpuops.topology' document, got 'gpuops.plan'");
    const Json newer = {{"schema", "gpuops.topology"}, {"schema_version", 3}};
    CHECK_THROWS_WITH(check_header(newer, "gpuops.topology", 1),
                      "(/schema_version) unsupported 'gpuops.topology' schema_version 3 (this build reads up to 1)");
    const Json missing = {{"schema", "gpuops.topology"}};
    CHECK_THROWS_WITH(check_header(missing, "gpuops.topology", 1), "(/schema_version) missing required field");
    CHECK_THROWS_AS(check_header(Json::array(), "gpuops.topology", 1), DataError);
    const Json older_ok = {{"schema", "gpuops.topology"}, {"schema_version", 1}, {"unknown_field", true}};
    CHECK(check_header(older_ok, "gpuops.topology", 2) == 1);  // unknown fields are ignored
}

TEST_CASE("parse errors name the source and the line", "[json]") {
    try {
        (void)parse_document("{\n  \"a\": 1,\n  \"b\": ]\n}", "x.json");
        FAIL("no exception");
    } catch (const DataError& e) {
        CHECK(e.where().file == "x.json");
        CHECK(e.where().line == 3);
        CHECK(std::string(e.what()).rfind("'x.json' line 3: invalid JSON: ", 0) == 0);
    }
}

TEST_CASE("JSON Lines: one value per line, blank lines skipped, the bad line named", "[json]") {
    std::istringstream good("{\"a\":1}\n\n{\"a\":2}\n[3]\n");
    const auto records = parse_lines(good, "r.jsonl");
    REQUIRE(records.size() == 3);
    CHECK(records[1]["a"] == 2);
    std::istringstream bad("{\"a\":1}\n{\"a\":\n");
    CHECK_THROWS_WITH(parse_lines(bad, "r.jsonl"), Catch::Matchers::StartsWith("'r.jsonl' line 2: invalid JSON: "));
}

TEST_CASE("View: typed access reports the JSON pointer of the bad value", "[json]") {
    const Json doc = Json::parse(R"({"devices":[{"kind":"gpu","count":-1,"ok":true,"a/b":1,"x":2.5}]})");
    const View root(doc);
    const View dev = root.at("devices").at(0);
    CHECK(dev.at("kind").as_string() == "gpu");
    CHECK(dev.at("ok").as_bool());
    CHECK(dev.at("a/b").pointer() == "/devices/0/a~1b");
    CHECK_THROWS_WITH(dev.at("count").as_int(0, 10), "(/devices/0/count) expected an integer in [0, 10], got -1");
    CHECK_THROWS_WITH(dev.at("kind").as_number(), "(/devices/0/kind) expected a number, got string");
    CHECK_THROWS_WITH(dev.at("x").as_int(), "(/devices/0/x) expected an integer, got 2.5");
    CHECK_THROWS_WITH(dev.at("name"), "(/devices/0/name) missing required field");
    CHECK_THROWS_WITH(root.at("devices").at(3), "(/devices) index 3 out of range (array has 1)");
    CHECK_FALSE(dev.find("name").has_value());
    CHECK(dev.int_or_null("count") == -1);
    CHECK(dev.string_or_null("missing") == std::nullopt);
}

TEST_CASE("read_document: a missing file is 'input missing', not bad data", "[json]") {
    CHECK_THROWS_AS(read_document("/nonexistent/gpuops-test.json"), gpuops::InputMissingError);
    CHECK_THROWS_WITH(read_document("/nonexistent/gpuops-test.json"),
                      "cannot open '/nonexistent/gpuops-test.json': No such file or directory");
    CHECK(display_name("-") == "<stdin>");
    CHECK(display_name("") == "<stdin>");
    CHECK(display_name("a.json") == "a.json");
}

TEST_CASE("DataError renders file, line and pointer in the one gpuops voice", "[json][error]") {
    CHECK(std::string(DataError("bad", {"f.xml", "", 12}).what()) == "'f.xml' line 12: bad");
    CHECK(std::string(DataError("bad", {"", "/a/0", 0}).what()) == "(/a/0) bad");
    CHECK(std::string(DataError("bad", {"f.json", "/a", 0}).what()) == "'f.json': (/a) bad");
    const DataError e = DataError("bad", {"", "/x", 0}).in_file("doc.json").under_pointer("/outer");
    CHECK(std::string(e.what()) == "'doc.json': (/outer/x) bad");
    CHECK(e.code() == gpuops::ExitCode::data);
    CHECK(gpuops::to_int(gpuops::IoError("x").code()) == 74);
    CHECK(gpuops::to_int(gpuops::TimeoutError("x").code()) == 75);
    CHECK(gpuops::to_int(gpuops::UsageError("x").code()) == 2);
}
