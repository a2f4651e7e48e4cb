// The demand matrix: each generator's defining property and determinism, the document and CSV readers, and
// every bad input with the message and the JSON pointer or line it names.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpuops/alltoall/demand.hpp"
#include "gpuops/core/error.hpp"
#include "gpuops/topo/cluster.hpp"
#include "gpuops/topo/presets.hpp"

#include "support/temp_dir.hpp"

using namespace gpuops::alltoall;
using gpuops::DataError;
using gpuops::json_io::Json;
using gpuops::topo::Topology;

namespace {

const Topology& node() {
    static const Topology t = gpuops::topo::build_preset("pcie-8gpu-gen4");
    return t;
}

const Topology& two_nodes() {
    static const Topology t =
        gpuops::topo::compose_cluster(node(), 2, gpuops::topo::parse_fabric("nonblocking:200Gb/s"));
    return t;
}

constexpr std::size_t n = 8;

/// The DataError `f` throws; fails the test when it throws nothing or something else.
template <typename F>
DataError data_error(F&& f) {
    try {
        f();
    } catch (const DataError& e) {
        return e;
    }
    FAIL("expected a DataError");
    throw std::logic_error("unreachable");
}

DataError generator_error(const std::string& spec) {
    return data_error([&] { (void)generate_demand(spec, node()); });
}

DataError json_error(const Json& doc) {
    return data_error([&] { (void)demand_from_json(doc, node(), "d.json"); });
}

DataError csv_error(const std::string& text) {
    return data_error([&] { (void)demand_from_csv(text, node(), "d.csv"); });
}

/// A valid document for the 8-GPU node: entry (i, j) = 10·i + j.
Json valid_document() {
    Json doc = {{"schema", "gpuops.demand"}, {"schema_version", 1}};
    doc["gpus"] = Json::array();
    for (std::size_t k = 0; k < n; ++k)
        doc["gpus"].push_back("gpu" + std::to_string(k));
    doc["bytes"] = Json::array();
    for (std::size_t i = 0; i < n; ++i) {
        Json row = Json::array();
        for (std::size_t j = 0; j < n; ++j)
            row.push_back(10 * i + j);
        doc["bytes"].push_back(row);
    }
    return doc;
}

std::string csv_rows(std::size_t rows, std::size_t columns) {
    std::string out;
    for (std::size_t i = 0; i < rows; ++i) {
        for (std::size_t j = 0; j < columns; ++j)
            out += (j == 0 ? "" : ",") + std::to_string(10 * i + j);
        out += '\n';
    }
    return out;
}

/// max/min of row i's off-diagonal entries.
double skew(const Demand& d, std::size_t i) {
    std::uint64_t lo = UINT64_MAX;
    std::uint64_t hi = 0;
    for (std::size_t j = 0; j < d.size(); ++j) {
        if (j == i) continue;
        lo = std::min(lo, d.at(i, j));
        hi = std::max(hi, d.at(i, j));
    }
    return static_cast<double>(hi) / static_cast<double>(lo);
}

std::uint64_t full_sum(const Demand& d) {
    std::uint64_t s = 0;
    for (const auto b : d.bytes)
        s += b;
    return s;
}

/// Column indexes by descending column sum (ties: lower index first).
std::vector<std::size_t> columns_by_sum(const Demand& d) {
    std::vector<std::size_t> order(d.size());
    for (std::size_t j = 0; j < order.size(); ++j)
        order[j] = j;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return d.column_sum(a) > d.column_sum(b); });
    return order;
}

}  // namespace

// ---- generators -------------------------------------------------------------------------------------------------

TEST_CASE("uniform: every off-diagonal entry is the given size, units allowed", "[demand]") {
    const auto d = generate_demand("uniform:bytes=1MiB", node());
    REQUIRE(d.size() == n);
    CHECK(d.gpus == node().devices_of(gpuops::topo::DeviceKind::gpu));
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
            CHECK(d.at(i, j) == (i == j ? 0U : 1048576U));
    CHECK(d.total() == n * (n - 1) * 1048576);
    CHECK(d.row_sum(3) == 7 * 1048576U);
    CHECK(d.column_sum(5) == 7 * 1048576U);
    CHECK(d.source == "uniform:bytes=1MiB");
    CHECK(d.spec == "uniform:bytes=1MiB");
    CHECK(generate_demand("uniform:bytes=1MB", node()).at(0, 1) == 1000000);
    CHECK(generate_demand("uniform:bytes=4096", node()).at(7, 6) == 4096);
    CHECK(generate_demand("uniform: bytes = 2KiB ", node()).at(1, 0) == 2048);

    const auto c = generate_demand("uniform:bytes=1", two_nodes());
    CHECK(c.size() == 16);
    CHECK(c.total() == 16 * 15);
}

TEST_CASE("zipf: every row sends exactly its bytes, more skewed as s grows", "[demand]") {
    const std::uint64_t bytes = 1000003;  // prime: no split is exact, so the rounding is exercised
    double previous = 0;
    for (const double s : {0.0, 0.5, 1.0, 2.0}) {
        CAPTURE(s);
        const auto d = generate_demand("zipf:s=" + std::to_string(s) + ",bytes=" + std::to_string(bytes), node());
        std::set<std::size_t> heaviest;
        for (std::size_t i = 0; i < n; ++i) {
            CHECK(d.at(i, i) == 0);
            CHECK(d.row_sum(i) == bytes);
            heaviest.insert(
                static_cast<std::size_t>(std::max_element(d.bytes.begin() + static_cast<std::ptrdiff_t>(i * n),
                                                          d.bytes.begin() + static_cast<std::ptrdiff_t>((i + 1) * n)) -
                                         (d.bytes.begin() + static_cast<std::ptrdiff_t>(i * n))));
        }
        CHECK(d.total() == n * bytes);
        // Largest remainder: every share is its exact quota rounded down or up.
        double weight_sum = 0;
        for (std::size_t r = 1; r < n; ++r)
            weight_sum += std::pow(static_cast<double>(r), -s);
        std::vector<std::uint64_t> shares;
        for (std::size_t j = 1; j < n; ++j)
            shares.push_back(d.at(0, j));
        std::sort(shares.rbegin(), shares.rend());
        for (std::size_t r = 0; r < shares.size(); ++r) {
            const double quota = static_cast<double>(bytes) * std::pow(static_cast<double>(r + 1), -s) / weight_sum;
            CHECK(std::abs(static_cast<double>(shares[r]) - quota) < 1.0);
        }
        if (s == 0) {
            CHECK(skew(d, 0) <= 142858.0 / 142857.0);  // 1000003 / 7 = 142857 rest 4
        } else {
            CHECK(skew(d, 0) > previous);
            CHECK(heaviest.size() > 1);  // each source has its own permutation of destinations
        }
        previous = skew(d, 0);
    }
    CHECK(previous == Approx(std::pow(7.0, 2.0)).epsilon(0.001));  // s = 2: rank 1 over rank 7
}

TEST_CASE("hot: the hot GPUs receive the fraction of every other GPU's bytes", "[demand]") {
    const auto d = generate_demand("hot:experts=2,fraction=0.75,seed=3", node());
    const std::uint64_t bytes = 64 << 20;  // the default
    const auto order = columns_by_sum(d);
    const std::set<std::size_t> hot{order[0], order[1]};
    for (std::size_t i = 0; i < n; ++i) {
        CAPTURE(i);
        CHECK(d.at(i, i) == 0);
        CHECK(d.row_sum(i) == bytes);
        std::uint64_t to_hot = 0;
        std::uint64_t cold_lo = UINT64_MAX;
        std::uint64_t cold_hi = 0;
        for (std::size_t j = 0; j < n; ++j) {
            if (j == i) continue;
            if (hot.count(j) != 0) {
                to_hot += d.at(i, j);
            } else {
                cold_lo = std::min(cold_lo, d.at(i, j));
                cold_hi = std::max(cold_hi, d.at(i, j));
            }
        }
        CHECK(to_hot == bytes / 4 * 3);  // a hot GPU's own row gives it all to the other hot GPU
        CHECK(cold_hi - cold_lo <= 1);   // the rest evenly
    }
    // Every non-hot row gives each hot GPU 3/8 of its bytes, far more than any cold one gets.
    for (std::size_t i = 0; i < n; ++i)
        if (hot.count(i) == 0)
            for (const auto h : hot)
                CHECK(d.at(i, h) == bytes / 8 * 3);

    // One hot GPU: its own row has no other hot GPU and spreads evenly.
    const auto one = generate_demand("hot:experts=1,fraction=0.5,bytes=7000", node());
    const auto h = columns_by_sum(one)[0];
    CHECK(one.column_sum(h) == 7 * 3500);
    CHECK(skew(one, h) == 1.0);
    CHECK(one.row_sum(h) == 7000);

    // The seed chooses which GPUs are hot.
    std::set<std::size_t> chosen;
    for (int seed = 1; seed <= 6; ++seed)
        chosen.insert(
            columns_by_sum(generate_demand("hot:experts=1,fraction=0.9,seed=" + std::to_string(seed), node()))[0]);
    CHECK(chosen.size() > 1);
}

TEST_CASE("moe: with one expert per GPU every token reaches k distinct GPUs", "[demand]") {
    const std::uint64_t tokens = 1000;
    const std::uint64_t token_bytes = 7168 * 2;  // bf16
    const auto d = generate_demand("moe:experts=8,topk=3,tokens=1000,hidden=7168,dtype=bf16,zipf=1.1", node());
    for (std::size_t i = 0; i < n; ++i) {
        CHECK(d.row_sum(i) == tokens * 3 * token_bytes);
        for (std::size_t j = 0; j < n; ++j) {
            CHECK(d.at(i, j) % token_bytes == 0);
            CHECK(d.at(i, j) <= tokens * token_bytes);  // a token goes to a GPU at most once
        }
    }
    CHECK(full_sum(d) == n * tokens * 3 * token_bytes);
    CHECK(d.at(0, 0) > 0);  // tokens whose expert is local stay on the diagonal
    // Popular experts (low numbers, zipf=1.1) draw more than unpopular ones.
    CHECK(d.column_sum(0) > 2 * d.column_sum(7));
}

TEST_CASE("moe: a token is sent once to a GPU that owns several of its experts", "[demand]") {
    SECTION("all experts picked: every GPU gets every token exactly once") {
        const auto d = generate_demand("moe:experts=16,topk=16,tokens=50,hidden=100,dtype=fp8", node());
        for (const auto b : d.bytes)
            CHECK(b == 50 * 100);
        // n × T × k × H × 1 byte, less the 8 duplicate picks per token (two experts per GPU).
        CHECK(full_sum(d) == n * 50 * 16 * 100 - n * 50 * 8 * 100);
    }
    SECTION("two experts per GPU: some picks collapse, never all") {
        const auto d = generate_demand("moe:experts=16,topk=2,tokens=1000,hidden=100,dtype=fp8", node());
        for (std::size_t i = 0; i < n; ++i) {
            const auto sent = d.row_sum(i) / 100;  // destinations reached, over all tokens
            CHECK(d.row_sum(i) % 100 == 0);
            CHECK(sent > 1000);      // at least one GPU per token
            CHECK(sent < 2 * 1000);  // some tokens picked both experts of one GPU
            // Uniform over 16 experts: P(both on one GPU) = 1/15, about 67 of 1000 tokens.
            CHECK(2 * 1000 - sent > 30);
            CHECK(2 * 1000 - sent < 120);
        }
    }
}

TEST_CASE("moe: placement decides which GPUs receive the popular experts", "[demand]") {
    const std::string base = "moe:experts=64,topk=4,tokens=2000,hidden=1024,zipf=1.5";
    const auto contiguous = generate_demand(base + ",placement=contiguous", node());
    const auto round_robin = generate_demand(base + ",placement=round-robin", node());
    CHECK(contiguous.bytes == generate_demand(base, node()).bytes);  // contiguous is the default
    CHECK(contiguous.bytes != round_robin.bytes);
    // Contiguous: experts 0-7 (the most popular) all live on GPU 0.
    CHECK(columns_by_sum(contiguous)[0] == 0);
    CHECK(contiguous.column_sum(0) > 3 * contiguous.column_sum(7));
    // Round-robin: the popular experts are dealt out one per GPU, so columns are far more even.
    const auto ratio = [](const Demand& d) {
        const auto order = columns_by_sum(d);
        return static_cast<double>(d.column_sum(order.front())) / static_cast<double>(d.column_sum(order.back()));
    };
    CHECK(ratio(round_robin) < ratio(contiguous) / 2);

    // Fewer experts than GPUs: some GPUs own none and receive nothing.
    const auto sparse_c = generate_demand("moe:experts=4,topk=2,tokens=100,hidden=10", node());
    const auto sparse_r = generate_demand("moe:experts=4,topk=2,tokens=100,hidden=10,placement=round-robin", node());
    for (std::size_t j = 0; j < n; ++j) {
        CAPTURE(j);
        CHECK((sparse_c.column_sum(j) == 0) == (j % 2 == 1));  // experts on GPUs 0, 2, 4, 6
        CHECK((sparse_r.column_sum(j) == 0) == (j >= 4));      // experts on GPUs 0-3
    }
    CHECK(full_sum(sparse_c) == n * 100 * 2 * 10 * 2);  // distinct GPUs for distinct experts: no dedup
}

TEST_CASE("generators are deterministic in their seed", "[demand]") {
    for (const std::string spec : {"zipf:s=1.2,bytes=1MiB", "hot:experts=3,fraction=0.6",
                                   "moe:experts=32,topk=4,tokens=500,hidden=256,zipf=0.8"}) {
        CAPTURE(spec);
        const auto a = generate_demand(spec, node());
        CHECK(a.bytes == generate_demand(spec, node()).bytes);
        CHECK(a.bytes == generate_demand(spec + ",seed=1", node()).bytes);  // the default seed is 1
        CHECK(a.bytes != generate_demand(spec + ",seed=2", node()).bytes);
        CHECK(a.bytes != generate_demand(spec + ",seed=18446744073709551615", node()).bytes);
    }
    // Fixed PRNG and hand-written distributions with exact weights (s = 1, s = 0): these numbers are the same
    // on every platform and standard library; a change here changes every seeded matrix users have.
    const auto z = generate_demand("zipf:s=1,bytes=1000", node());
    CHECK(std::vector<std::uint64_t>(z.bytes.begin(), z.bytes.begin() + 8) ==
          std::vector<std::uint64_t>{0, 64, 193, 55, 386, 129, 77, 96});
    const auto m = generate_demand("moe:experts=8,topk=2,tokens=10,hidden=1,dtype=fp8", node());
    CHECK(std::vector<std::uint64_t>(m.bytes.begin(), m.bytes.begin() + 8) ==
          std::vector<std::uint64_t>{3, 3, 3, 4, 2, 2, 2, 1});
}

// ---- documents and files -----------------------------------------------------------------------------------------

TEST_CASE("documents round-trip, with the header, the labels and the spec", "[demand]") {
    const auto d = generate_demand("zipf:s=1.2,bytes=64MiB,seed=7", node());
    const Json doc = to_json(d, node());
    CHECK(doc["schema"] == "gpuops.demand");
    CHECK(doc["schema_version"] == 1);
    CHECK(doc["generator"]["tool"] == "vp-plan");
    CHECK(doc["gpus"][3] == "gpu3");
    CHECK(doc["bytes"].size() == n);
    CHECK(doc["bytes"][2][5] == d.at(2, 5));
    CHECK(doc["spec"] == "zipf:s=1.2,bytes=64MiB,seed=7");
    std::vector<std::string> keys;
    for (const auto& item : doc.items())
        keys.push_back(item.key());
    CHECK(keys == std::vector<std::string>{"schema", "schema_version", "generator", "gpus", "bytes", "spec"});

    const auto back =
        demand_from_json(gpuops::json_io::parse_document(gpuops::json_io::dump(doc), "x"), node(), "plan.json");
    CHECK(back.bytes == d.bytes);
    CHECK(back.gpus == d.gpus);
    CHECK(back.spec == d.spec);
    CHECK(back.source == "plan.json");

    // A file read without a spec writes none; a cluster's labels name the host.
    const auto plain = demand_from_json(valid_document(), node(), "d.json");
    CHECK(plain.at(3, 4) == 34);
    CHECK(plain.spec.empty());
    CHECK_FALSE(to_json(plain, node()).contains("spec"));
    const auto c = generate_demand("uniform:bytes=5", two_nodes());
    const Json cdoc = to_json(c, two_nodes());
    CHECK(cdoc["gpus"][9] == two_nodes().label(c.gpus[9]));
    CHECK(cdoc["gpus"][9].get<std::string>().find("/gpu1") != std::string::npos);
    CHECK(demand_from_json(cdoc, two_nodes(), "c.json").bytes == c.bytes);

    // Integral numbers written as floats are integers (as in JSON Schema); unknown fields are ignored.
    Json f = valid_document();
    f["bytes"][1][2] = 12.0;
    f["comment"] = "ignored";
    CHECK(demand_from_json(f, node(), "f.json").at(1, 2) == 12);
    Json big = valid_document();
    big["bytes"][0][1] = UINT64_MAX - 3000;
    CHECK(demand_from_json(big, node(), "big.json").at(0, 1) == UINT64_MAX - 3000);
}

TEST_CASE("CSV matrices: plain, with a header, comments and blank lines", "[demand]") {
    const auto plain = demand_from_csv(csv_rows(n, n), node(), "d.csv");
    CHECK(plain.at(3, 4) == 34);
    CHECK(plain.at(7, 7) == 77);
    CHECK(plain.source == "d.csv");
    CHECK(plain.spec.empty());
    CHECK(plain.bytes == demand_from_json(valid_document(), node(), "d.json").bytes);

    const std::string with_header = "\xEF\xBB\xBF# demand of step 3\r\n"
                                    "gpu0, gpu1,gpu2,gpu3,gpu4,gpu5,gpu6,gpu7\r\n"
                                    "\r\n" +
                                    csv_rows(4, n) + "   # halfway\n\n" + csv_rows(n, n).substr(csv_rows(4, n).size());
    const auto headed = demand_from_csv(with_header, node(), "h.csv");
    CHECK(headed.bytes == plain.bytes);

    const auto c = generate_demand("uniform:bytes=3", two_nodes());
    std::string text;
    for (std::size_t k = 0; k < c.size(); ++k)
        text += (k == 0 ? "" : ",") + two_nodes().label(c.gpus[k]);
    text += '\n';
    for (std::size_t i = 0; i < c.size(); ++i)
        for (std::size_t j = 0; j < c.size(); ++j)
            text += std::string(i == j ? "0" : "3") + (j + 1 == c.size() ? "\n" : ",");
    CHECK(demand_from_csv(text, two_nodes(), "c.csv").bytes == c.bytes);
}

TEST_CASE("load_demand: files by content, generator specs, and a path that exists wins", "[demand]") {
    const gpuops::test::TempDir dir;
    dir.write("matrix.json", csv_rows(n, n));  // CSV despite the extension
    dir.write("doc.csv", gpuops::json_io::dump(valid_document()));
    const auto from_csv = load_demand((dir.path() / "matrix.json").string(), node());
    const auto from_json = load_demand((dir.path() / "doc.csv").string(), node());
    CHECK(from_csv.bytes == from_json.bytes);
    CHECK(from_csv.source == (dir.path() / "matrix.json").string());

    const auto spec = load_demand("uniform:bytes=9", node());
    CHECK(spec.at(0, 1) == 9);
    CHECK(spec.source == "uniform:bytes=9");

    // A file named like a spec is read as a file.
    struct Cwd {
        std::filesystem::path saved = std::filesystem::current_path();
        ~Cwd() { std::filesystem::current_path(saved); }
    } restore;
    dir.write("uniform:bytes=9", csv_rows(n, n));
    std::filesystem::current_path(dir.path());
    CHECK(load_demand("uniform:bytes=9", node()).at(3, 4) == 34);

    CHECK_THROWS_AS(load_demand("no-such-file.csv", node()), gpuops::InputMissingError);
    const auto unknown = data_error([] { (void)load_demand("zipfian:s=1,bytes=5", node()); });
    CHECK(unknown.reason() == "unknown demand generator 'zipfian' (generators: uniform, zipf, hot, moe)");

    // Errors in a file name the file.
    dir.write("bad.csv", "1,2\n");
    const auto bad = data_error([&] { (void)load_demand((dir.path() / "bad.csv").string(), node()); });
    CHECK(bad.where().file == (dir.path() / "bad.csv").string());
    CHECK(bad.where().line == 1);
}

// ---- bad input ---------------------------------------------------------------------------------------------------

TEST_CASE("bad documents name the JSON pointer of the first bad value", "[demand]") {
    struct Case {
        std::string what;
        Json doc;
        std::string pointer;
        std::string reason;
    };
    std::vector<Case> cases;
    const auto with = [&](std::string what, std::string pointer, std::string reason, auto change) {
        Json doc = valid_document();
        change(doc);
        cases.push_back({std::move(what), std::move(doc), std::move(pointer), std::move(reason)});
    };
    with("negative", "/bytes/2/5", "expected a non-negative integer number of bytes, got -5",
         [](Json& d) { d["bytes"][2][5] = -5; });
    with("non-integer", "/bytes/0/1", "expected a non-negative integer number of bytes, got 1.5",
         [](Json& d) { d["bytes"][0][1] = 1.5; });
    with("string", "/bytes/7/7", "expected a non-negative integer number of bytes, got string",
         [](Json& d) { d["bytes"][7][7] = "7"; });
    with("too large", "/bytes/1/0", "too large: at most 18446744073709551615 bytes, got 1.8446744073709552e+19",
         [](Json& d) { d["bytes"][1][0] = Json::parse("18446744073709551616"); });
    with("a short row", "/bytes/3", "expected 8 numbers, got 7", [](Json& d) { d["bytes"][3].erase(7); });
    with("a missing row", "/bytes", "expected 8 rows, got 7", [](Json& d) { d["bytes"].erase(7); });
    with("bytes not an array", "/bytes", "expected an array, got object", [](Json& d) { d["bytes"] = Json::object(); });
    with("no bytes", "/bytes", "missing required field", [](Json& d) { d.erase("bytes"); });
    with("a wrong GPU label", "/gpus/3", "expected 'gpu3' (GPU 3 of the topology), got 'gpu9'",
         [](Json& d) { d["gpus"][3] = "gpu9"; });
    with("GPUs out of order", "/gpus/1", "expected 'gpu1' (GPU 1 of the topology), got 'gpu2'",
         [](Json& d) { std::swap(d["gpus"][1], d["gpus"][2]); });
    with("a GPU too few", "/gpus", "expected the topology's 8 GPUs, got 7", [](Json& d) { d["gpus"].erase(7); });
    with("another schema", "/schema", "expected a 'gpuops.demand' document, got 'gpuops.catalog'",
         [](Json& d) { d["schema"] = "gpuops.catalog"; });
    with("a newer version", "/schema_version",
         "unsupported 'gpuops.demand' schema_version 2 (this build reads up to 1)",
         [](Json& d) { d["schema_version"] = 2; });
    with("an overflowing total", "/bytes", "the matrix holds more than 2^64-1 bytes in all", [](Json& d) {
        d["bytes"][0][1] = UINT64_MAX;
        d["bytes"][1][0] = UINT64_MAX;
    });
    with("a spec that is not a string", "/spec", "expected a string, got number", [](Json& d) { d["spec"] = 3; });
    for (const auto& c : cases) {
        CAPTURE(c.what);
        const auto e = json_error(c.doc);
        CHECK(e.reason() == c.reason);
        CHECK(e.where().pointer == c.pointer);
        CHECK(e.where().file == "d.json");
    }
    CHECK(json_error(valid_document().dump()).reason() ==
          "expected a gpuops.demand document (a JSON object), got string");
    // The rendered message reads as the contract says.
    Json negative = valid_document();
    negative["bytes"][3][7] = -5;
    CHECK(std::string(json_error(negative).what()) ==
          "'d.json': (/bytes/3/7) expected a non-negative integer number of bytes, got -5");
}

TEST_CASE("bad CSV names the line and the column", "[demand]") {
    struct Case {
        std::string what;
        std::string text;
        int line;
        std::string reason;
    };
    const std::string rows = csv_rows(n, n);
    const std::vector<Case> cases{
        {"a short row", "# c\n" + csv_rows(2, n) + csv_rows(1, n - 1), 4, "expected 8 numbers, got 7"},
        {"a long row", csv_rows(1, n + 1), 1, "expected 8 numbers, got 9"},
        {"a missing row", csv_rows(n - 1, n), 7, "expected 8 rows, got 7"},
        {"an extra row", rows + "\n" + csv_rows(1, n), 10, "expected 8 rows, got more"},
        {"empty", "", 1, "expected 8 rows, got 0"},
        {"negative", "0,0,-5,0,0,0,0,0\n", 1, "column 3: expected a non-negative integer number of bytes, got '-5'"},
        {"non-integer", "0,1.5,0,0,0,0,0,0\n", 1,
         "column 2: expected a non-negative integer number of bytes, got '1.5'"},
        {"an empty field", "0,,0,0,0,0,0,0\n", 1, "column 2: expected a non-negative integer number of bytes, got ''"},
        {"too large", "0,0,0,0,0,0,0,18446744073709551616\n", 1,
         "column 8: too large: at most 18446744073709551615 bytes, got '18446744073709551616'"},
        {"a wrong header label", "\ngpu0,gpu1,gpu2,gpu3,gpu5,gpu4,gpu6,gpu7\n" + rows, 2,
         "column 5: expected GPU label 'gpu4', got 'gpu5'"},
        {"a short header", "gpu0,gpu1\n" + rows, 1, "expected 8 GPU labels, got 2"},
        {"a header after data", csv_rows(1, n) + "gpu0,gpu1,gpu2,gpu3,gpu4,gpu5,gpu6,gpu7\n", 2,
         "column 1: expected a non-negative integer number of bytes, got 'gpu0'"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.what);
        const auto e = csv_error(c.text);
        CHECK(e.reason() == c.reason);
        CHECK(e.where().line == c.line);
        CHECK(e.where().file == "d.csv");
        CHECK(e.where().pointer.empty());
    }
    CHECK(std::string(csv_error("0,0,-5,0,0,0,0,0\n").what()) ==
          "'d.csv' line 1: column 3: expected a non-negative integer number of bytes, got '-5'");
    std::string overflow = csv_rows(n, n);
    overflow.replace(0, 1, "18446744073709551615");
    CHECK(csv_error(overflow).reason() == "the matrix holds more than 2^64-1 bytes in all");
}

TEST_CASE("bad generator specs name the generator and the key", "[demand]") {
    const std::vector<std::pair<std::string, std::string>> cases{
        {"zipfian:s=1", "unknown demand generator 'zipfian' (generators: uniform, zipf, hot, moe)"},
        {"uniform:byte=5", "uniform: unknown key 'byte' (keys: bytes)"},
        {"uniform:bytes=5,seed=2", "uniform: unknown key 'seed' (keys: bytes)"},
        {"zipf:s=1", "zipf: missing required key 'bytes'"},
        {"uniform", "uniform: missing required key 'bytes'"},
        {"uniform:", "uniform: missing required key 'bytes'"},
        {"zipf:s=1,bytes=5,s=2", "zipf: key 's' given twice"},
        {"zipf:s=1,bytes", "zipf: expected key=value, got 'bytes'"},
        {"uniform:bytes=5,", "uniform: expected key=value, got ''"},
        {"uniform:bytes=lots",
         "uniform: bad value for 'bytes': invalid size 'lots' (expected a number and an optional unit such as 4096, "
         "64K, 1.5MiB or 1GB)"},
        {"uniform:bytes=18446744073709551615", "uniform: the matrix would hold more than 2^64-1 bytes in all"},
        {"zipf:s=-1,bytes=5", "zipf: bad value for 's': expected a number of at least 0, got '-1'"},
        {"zipf:s=inf,bytes=5", "zipf: bad value for 's': expected a number of at least 0, got 'inf'"},
        {"zipf:s=1,bytes=16PiB", "zipf: bad value for 'bytes': expected at most 9007199254740992 bytes, got '16PiB'"},
        {"zipf:s=1,bytes=5,seed=-1",
         "zipf: bad value for 'seed': expected an integer from 0 to 18446744073709551615, got '-1'"},
        {"hot:experts=8,fraction=0.5", "hot: bad value for 'experts': expected an integer from 1 to 7, got '8'"},
        {"hot:experts=2,fraction=1.5", "hot: bad value for 'fraction': expected a number from 0 to 1, got '1.5'"},
        {"hot:experts=2", "hot: missing required key 'fraction'"},
        {"moe:experts=8,topk=2,tokens=10,hidden=64,dtype=fp32",
         "moe: bad value for 'dtype': expected bf16 or fp8, got 'fp32'"},
        {"moe:experts=8,topk=2,tokens=10,hidden=64,placement=random",
         "moe: bad value for 'placement': expected contiguous or round-robin, got 'random'"},
        {"moe:experts=8,topk=9,tokens=10,hidden=64",
         "moe: bad value for 'topk': expected an integer from 1 to 8, got '9'"},
        {"moe:experts=8,topk=2,hidden=64", "moe: missing required key 'tokens'"},
        {"moe:experts=0,topk=2,tokens=10,hidden=64",
         "moe: bad value for 'experts': expected an integer from 1 to 1048576, got '0'"},
        {"moe:experts=8,topk=8,tokens=1073741824,hidden=64",
         "moe: GPUs × tokens × topk = 8 × 1073741824 × 8 is more picks than the 1073741824 simulated at most"},
        {"moe:experts=8,topk=2,tokens=10,hidden=64,zipf=x",
         "moe: bad value for 'zipf': expected a number of at least 0, got 'x'"},
    };
    for (const auto& [spec, reason] : cases) {
        CAPTURE(spec);
        CHECK(generator_error(spec).reason() == reason);
    }
    // A demand needs two GPUs.
    Topology single;
    gpuops::topo::Device gpu;
    gpu.kind = gpuops::topo::DeviceKind::gpu;
    gpu.name = "gpu0";
    single.nodes.push_back({"solo"});
    single.add_device(gpu);
    CHECK(data_error([&] { (void)generate_demand("uniform:bytes=1", single); }).reason() ==
          "the topology has one GPU: a demand needs at least two");
}
