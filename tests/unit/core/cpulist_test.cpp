// CPU lists: formatting merges runs, parsing rejects what taskset would.
#include <catch2/catch.hpp>

#include "gpuops/core/cpulist.hpp"
#include "gpuops/core/error.hpp"

using namespace gpuops;

TEST_CASE("cpu lists merge runs and drop duplicates", "[cpulist]") {
    CHECK(cpulist::format(std::vector<int>{}) == "");
    CHECK(cpulist::format(std::vector<int>{3}) == "3");
    CHECK(cpulist::format(std::vector<int>{0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11");
    CHECK(cpulist::format(std::vector<int>{11, 10, 3, 3, 2, 1, 0, 8}) == "0-3,8,10-11");
    CHECK(cpulist::format(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}) == "0-7");
}

TEST_CASE("cpu lists parse and round-trip", "[cpulist]") {
    CHECK(cpulist::parse("0-3,8,10-11") == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
    CHECK(cpulist::parse("").empty());
    const auto v = cpulist::parse("0-55,112-167");
    CHECK(v.size() == 112);
    CHECK(cpulist::format(v) == "0-55,112-167");
    CHECK_THROWS_WITH(cpulist::parse("3-1"), "invalid CPU list '3-1' (descending range)");
    CHECK_THROWS_AS(cpulist::parse("a-b"), DataError);
    CHECK_THROWS_AS(cpulist::parse("1,,2"), DataError);
    CHECK_THROWS_AS(cpulist::parse("-1"), DataError);
    CHECK_THROWS_WITH(cpulist::parse("0-99999999"), "invalid CPU list '0-99999999' (too many CPUs)");
}
