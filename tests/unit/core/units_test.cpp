// Unit tests for gpuops::units: every accepted spelling, every rejection, and printing that parses back.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gpuops/core/error.hpp"
#include "gpuops/core/units.hpp"

using namespace std::chrono_literals;
using gpuops::DataError;
namespace units = gpuops::units;

namespace {

constexpr double gib = 1024.0 * 1024.0 * 1024.0;
constexpr std::uint64_t kib = 1024;
constexpr std::uint64_t mib = kib * 1024;
constexpr std::uint64_t gib_bytes = mib * 1024;
constexpr std::uint64_t eib = gib_bytes * 1024 * 1024 * 1024;

}  // namespace

TEST_CASE("parse_bandwidth reads bytes and bits with decimal and binary prefixes", "[units]") {
    const std::vector<std::pair<std::string, double>> cases{
        {"25GB/s", 25e9},
        {"25 GB/s", 25e9},
        {"  25GB/s\t", 25e9},
        {"25GBps", 25e9},
        {"200Gb/s", 25e9},
        {"400Gbps", 50e9},
        {"100 Gbit/s", 12.5e9},
        {"100Gbits/s", 12.5e9},
        {"12.5GiB/s", 12.5 * gib},
        {"100MB/s", 1e8},
        {"1.5TB/s", 1.5e12},
        {"800Mb/s", 1e8},
        {"1kB/s", 1e3},
        {"1KB/s", 1e3},
        {"1KiB/s", 1024},
        {"2MiB/s", 2 * 1024.0 * 1024.0},
        {"1PB/s", 1e15},
        {"8b/s", 1},
        {"3B/s", 3},
        {"0.5B/s", 0.5},
        {"1Tbps", 125e9},
        {"007GB/s", 7e9},
    };
    for (const auto& [text, expected] : cases) {
        INFO(text);
        CHECK(units::parse_bandwidth(text) == Approx(expected).epsilon(1e-12));
    }
}

TEST_CASE("parse_bandwidth rejects what is not a positive bandwidth", "[units]") {
    for (const char* text :
         {"",         "   ",       "GB/s",    "25",     "25 GB",      "25gb/s",   "25 G B/s", "25GX/s",
          "25GB/s x", "25..5GB/s", "+25GB/s", "1e9B/s", "nan GB/s",   "inf GB/s", "25 Gibit", "25Mib",
          "25mB/s",   ".5GB/s",    "5.GB/s",  "0GB/s",  "0.000 Gb/s", "-5GB/s"}) {
        INFO(text);
        CHECK_THROWS_AS(units::parse_bandwidth(text), DataError);
    }
    CHECK_THROWS_WITH(units::parse_bandwidth("25GX/s"),
                      "invalid bandwidth '25GX/s' (expected a number and a unit such as 25GB/s or 200Gb/s)");
    CHECK_THROWS_WITH(units::parse_bandwidth("-5GB/s"), "invalid bandwidth '-5GB/s' (must be greater than zero)");
    CHECK_THROWS_WITH(units::parse_bandwidth("0GB/s"), "invalid bandwidth '0GB/s' (must be greater than zero)");
    const std::string huge = "1" + std::string(400, '0') + "GB/s";
    CHECK_THROWS_WITH(units::parse_bandwidth(huge), Catch::Contains("(too large)"));
    const std::string overflowing = "1" + std::string(300, '0') + "PB/s";  // finite number, infinite product
    CHECK_THROWS_WITH(units::parse_bandwidth(overflowing), Catch::Contains("(too large)"));
}

TEST_CASE("format_bandwidth prints decimal bytes with at most 4 significant digits", "[units]") {
    CHECK(units::format_bandwidth(25e9) == "25 GB/s");
    CHECK(units::format_bandwidth(1.5e9) == "1.5 GB/s");
    CHECK(units::format_bandwidth(4e8) == "400 MB/s");
    CHECK(units::format_bandwidth(12.34e9) == "12.34 GB/s");
    CHECK(units::format_bandwidth(12.3456e9) == "12.35 GB/s");
    CHECK(units::format_bandwidth(999.94e6) == "999.9 MB/s");
    CHECK(units::format_bandwidth(999.96e6) == "1 GB/s");  // rounding carries into the next unit
    CHECK(units::format_bandwidth(1000) == "1 kB/s");
    CHECK(units::format_bandwidth(512) == "512 B/s");
    CHECK(units::format_bandwidth(0.5) == "0.5 B/s");
    CHECK(units::format_bandwidth(0) == "0 B/s");
    CHECK(units::format_bandwidth(2e18) == "2 EB/s");
    CHECK(units::format_bandwidth(5e22) == "50000 EB/s");
    CHECK(units::format_bandwidth(-25e9) == "-25 GB/s");
    CHECK(units::format_bandwidth(std::nan("")) == "n/a");
    CHECK(units::format_bandwidth(std::numeric_limits<double>::infinity()) == "n/a");
}

TEST_CASE("format_bandwidth output parses back to the same value within its precision", "[units]") {
    for (double v : {1.0, 999.0, 1234.0, 31.5e9, 25e9, 12.5e9, 1e8, 3.3e12, 7.77e15}) {
        INFO(v);
        CHECK(units::parse_bandwidth(units::format_bandwidth(v)) == Approx(v).epsilon(5e-4));
    }
}

TEST_CASE("parse_pcie_link reads the spellings of lspci, nvidia-smi and NCCL", "[units]") {
    using units::PcieLink;
    const std::vector<std::pair<std::string, PcieLink>> cases{
        {"16GT/s x16", {4, 16, 16.0}},
        {"16 GT/s x16", {4, 16, 16.0}},
        {"16.0 GT/s PCIe x8", {4, 8, 16.0}},
        {"32 GT/s PCIe/s x16", {5, 16, 32.0}},
        {"Gen4 x16", {4, 16, 16.0}},
        {"gen5x8", {5, 8, 32.0}},
        {"GEN 3 X4", {3, 4, 8.0}},
        {"PCIe Gen6 x16", {6, 16, 64.0}},
        {"Gen4", {4, 0, 16.0}},
        {"8 GT/s", {3, 0, 8.0}},
        {"2.5GT/s x1", {1, 1, 2.5}},
        {"5GT/s x2", {2, 2, 5.0}},
        {"15.999GT/s x12", {4, 12, 16.0}},
        {"64GT/s x32", {6, 32, 64.0}},
        {"16GT/s, x16", {4, 16, 16.0}},
        {"  16gt/s x16  ", {4, 16, 16.0}},
    };
    for (const auto& [text, expected] : cases) {
        INFO(text);
        CHECK(units::parse_pcie_link(text) == expected);
    }
}

TEST_CASE("parse_pcie_link rejects unknown speeds, generations and widths", "[units]") {
    for (const char* text : {"",
                             "x16",
                             "16",
                             "16 GB/s x16",
                             "10GT/s x16",
                             "16GT/s x3",
                             "16GT/s x0",
                             "16GT/s x64",
                             "16GT/s x",
                             "16GT/s x16 x16",
                             "16GT/s x16 extra",
                             "Gen9 x16",
                             "Gen0",
                             "Gen x16",
                             "Gen4.0 x16",
                             "gen99999999999999999999",
                             "16GT/s x1.5",
                             "Unknown",
                             "N/A",
                             "-16GT/s"}) {
        INFO(text);
        CHECK_THROWS_AS(units::parse_pcie_link(text), DataError);
    }
    CHECK_THROWS_WITH(units::parse_pcie_link("16GT/s x3"),
                      "invalid PCIe link '16GT/s x3' (unsupported link width x3; expected x1, x2, x4, x8, x12, x16 "
                      "or x32)");
    CHECK_THROWS_WITH(units::parse_pcie_link("10GT/s x16"),
                      "invalid PCIe link '10GT/s x16' (unknown PCIe speed 10GT/s)");
    CHECK_THROWS_WITH(units::parse_pcie_link("Gen9"), "invalid PCIe link 'Gen9' (unknown PCIe generation 9)");
}

TEST_CASE("PCIe generations map to transfer rates and back", "[units]") {
    const std::vector<std::pair<int, double>> table{{1, 2.5},  {2, 5.0},  {3, 8.0},  {4, 16.0},
                                                    {5, 32.0}, {6, 64.0}, {7, 128.0}};
    for (const auto& [gen, gts] : table) {
        INFO(gen);
        CHECK(units::pcie_gts_for_gen(gen) == gts);
        CHECK(units::pcie_gen_for_gts(gts) == gen);
        CHECK(units::pcie_gen_for_gts(gts * 1.001) == gen);
        CHECK(units::pcie_gen_for_gts(gts * 0.999) == gen);
    }
    CHECK(units::pcie_gts_for_gen(0) == 0.0);
    CHECK(units::pcie_gts_for_gen(8) == 0.0);
    CHECK(units::pcie_gts_for_gen(-1) == 0.0);
    CHECK(units::pcie_gen_for_gts(10.0) == 0);
    CHECK(units::pcie_gen_for_gts(0.0) == 0);
    CHECK(units::pcie_gen_for_gts(-16.0) == 0);
    CHECK(units::pcie_gen_for_gts(std::nan("")) == 0);
}

TEST_CASE("pcie_raw_bandwidth applies each generation's line encoding", "[units]") {
    CHECK(units::pcie_raw_bandwidth(1, 1) == Approx(250e6));  // 2.5 GT/s * 8/10 / 8
    CHECK(units::pcie_raw_bandwidth(2, 16) == Approx(8e9));   // 5 GT/s * 8/10 / 8 * 16
    CHECK(units::pcie_raw_bandwidth(3, 1) == Approx(8e9 * 128 / 130 / 8));
    CHECK(units::pcie_raw_bandwidth(4, 16) == Approx(31.5076923e9));
    CHECK(units::pcie_raw_bandwidth(5, 16) == Approx(63.0153846e9));
    CHECK(units::pcie_raw_bandwidth(6, 16) == Approx(121e9));  // 64 GT/s * 242/256 / 8 * 16
    CHECK(units::pcie_raw_bandwidth(4, 8) * 2 == Approx(units::pcie_raw_bandwidth(4, 16)));
    CHECK(units::pcie_raw_bandwidth(0, 16) == 0.0);
    CHECK(units::pcie_raw_bandwidth(9, 16) == 0.0);
    CHECK(units::pcie_raw_bandwidth(4, 0) == 0.0);
    CHECK(units::pcie_raw_bandwidth(4, -16) == 0.0);
}

TEST_CASE("format_pcie_link writes GT/s and width and parses back", "[units]") {
    CHECK(units::format_pcie_link({4, 16, 16.0}) == "16GT/s x16");
    CHECK(units::format_pcie_link({1, 1, 2.5}) == "2.5GT/s x1");
    CHECK(units::format_pcie_link({4, 0, 16.0}) == "16GT/s");
    CHECK(units::format_pcie_link({5, 8, 0.0}) == "32GT/s x8");  // rate taken from the generation
    CHECK(units::format_pcie_link({0, 16, 0.0}) == "unknown");
    CHECK(units::format_pcie_link({}) == "unknown");
    for (int gen = 1; gen <= 7; ++gen) {
        for (int width : {0, 1, 2, 4, 8, 12, 16, 32}) {
            const units::PcieLink link{gen, width, units::pcie_gts_for_gen(gen)};
            INFO(units::format_pcie_link(link));
            CHECK(units::parse_pcie_link(units::format_pcie_link(link)) == link);
        }
    }
}

TEST_CASE("parse_size reads bytes, dd-style letters, SI and IEC units", "[units]") {
    const std::vector<std::pair<std::string, std::uint64_t>> cases{
        {"4096", 4096},
        {"0", 0},
        {"512B", 512},
        {"4KiB", 4 * kib},
        {"4 KiB", 4 * kib},
        {"4kiB", 4 * kib},
        {"1.5MiB", 3 * mib / 2},
        {"1GB", 1'000'000'000},
        {"1kB", 1000},
        {"1KB", 1000},
        {"64k", 64 * kib},
        {"64K", 64 * kib},
        {"2G", 2 * gib_bytes},
        {"2g", 2 * gib_bytes},
        {"128M", 128 * mib},
        {"1.5k", 1536},
        {"0.5KiB", 512},
        {"1.000MB", 1'000'000},
        {"0.001KB", 1},
        {"1E", eib},
        {"15EiB", 15 * eib},
        {"1.5EiB", 3 * (eib / 2)},
        {"17.5EB", 17'500'000'000'000'000'000ULL},
        {"18446744073709551615", std::numeric_limits<std::uint64_t>::max()},
        {" 8 MiB ", 8 * mib},
    };
    for (const auto& [text, expected] : cases) {
        INFO(text);
        CHECK(units::parse_size(text) == expected);
    }
}

TEST_CASE("parse_size rejects junk, negatives, fractions of a byte and overflow", "[units]") {
    for (const char* text : {"",
                             "k",
                             "MiB",
                             "1 k B",
                             "1kb",
                             "1mB",
                             "1Mi",
                             "1.5.5M",
                             "1 2",
                             "1e3",
                             "1x",
                             "0x10",
                             "-1",
                             "-1K",
                             "1.1k",
                             "0.0001KB",
                             "1.5",
                             "16EiB",
                             "16E",
                             "18.5EB",
                             "18446744073709551616",
                             "99999999999999999999999",
                             "0.00000000000000000001EB"}) {
        INFO(text);
        CHECK_THROWS_AS(units::parse_size(text), DataError);
    }
    CHECK_THROWS_WITH(units::parse_size("1.1k"), "invalid size '1.1k' (not a whole number of bytes)");
    CHECK_THROWS_WITH(units::parse_size("-1K"), "invalid size '-1K' (must not be negative)");
    CHECK_THROWS_WITH(units::parse_size("16EiB"), "invalid size '16EiB' (too large; the maximum is 2^64-1 bytes)");
    CHECK_THROWS_WITH(units::parse_size("4 KB/s"), Catch::Contains("expected a number and an optional unit"));
}

TEST_CASE("format_size prints binary units with at most 4 significant digits", "[units]") {
    CHECK(units::format_size(0) == "0 B");
    CHECK(units::format_size(512) == "512 B");
    CHECK(units::format_size(1023) == "1023 B");
    CHECK(units::format_size(1024) == "1 KiB");
    CHECK(units::format_size(1025) == "1.001 KiB");
    CHECK(units::format_size(1536) == "1.5 KiB");
    CHECK(units::format_size(4096) == "4 KiB");
    CHECK(units::format_size(1000 * kib) == "1000 KiB");
    CHECK(units::format_size(mib - 1) == "1 MiB");  // 1023.999 KiB rounds into the next unit
    CHECK(units::format_size(3 * mib / 2) == "1.5 MiB");
    CHECK(units::format_size(10 * gib_bytes * 1024) == "10 TiB");
    CHECK(units::format_size(std::numeric_limits<std::uint64_t>::max()) == "16 EiB");
}

TEST_CASE("format_size output of round sizes parses back exactly", "[units]") {
    for (std::uint64_t v : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{512}, 4 * kib, 3 * mib / 2, gib_bytes,
                            3 * gib_bytes * 1024, 15 * eib}) {
        INFO(v);
        CHECK(units::parse_size(units::format_size(v)) == v);
    }
}

TEST_CASE("parse_duration reads units, fractions and sums", "[units]") {
    const std::vector<std::pair<std::string, std::chrono::nanoseconds>> cases{
        {"30s", 30s},
        {"250ms", 250ms},
        {"1.5s", 1500ms},
        {"2m", 120s},
        {"1h", 3600s},
        {"100us", 100us},
        {"100\xC2\xB5s", 100us},
        {"100\xCE\xBCs", 100us},
        {"10ns", 10ns},
        {"1m30s", 90s},
        {"1h2m3s", 3723s},
        {"1h 30m", 5400s},
        {"30 s", 30s},
        {"90", 90s},
        {"0.5", 500ms},
        {"0", 0ns},
        {"0s", 0ns},
        {"1.5ms", 1500us},
        {"0.1s", 100ms},
        {"0.25h", 900s},
        {"1.0000000001s", 1s},  // a tenth of a nanosecond rounds away
        {"2562047h47m16.854775807s", std::chrono::nanoseconds::max()},
        {"9223372036.854775807s", std::chrono::nanoseconds::max()},
    };
    for (const auto& [text, expected] : cases) {
        INFO(text);
        CHECK(units::parse_duration(text) == expected);
    }
}

TEST_CASE("parse_duration rejects junk, negatives and overflow", "[units]") {
    for (const char* text :
         {"", "  ", "s", "1x", "30sec", "1m30", "1.s", ".5s", "1s-", "1 m s", "-1s", "-0", "1e3s", "+1s", "1h-1m",
          "2562047h47m16.854775808s", "9223372037s", "99999999999999999999999h", "3000000h"}) {
        INFO(text);
        CHECK_THROWS_AS(units::parse_duration(text), DataError);
    }
    CHECK_THROWS_WITH(units::parse_duration("5x"),
                      "invalid duration '5x' (expected a number and a unit such as 30s, 250ms or 1m30s)");
    CHECK_THROWS_WITH(units::parse_duration("-1s"), "invalid duration '-1s' (must not be negative)");
    CHECK_THROWS_WITH(units::parse_duration("3000000h"), Catch::Contains("too long"));
}

TEST_CASE("format_duration picks a unit and rounds to 4 significant digits", "[units]") {
    CHECK(units::format_duration(0ns) == "0s");
    CHECK(units::format_duration(10ns) == "10ns");
    CHECK(units::format_duration(999ns) == "999ns");
    CHECK(units::format_duration(1000ns) == "1us");
    CHECK(units::format_duration(12us) == "12us");
    CHECK(units::format_duration(1500ns) == "1.5us");
    CHECK(units::format_duration(999'999ns) == "1ms");  // carries into the next unit
    CHECK(units::format_duration(250ms) == "250ms");
    CHECK(units::format_duration(1500ms) == "1.5s");
    CHECK(units::format_duration(1'234'600us) == "1.235s");
    CHECK(units::format_duration(59'999'900us) == "1m");
    CHECK(units::format_duration(150s) == "2m30s");
    CHECK(units::format_duration(90'400ms) == "1m30s");
    CHECK(units::format_duration(90'500ms) == "1m31s");
    CHECK(units::format_duration(3600s) == "1h");
    CHECK(units::format_duration(3605s) == "1h5s");
    CHECK(units::format_duration(100h) == "100h");
    CHECK(units::format_duration(-250ms) == "-250ms");
    CHECK(units::format_duration(std::chrono::nanoseconds::max()) == "2562047h47m17s");
    CHECK(units::format_duration(std::chrono::nanoseconds::min()) == "-2562047h47m17s");
}

TEST_CASE("format_duration output of round durations parses back exactly", "[units]") {
    for (std::chrono::nanoseconds d : std::vector<std::chrono::nanoseconds>{0ns, 1ns, 999ns, 12us, 1500us, 250ms,
                                                                            1500ms, 59s, 60s, 150s, 3723s, 100h}) {
        INFO(d.count());
        CHECK(units::parse_duration(units::format_duration(d)) == d);
    }
}
