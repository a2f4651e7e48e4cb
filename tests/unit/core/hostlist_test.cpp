// Unit tests for gpuops::hostlist: Slurm's expansion order, malformed expressions, the size cap and round trips.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gpuops/core/error.hpp"
#include "gpuops/core/hostlist.hpp"

using gpuops::DataError;
namespace hostlist = gpuops::hostlist;
using Names = std::vector<std::string>;

TEST_CASE("expand lists ranges, plain names and several groups in Slurm's order", "[hostlist]") {
    CHECK(hostlist::expand("node[01-04,07],gpu-a[1-2]") ==
          Names{"node01", "node02", "node03", "node04", "node07", "gpu-a1", "gpu-a2"});
    CHECK(hostlist::expand("login") == Names{"login"});
    CHECK(hostlist::expand("a,b,c") == Names{"a", "b", "c"});
    CHECK(hostlist::expand("rack[1-2]-n[1-2]") == Names{"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"});
    CHECK(hostlist::expand("r[1-2]s[3,5]n[7-8]") ==
          Names{"r1s3n7", "r1s3n8", "r1s5n7", "r1s5n8", "r2s3n7", "r2s3n8", "r2s5n7", "r2s5n8"});
    CHECK(hostlist::expand("n[1-2]-ib") == Names{"n1-ib", "n2-ib"});
    CHECK(hostlist::expand("n[5]") == Names{"n5"});
    CHECK(hostlist::expand("[1-2]") == Names{"1", "2"});
    CHECK(hostlist::expand("n[0-1]") == Names{"n0", "n1"});
}

TEST_CASE("expand keeps the zero padding of each range's lower bound", "[hostlist]") {
    CHECK(hostlist::expand("n[08-10]") == Names{"n08", "n09", "n10"});
    CHECK(hostlist::expand("n[8-10]") == Names{"n8", "n9", "n10"});
    CHECK(hostlist::expand("n[001-3]") == Names{"n001", "n002", "n003"});
    CHECK(hostlist::expand("n[1-2,01-02]") == Names{"n1", "n2", "n01", "n02"});
    CHECK(hostlist::expand("n[098-100]") == Names{"n098", "n099", "n100"});
}

TEST_CASE("expand tolerates whitespace and keeps duplicates in order", "[hostlist]") {
    CHECK(hostlist::expand(" a , b[1-2] ,c ") == Names{"a", "b1", "b2", "c"});
    CHECK(hostlist::expand("a b\tc\nd") == Names{"a", "b", "c", "d"});
    CHECK(hostlist::expand("n[1, 3 - 4]") == Names{"n1", "n3", "n4"});
    CHECK(hostlist::expand("a,a,n[1-2],n2") == Names{"a", "a", "n1", "n2", "n2"});
    CHECK(hostlist::expand("n[2,1,2]") == Names{"n2", "n1", "n2"});
    CHECK(hostlist::expand("").empty());
    CHECK(hostlist::expand(" \t\n").empty());
}

TEST_CASE("expand rejects malformed expressions naming them", "[hostlist]") {
    for (const char* expr : {"node[1-",
                             "node[",
                             "node[3-1]",
                             "node[a-b]",
                             "node[]",
                             "node[ ]",
                             "a,,b",
                             ",a",
                             "a,",
                             "a, ,b",
                             ",",
                             "node]1",
                             "node[1]]",
                             "node[1[2]]",
                             "node[1-2-3]",
                             "node[1,]",
                             "node[,1]",
                             "node[-3]",
                             "node[3-]",
                             "node[1 2]",
                             "node[+1]",
                             "node[0x1]",
                             "node[99999999999999999999]",
                             "node[1-99999999999999999999]"}) {
        INFO(expr);
        CHECK_THROWS_AS(hostlist::expand(expr), DataError);
    }
    CHECK_THROWS_WITH(hostlist::expand("node[3-1]"), "invalid hostlist 'node[3-1]' (descending range 3-1)");
    CHECK_THROWS_WITH(hostlist::expand("node[1-"), "invalid hostlist 'node[1-' (unclosed '[')");
    CHECK_THROWS_WITH(hostlist::expand("node[]"), "invalid hostlist 'node[]' (empty '[]')");
    CHECK_THROWS_WITH(hostlist::expand("a,,b"), "invalid hostlist 'a,,b' (empty host name)");
    CHECK_THROWS_WITH(hostlist::expand("node[a-b]"),
                      "invalid hostlist 'node[a-b]' (expected numbers or ranges such as 1-4 inside '[a-b]')");
}

TEST_CASE("expand error messages stay on one line and short", "[hostlist]") {
    try {
        (void)hostlist::expand(std::string(5000, 'a') + "\n[");
        FAIL("no error");
    } catch (const DataError& e) {
        const std::string message = e.what();
        CHECK(message.find('\n') == std::string::npos);
        CHECK(message.size() < 300);
        CHECK_THAT(message, Catch::Contains("...") && Catch::Contains("(unclosed '[')"));
    }
}

TEST_CASE("expand stops at a million names", "[hostlist]") {
    const Names million = hostlist::expand("n[1-1000000]");
    REQUIRE(million.size() == hostlist::max_expanded_hosts);
    CHECK(million.front() == "n1");
    CHECK(million.back() == "n1000000");
    for (const char* expr : {"n[1-1000001]", "n[1-1000000],x", "n[1-1000],m[1-999001]", "a[1-1000]b[1-1001]",
                             "n[1-10][1-10][1-10][1-10][1-10][1-10][1-10]", "n[0-18446744073709551615]",
                             "n[0-18446744073709551615][0-18446744073709551615]", "n[1-600000,1-600000]"}) {
        INFO(expr);
        CHECK_THROWS_WITH(hostlist::expand(expr), Catch::Contains("(expands to more than 1000000 names)"));
    }
    CHECK(hostlist::expand("a[1-1000]b[1-1000]").size() == 1'000'000);
}

TEST_CASE("expand refuses names longer than a DNS name", "[hostlist]") {
    CHECK(hostlist::expand(std::string(255, 'a')).size() == 1);
    CHECK(hostlist::expand(std::string(250, 'a') + "[1-99999]").back() == std::string(250, 'a') + "99999");
    CHECK_THROWS_WITH(hostlist::expand(std::string(256, 'a')), Catch::Contains("longer than 255 characters"));
    CHECK_THROWS_WITH(hostlist::expand(std::string(250, 'a') + "[1-100000]"), Catch::Contains("longer than 255"));
    CHECK_THROWS_AS(hostlist::expand("n[1]" + std::string(300, '0')), DataError);
    std::string many_groups = "n";
    for (int i = 0; i < 300; ++i)
        many_groups += "[1]";
    CHECK_THROWS_AS(hostlist::expand(many_groups), DataError);
}

TEST_CASE("compress groups by prefix, sorts numerically and merges runs", "[hostlist]") {
    CHECK(hostlist::compress(Names{"node01", "node02", "node03", "node04", "node07", "gpu-a1", "gpu-a2"}) ==
          "gpu-a[1-2],node[01-04,07]");
    CHECK(hostlist::compress(Names{"n3", "n1", "n2", "n1"}) == "n[1-3]");
    CHECK(hostlist::compress(Names{"n10", "n2", "n9", "n1"}) == "n[1-2,9-10]");
    CHECK(hostlist::compress(Names{"n5"}) == "n5");
    CHECK(hostlist::compress(Names{"n5", "n5"}) == "n5");
    CHECK(hostlist::compress(Names{}).empty());
    CHECK(hostlist::compress(Names{"login", "n1", "n2", "db"}) == "db,login,n[1-2]");
    CHECK(hostlist::compress(Names{"node2", "node", "node1"}) == "node,node[1-2]");
    CHECK(hostlist::compress(Names{"rack1-n1", "rack1-n2", "rack2-n1"}) == "rack1-n[1-2],rack2-n1");
    CHECK(hostlist::compress(Names{"12", "13", "14"}) == "[12-14]");
    CHECK(hostlist::compress(Names{"n99999999999999999999999"}) == "n99999999999999999999999");
}

TEST_CASE("compress keeps different zero paddings in different ranges", "[hostlist]") {
    CHECK(hostlist::compress(Names{"n1", "n01"}) == "n[1,01]");
    CHECK(hostlist::compress(Names{"n1", "n2", "n01", "n02"}) == "n[1-2,01-02]");
    CHECK(hostlist::compress(Names{"n08", "n09", "n10"}) == "n[08-10]");
    CHECK(hostlist::compress(Names{"n9", "n10"}) == "n[9-10]");
    CHECK(hostlist::compress(Names{"n098", "n099", "n100", "n101"}) == "n[098-101]");
    CHECK(hostlist::compress(Names{"n0", "n00", "n000"}) == "n[0,00,000]");
}

TEST_CASE("compress rejects names a hostlist cannot hold", "[hostlist]") {
    for (const char* bad : {"", "a b", "a,b", "a[1]", "a]", "tab\there"}) {
        INFO(bad);
        CHECK_THROWS_AS(hostlist::compress(Names{"ok1", bad}), DataError);
    }
    CHECK_THROWS_WITH(hostlist::compress(Names{"a,b"}), Catch::StartsWith("invalid host name 'a,b'"));
}

TEST_CASE("compress of expand gives back a canonical expression", "[hostlist]") {
    for (const char* expr : {"node[01-04,07]", "gpu-a[1-2],node[01-04,07]", "n[1-3,5,7-9]", "n[008-100]", "a,b,c", "n5",
                             "n[9-10]", "db,login,n[1-2]", "n[1-2,01-02]", "n[1-1000000]"}) {
        INFO(expr);
        CHECK(hostlist::compress(hostlist::expand(expr)) == expr);
    }
}

TEST_CASE("expand of compress gives every distinct host exactly once", "[hostlist]") {
    std::mt19937 random(12345);  // fixed seed: the same cases on every run
    const std::vector<std::string> prefixes{"n", "gpu-", "rack1-n", "", "login"};
    for (int round = 0; round < 200; ++round) {
        Names hosts;
        const int count = std::uniform_int_distribution<int>(0, 60)(random);
        for (int i = 0; i < count; ++i) {
            const std::string& prefix = prefixes[std::uniform_int_distribution<std::size_t>(0, 4)(random)];
            const int number = std::uniform_int_distribution<int>(0, 120)(random);
            const int width = std::uniform_int_distribution<int>(0, 4)(random);
            std::string digits = width == 4 ? std::string() : std::to_string(number);  // 4: a name without a number
            if (digits.size() < static_cast<std::size_t>(width) && width < 4)
                digits.insert(0, static_cast<std::size_t>(width) - digits.size(), '0');
            if (prefix.empty() && digits.empty()) continue;
            hosts.push_back(prefix + digits);
        }
        const std::string compressed = hostlist::compress(hosts);
        INFO(compressed);
        const Names expanded = hostlist::expand(compressed);
        const std::set<std::string> distinct(hosts.begin(), hosts.end());
        CHECK(expanded.size() == distinct.size());
        CHECK(std::set<std::string>(expanded.begin(), expanded.end()) == distinct);
        CHECK(hostlist::compress(expanded) == compressed);
    }
}
