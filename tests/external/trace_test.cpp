// Trace importers over the real traces in ../shared/data/traces (Alibaba openb, Microsoft ITP via ElasticFlow,
// Tiresias): counts of jobs kept and skipped, the first job, monotone submit times; skipped when absent.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>

#include "gpuops/core/error.hpp"
#include "gpuops/placement/trace.hpp"

#include "external/data_dir.hpp"

using namespace gpuops;
using placement::RowTally;
using placement::Trace;
using placement::TraceFormat;
using placement::TraceJob;

namespace {

using test::have;
using test::traces_dir;

Trace import(const std::filesystem::path& file) { return placement::read_trace_file(file.string(), std::nullopt); }

/// Invariants every imported trace keeps: sorted from 0, instances fit a node, GPUs kept (exact split rule).
void check_replayable(const Trace& t) {
    REQUIRE_FALSE(t.jobs.empty());
    CHECK(t.jobs.front().submit_s == 0);
    CHECK(std::is_sorted(t.jobs.begin(), t.jobs.end(),
                         [](const TraceJob& a, const TraceJob& b) { return a.submit_s < b.submit_s; }));
    for (const auto& j : t.jobs) {
        INFO(j.id);
        REQUIRE(j.instances >= 1);
        REQUIRE(j.gpus_per_instance >= 1);
        REQUIRE(j.gpus_per_instance <= 8);
        REQUIRE(j.instances * j.gpus_per_instance == j.source_gpus);
        REQUIRE(j.duration_s > 0);
    }
    CHECK(t.report.jobs_kept + t.report.rows_skipped() == t.report.rows_read);
}

}  // namespace

TEST_CASE("real alibaba openb pod lists: whole-GPU pods that ran", "[external][trace]") {
    const auto dir = traces_dir() / "alibaba-gpu-v2023";
    if (!have(dir)) return;
    for (const char* file : {"openb_pod_list_default.csv", "openb_pod_list_gpuspec33.csv"}) {
        INFO(file);
        const auto t = import(dir / file);
        CHECK(t.format == TraceFormat::alibaba_openb);
        check_replayable(t);
        const auto& r = t.report;
        CHECK(r.rows_read == 8152);
        CHECK(r.jobs_kept == 3630);
        CHECK(r.skipped.at("no GPUs").rows == 1088);  // the README's CPU-only count
        CHECK(r.skipped.at("fractional GPU share").rows == 3078);
        CHECK(r.skipped.at("never started").rows == 356);  // Pending, no scheduled_time
        CHECK(r.skipped.size() == 3);
        CHECK_FALSE(r.reordered);
        CHECK(t.jobs.front() == TraceJob{"openb-pod-0000", 0, 1, 1, 12537496, 1, 2});
        CHECK(t.jobs.back().submit_s == 12897659);
        CHECK(std::count_if(t.jobs.begin(), t.jobs.end(), [](const TraceJob& j) { return j.source_gpus == 8; }) == 44);
    }
    // The multi-GPU resamplings carry no times: refused, with a hint.
    try {
        (void)import(dir / "openb_pod_list_multigpu50.csv");
        FAIL("multigpu50 has no creation_time");
    } catch (const DataError& e) {
        CHECK(e.reason().starts_with("missing column 'creation_time' for the alibaba-openb trace format"));
        CHECK(e.where().line == 1);
    }
}

TEST_CASE("real ITP clusters (ElasticFlow): all 69,351 jobs, >8-GPU jobs in 8-GPU instances", "[external][trace]") {
    const auto dir = traces_dir() / "elasticflow-itp";
    if (!have(dir)) return;
    struct Expected {
        const char* file;
        std::int64_t jobs;
        std::int64_t split;  // jobs of more than 8 GPUs
        const char* first_id;
        int first_gpus;
        double first_duration;
    };
    // The README's per-file counts are one lower: they count lines of files without a final newline.
    const std::array<Expected, 10> expected = {{
        {"cluster01.csv", 1595, 43, "965d744f-0445-c1a8-12af-97e4c536c66e", 64, 2429},
        {"cluster02.csv", 5778, 86, "f60b9881-76f3-6fc7-d009-6b2a00419afc", 1, 1265},
        {"cluster03.csv", 3011, 135, "0bc6e292-b9b4-36d3-61bf-fb714fe2f053", 32, 709},
        {"cluster04.csv", 15802, 442, "c9c620ea-4336-c1a9-8abe-e26bd13076b8", 16, 288476},
        {"cluster05.csv", 3629, 0, "930dd644-e119-8ce9-0935-e6148a7c7bed", 1, 16235},
        {"cluster06.csv", 2396, 87, "59a72878-e5c4-ab9d-e813-68c36b50edeb", 4, 3890},
        {"cluster07.csv", 12699, 2, "a11b4fc9-8f06-7093-2b93-bcb89acf0e7e", 1, 13423},
        {"cluster08.csv", 13047, 9, "d36ea58c-460e-000c-6306-d8ab27964133", 1, 1183},
        {"cluster09.csv", 11134, 0, "4bb42dcf-d655-0689-6a5f-1b7f5562a1cb", 1, 2546},
        {"cluster10.csv", 260, 2, "5dc7d9cd-c300-9a4f-c3cd-dc2cc0935548", 16, 604},
    }};
    std::int64_t total = 0;
    std::chrono::steady_clock::duration importing{};
    for (const auto& e : expected) {
        INFO(e.file);
        const auto start = std::chrono::steady_clock::now();
        const auto t = import(dir / e.file);
        importing += std::chrono::steady_clock::now() - start;
        CHECK(t.format == TraceFormat::elasticflow);
        check_replayable(t);
        CHECK(t.report.rows_read == e.jobs);
        CHECK(t.report.jobs_kept == e.jobs);
        CHECK(t.report.skipped.empty());
        const auto split = t.report.conversions.find("split into equal instances (more GPUs than a node)");
        CHECK((split == t.report.conversions.end() ? 0 : split->second.rows) == e.split);
        CHECK(t.jobs.front().id == e.first_id);
        CHECK(t.jobs.front().source_gpus == e.first_gpus);
        CHECK(t.jobs.front().duration_s == e.first_duration);
        for (const auto& j : t.jobs)
            if (j.source_gpus > 8) REQUIRE(j.gpus_per_instance == 8);
        total += t.report.jobs_kept;
    }
    const auto ms = std::chrono::duration<double, std::milli>(importing).count();
    CHECK(total == 69351);
    // Information only (timing is measured by `make bench`, never asserted).
    std::cout << "info: imported " << total << " ITP jobs from 10 files in " << ms << " ms\n";

    const auto testbed = import(dir / "elasticflow_195job.csv");
    CHECK(testbed.format == TraceFormat::elasticflow);
    check_replayable(testbed);
    CHECK(testbed.report.jobs_kept == 195);
    CHECK(testbed.jobs.front() == TraceJob{"bdd640fb-0667-1ad1-1c80-317fa3b1799d", 0, 1, 1, 1075, 1, 2});
}

TEST_CASE("real tiresias 60_job.csv (CRLF): 60 one-instance jobs", "[external][trace]") {
    const auto dir = traces_dir() / "tiresias-sim";
    if (!have(dir)) return;
    const auto t = import(dir / "60_job.csv");
    CHECK(t.format == TraceFormat::tiresias);
    check_replayable(t);
    CHECK(t.report.jobs_kept == 60);
    CHECK(t.jobs.front() == TraceJob{"0", 0, 1, 1, 164, 1, 2});
    CHECK(t.jobs.back().submit_s == 1779);
    CHECK(std::count_if(t.jobs.begin(), t.jobs.end(), [](const TraceJob& j) { return j.gpus_per_instance == 8; }) ==
          10);
}

TEST_CASE("real Pollux/Sia workloads and fixed-width sacct are refused with a hint", "[external][trace]") {
    const auto pollux = traces_dir() / "pollux-philly-workloads" / "workloads" / "workload-1.csv";
    if (std::filesystem::exists(pollux)) {
        CHECK_THROWS_WITH(import(pollux), Catch::Contains("a Pollux/Sia workload: it has no duration column"));
    }
    const auto sacct = test::external_data_dir() / "slurm" / "sacct-c.txt";
    if (std::filesystem::exists(sacct)) {
        CHECK_THROWS_WITH(import(sacct), Catch::Contains("sacct output must be --parsable2"));
    }
}
