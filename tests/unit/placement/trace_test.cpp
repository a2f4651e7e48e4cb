// Trace importers over our own fixtures (tests/fixtures/traces): exact mapping per format, skip counts,
// conversions, sorting and rebasing, every error message, format detection.
#include <catch2/catch.hpp>

#include <sstream>

#include "gpuops/core/error.hpp"
#include "gpuops/placement/trace.hpp"
#include "gpuops/placement/trace_fields.hpp"

using namespace gpuops;
using placement::JobShape;
using placement::RowTally;
using placement::SplitRule;
using placement::Trace;
using placement::TraceFormat;
using placement::TraceJob;
using placement::TraceOptions;

namespace {

const std::string fixtures = std::string(GPUOPS_FIXTURES_DIR) + "/traces/";

Trace import(const std::string& file, std::optional<TraceFormat> format = std::nullopt,
             const TraceOptions& options = {}) {
    return placement::read_trace_file(fixtures + file, format, options);
}

Trace parse(const std::string& text, std::optional<TraceFormat> format, const TraceOptions& options = {}) {
    std::istringstream in(text);
    return placement::read_trace(in, format, options, "t.csv");
}

std::string error_of(const std::string& text, std::optional<TraceFormat> format, const TraceOptions& options = {}) {
    try {
        (void)parse(text, format, options);
    } catch (const DataError& e) {
        return e.what();
    }
    return "no error";
}

std::vector<std::string> ids(const Trace& t) {
    std::vector<std::string> out;
    for (const auto& j : t.jobs)
        out.push_back(j.id);
    return out;
}

}  // namespace

TEST_CASE("split_gpus: one instance when it fits, else exact divisor, round-up or skip", "[placement][trace]") {
    using placement::split_gpus;
    CHECK(split_gpus(3, 8, SplitRule::exact) == JobShape{1, 3});
    CHECK(split_gpus(8, 8, SplitRule::skip) == JobShape{1, 8});
    CHECK(split_gpus(64, 8, SplitRule::exact) == JobShape{8, 8});
    CHECK(split_gpus(12, 8, SplitRule::exact) == JobShape{2, 6});
    CHECK(split_gpus(13, 8, SplitRule::exact) == JobShape{13, 1});
    CHECK(split_gpus(12, 4, SplitRule::exact) == JobShape{3, 4});
    CHECK(split_gpus(12, 8, SplitRule::round_up) == JobShape{2, 8});
    CHECK(split_gpus(12, 8, SplitRule::skip) == std::nullopt);
    CHECK(split_gpus(24, 8, SplitRule::skip) == JobShape{3, 8});
}

TEST_CASE("format and split-rule names round-trip", "[placement][trace]") {
    for (const auto name : placement::trace_format_names()) {
        const auto f = placement::parse_trace_format(name);
        REQUIRE(f);
        CHECK(placement::to_string(*f) == name);
    }
    CHECK(placement::trace_format_names().size() == 8);
    CHECK(placement::parse_trace_format("alibaba-openb") == TraceFormat::alibaba_openb);
    CHECK(placement::parse_trace_format("openb") == std::nullopt);
    CHECK(placement::parse_split_rule("round-up") == SplitRule::round_up);
    CHECK(placement::parse_split_rule("round_up") == std::nullopt);
}

TEST_CASE("canonical: mapping, oversize instance re-split, skips, stable sort and rebase", "[placement][trace]") {
    const auto t = import("canonical.csv");
    CHECK(t.format == TraceFormat::canonical);
    REQUIRE(t.jobs.size() == 4);
    // j2 and j4 share a submit time: the stable sort keeps their file order.
    CHECK(t.jobs[0] == TraceJob{"j2", 0, 2, 4, 120.25, 8, 4});
    CHECK(t.jobs[1] == TraceJob{"j4", 0, 4, 1, 10, 4, 9});
    CHECK(t.jobs[2] == TraceJob{"j1", 49.5, 1, 8, 3600, 8, 3});
    CHECK(t.jobs[3] == TraceJob{"j3", 99.5, 2, 8, 60, 16, 6});
    const auto& r = t.report;
    CHECK(r.rows_read == 6);
    CHECK(r.jobs_kept == 4);
    CHECK(r.rows_skipped() == 2);
    CHECK(r.skipped.at("no GPUs") == RowTally{1, {7}});
    CHECK(r.skipped.at("zero duration") == RowTally{1, {8}});
    CHECK(r.conversions.at("re-split (source instance larger than a node)") == RowTally{1, {6}});
    CHECK(r.reordered);
    CHECK(r.submit_offset_s == 50.5);
}

TEST_CASE("alibaba openb: whole-GPU pods, run time from scheduling, skips and fractional round-up",
          "[placement][trace]") {
    const auto t = import("openb.csv");
    CHECK(t.format == TraceFormat::alibaba_openb);
    REQUIRE(t.jobs.size() == 3);
    CHECK(t.jobs[0] == TraceJob{"openb-pod-0000", 0, 1, 1, 12902960 - 1000, 1, 2});
    CHECK(t.jobs[1] == TraceJob{"openb-pod-0002", 500, 1, 8, 9000 - 1510, 8, 4});
    CHECK(t.jobs[2] == TraceJob{"openb-pod-0004", 700, 1, 2, 900, 2, 6});
    CHECK(t.report.rows_read == 7);
    CHECK(t.report.skipped.at("fractional GPU share") == RowTally{2, {3, 8}});
    CHECK(t.report.skipped.at("no GPUs") == RowTally{1, {5}});
    CHECK(t.report.skipped.at("never started") == RowTally{1, {7}});
    CHECK_FALSE(t.report.reordered);
    CHECK(t.report.submit_offset_s == 1000);
    CHECK(t.report.conversions.empty());

    TraceOptions round;
    round.round_up_fractional = true;
    const auto r = import("openb.csv", TraceFormat::alibaba_openb, round);
    CHECK(ids(r) == std::vector<std::string>{"openb-pod-0006", "openb-pod-0000", "openb-pod-0001", "openb-pod-0002",
                                             "openb-pod-0004"});
    CHECK(r.jobs[0] == TraceJob{"openb-pod-0006", 0, 1, 1, 995, 1, 8});
    CHECK(r.report.conversions.at("fractional GPU share rounded up to 1 GPU") == RowTally{2, {3, 8}});
    CHECK(r.report.reordered);
    CHECK(r.report.skipped.count("fractional GPU share") == 0);
    // A shared-GPU pod that never ran is skipped, and its round-up is not counted as a conversion.
    const auto p = parse("name,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\n"
                         "p,1,500,100,150,\n",
                         std::nullopt, round);
    CHECK(p.jobs.empty());
    CHECK(p.report.skipped.at("never started") == RowTally{1, {2}});
    CHECK(p.report.conversions.empty());
}

TEST_CASE("alibaba openb pod lists without times are refused with a hint", "[placement][trace]") {
    CHECK_THROWS_WITH(import("openb-no-times.csv"),
                      "'" + fixtures +
                          "openb-no-times.csv' line 1: missing column 'creation_time' for the alibaba-openb trace "
                          "format (this pod list has no times: openb_pod_list_default.csv and _gpuspec33.csv have "
                          "them)");
}

TEST_CASE("elasticflow ITP: total GPUs split into 8-GPU instances, rows sorted, no final newline",
          "[placement][trace]") {
    const auto t = import("elasticflow.csv");
    CHECK(t.format == TraceFormat::elasticflow);
    REQUIRE(t.jobs.size() == 4);
    CHECK(t.jobs[0] == TraceJob{"965d", 0, 8, 8, 2429, 64, 3});
    CHECK(t.jobs[1] == TraceJob{"6b1c", 68556, 1, 1, 1532, 1, 2});
    CHECK(t.jobs[2] == TraceJob{"9e11", 81912, 2, 8, 1539, 16, 4});
    CHECK(t.jobs[3] == TraceJob{"8ac8", 82108, 1, 2, 1602, 2, 5});
    CHECK(t.report.conversions.at("split into equal instances (more GPUs than a node)") == RowTally{2, {3, 4}});
    CHECK(t.report.skipped.empty());
    CHECK(t.report.reordered);
    CHECK(t.report.submit_offset_s == 1932025);
    // Another node size changes the split.
    TraceOptions four;
    four.node_gpus = 4;
    const auto f = import("elasticflow.csv", std::nullopt, four);
    CHECK(f.jobs[0].instances == 16);
    CHECK(f.jobs[0].gpus_per_instance == 4);
}

TEST_CASE("tiresias: CRLF lines, one instance per job", "[placement][trace]") {
    const auto t = import("tiresias.csv");
    CHECK(t.format == TraceFormat::tiresias);
    REQUIRE(t.jobs.size() == 3);
    CHECK(t.jobs[0] == TraceJob{"0", 0, 1, 1, 164, 1, 2});
    CHECK(t.jobs[1] == TraceJob{"1", 30, 1, 8, 147, 8, 3});
    CHECK(t.jobs[2] == TraceJob{"2", 53, 1, 2, 127, 2, 4});
    CHECK_FALSE(t.report.reordered);
    CHECK(t.report.submit_offset_s == 0);
}

TEST_CASE("philly: wall-clock submit times, row-index ids, the three split rules", "[placement][trace]") {
    const auto t = import("philly.csv");
    CHECK(t.format == TraceFormat::philly);
    REQUIRE(t.jobs.size() == 4);
    CHECK(t.jobs[0] == TraceJob{"1", 0, 1, 1, 60, 1, 3});
    CHECK(t.jobs[1] == TraceJob{"0", 67, 2, 6, 3600.5, 12, 2});
    CHECK(t.jobs[2] == TraceJob{"2", 34800, 3, 8, 120, 24, 4});
    CHECK(t.jobs[3] == TraceJob{"4", 34802, 13, 1, 30, 13, 6});
    CHECK(t.report.submit_offset_s == 1507040400);  // 2017-10-03 14:20:00 UTC
    CHECK(t.report.skipped.at("zero duration") == RowTally{1, {5}});
    CHECK(t.report.conversions.at("split into equal instances (more GPUs than a node)") == RowTally{3, {2, 4, 6}});

    TraceOptions round;
    round.split = SplitRule::round_up;
    const auto r = import("philly.csv", TraceFormat::philly, round);
    CHECK(r.jobs[1] == TraceJob{"0", 67, 2, 8, 3600.5, 12, 2});
    CHECK(r.jobs[3] == TraceJob{"4", 34802, 2, 8, 30, 13, 6});
    CHECK(r.report.conversions.at("padded to whole nodes (split rule round-up)") == RowTally{2, {2, 6}});

    TraceOptions skip;
    skip.split = SplitRule::skip;
    const auto s = import("philly.csv", TraceFormat::philly, skip);
    CHECK(ids(s) == std::vector<std::string>{"1", "2"});
    CHECK(s.report.skipped.at("not a multiple of the node size (split rule skip)") == RowTally{2, {2, 6}});
}

TEST_CASE("helios/acme: node_num is the instance count when the GPUs divide evenly", "[placement][trace]") {
    const auto t = import("helios.csv");
    CHECK(t.format == TraceFormat::helios);
    REQUIRE(t.jobs.size() == 3);
    CHECK(t.jobs[0] == TraceJob{"h2", 0, 2, 4, 120, 8, 3});
    CHECK(t.jobs[1] == TraceJob{"h1", 10, 2, 8, 3600, 16, 2});
    CHECK(t.jobs[2] == TraceJob{"h4", 120, 1, 3, 60, 3, 5});
    CHECK(t.report.submit_offset_s == 1585699200);  // 2020-04-01 00:00:00 UTC
    CHECK(t.report.skipped.at("no GPUs") == RowTally{1, {4}});
    CHECK(t.report.skipped.at("zero duration") == RowTally{1, {6}});
    CHECK(t.report.conversions.at("re-split (GPUs not divisible by the source's instance count)") == RowTally{1, {5}});
}

TEST_CASE("alibaba gfs: gpu_request per worker, worker_num workers, fractional requests skipped",
          "[placement][trace]") {
    const auto t = import("gfs.csv");
    CHECK(t.format == TraceFormat::alibaba_gfs);
    REQUIRE(t.jobs.size() == 2);
    CHECK(t.jobs[0] == TraceJob{"g1", 0, 4, 8, 7200, 32, 2});
    CHECK(t.jobs[1] == TraceJob{"g3", 20, 3, 2, 300, 6, 4});
    CHECK(t.report.skipped.at("fractional GPU share") == RowTally{1, {3}});
    CHECK(t.report.skipped.at("no GPUs") == RowTally{1, {5}});
    TraceOptions round;
    round.round_up_fractional = true;
    const auto r = import("gfs.csv", std::nullopt, round);
    REQUIRE(r.jobs.size() == 3);
    CHECK(r.jobs[1] == TraceJob{"g2", 10, 1, 1, 600, 1, 3});
}

TEST_CASE("sacct --parsable2: allocations only, GPUs from AllocTRES, unfinished jobs skipped", "[placement][trace]") {
    const auto t = import("sacct.txt");
    CHECK(t.format == TraceFormat::sacct);
    REQUIRE(t.jobs.size() == 3);
    CHECK(t.jobs[0] == TraceJob{"102", 0, 1, 3, 330, 3, 5});  // typed gres/gpu:a100=2 + gres/gpu:v100=1
    CHECK(t.jobs[1] == TraceJob{"101", 60, 2, 8, 3600, 16, 2});
    CHECK(t.jobs[2] == TraceJob{"107_3", 360, 1, 4, 1800, 4, 10});  // plain gres/gpu=4 wins over the typed one
    const auto& r = t.report;
    CHECK(r.rows_read == 9);
    CHECK(r.skipped.at("job step") == RowTally{2, {3, 4}});
    CHECK(r.skipped.at("no GPUs") == RowTally{1, {6}});
    CHECK(r.skipped.at("never started") == RowTally{2, {7, 8}});
    CHECK(r.skipped.at("still running") == RowTally{1, {9}});
    CHECK(r.submit_offset_s == 1796014740);  // 2026-11-30T04:59:00
    // Without NNodes the node count comes from the TRES node= entry.
    const auto n = parse("JobID|Submit|Start|End|ReqTRES\n"
                         "7|2026-01-01T00:00:00|2026-01-01T00:00:00|2026-01-01T00:01:00|cpu=4,gres/gpu=8,node=2\n",
                         std::nullopt);
    REQUIRE(n.jobs.size() == 1);
    CHECK(n.jobs[0] == TraceJob{"7", 0, 2, 4, 60, 8, 2});
    // --parsable (not 2) ends every line with '|'.
    const auto p = parse("JobID|Submit|Start|End|AllocTRES|\n"
                         "8|2026-01-01T00:00:00|2026-01-01T00:00:30|2026-01-01T00:01:00|gres/gpu=2|\n",
                         std::nullopt);
    REQUIRE(p.jobs.size() == 1);
    CHECK(p.jobs[0] == TraceJob{"8", 0, 1, 2, 30, 2, 2});
}

TEST_CASE("format detection from the header line", "[placement][trace]") {
    using placement::detect_format;
    CHECK(detect_format("job_id,submit_time_s,num_instances,gpus_per_instance,duration_s") == TraceFormat::canonical);
    CHECK(detect_format("name,cpu_milli,memory_mib,num_gpu,gpu_milli") == TraceFormat::alibaba_openb);
    CHECK(detect_format("job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,submit_time,duration,"
                        "job_type") == TraceFormat::alibaba_gfs);
    CHECK(detect_format("job_id,submission_time,duration,num_gpu") == TraceFormat::elasticflow);
    CHECK(detect_format("job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration") ==
          TraceFormat::elasticflow);
    CHECK(detect_format("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\r") ==
          TraceFormat::tiresias);
    CHECK(detect_format("timestamp,duration,num_gpus,gpu_time,cluster") == TraceFormat::philly);
    CHECK(detect_format("job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,"
                        "queue,gpu_time") == TraceFormat::helios);  // Acme
    CHECK(detect_format("JobID|JobName|Submit|Start|End|State|NNodes|AllocTRES") == TraceFormat::sacct);
    CHECK(detect_format("jobid|submit|start|end|alloctres|") == TraceFormat::sacct);
    CHECK(detect_format("\xEF\xBB\xBFJOB_ID,Submission_Time,Duration,Num_GPU") == TraceFormat::elasticflow);
    CHECK(detect_format("name,time,application,num_replicas,batch_size") == std::nullopt);
    CHECK(detect_format("num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node") == std::nullopt);
    CHECK(detect_format("") == std::nullopt);
}

TEST_CASE("header errors: unrecognized (with the Pollux hint), missing column, empty input", "[placement][trace]") {
    CHECK_THROWS_WITH(import("pollux-workload.csv"),
                      "'" + fixtures +
                          "pollux-workload.csv' line 1: unrecognized trace header "
                          "'name,time,application,num_replicas,batch_size' (a Pollux/Sia workload: it has no duration "
                          "column, so it cannot be replayed); name the format (one of canonical, alibaba-openb, "
                          "alibaba-gfs, elasticflow, tiresias, philly, helios, sacct)");
    CHECK(error_of("JobID    Submit    Start\n------ ------ -----\n", std::nullopt) ==
          "'t.csv' line 1: unrecognized trace header 'JobID    Submit    Start' (sacct output must be --parsable2, "
          "with '|' between fields); name the format (one of canonical, alibaba-openb, alibaba-gfs, elasticflow, "
          "tiresias, philly, helios, sacct)");
    CHECK(error_of("# comment\njob_id,submission_time,duration\n", TraceFormat::elasticflow) ==
          "'t.csv' line 2: missing column 'num_gpu' for the elasticflow trace format");
    CHECK(error_of("JobID|Submit|Start|End\n", TraceFormat::sacct) ==
          "'t.csv' line 1: missing column 'AllocTRES' for the sacct trace format (or ReqTRES)");
    CHECK(error_of("", std::nullopt) == "'t.csv': empty trace: no header line");
    CHECK(error_of("\n\n", TraceFormat::canonical) == "'t.csv' line 2: empty trace: no header line");
    // A header without rows is an empty trace, not an error.
    const auto empty = parse("job_id,submission_time,duration,num_gpu\n", std::nullopt);
    CHECK(empty.jobs.empty());
    CHECK(empty.report.rows_read == 0);
}

TEST_CASE("row errors name the file, the line and what is wrong", "[placement][trace]") {
    const std::string itp = "job_id,submission_time,duration,num_gpu\n";
    const auto ef = TraceFormat::elasticflow;
    CHECK(error_of(itp + "a,1,10,1.5\n", ef) ==
          "'t.csv' line 2: column 'num_gpu': expected a whole GPU count, got '1.5'");
    CHECK(error_of(itp + "a,1,10,x\n", ef) == "'t.csv' line 2: column 'num_gpu': expected a whole GPU count, got 'x'");
    CHECK(error_of(itp + "a,1,10,-2\n", ef) ==
          "'t.csv' line 2: column 'num_gpu': expected a non-negative GPU count, got '-2'");
    CHECK(error_of(itp + "a,1,10,2000000\n", ef) ==
          "'t.csv' line 2: column 'num_gpu': GPU count 2000000 is out of range (at most 1000000)");
    CHECK(error_of(itp + "a,1,-5,1\n", ef) ==
          "'t.csv' line 2: column 'duration': expected a non-negative duration in seconds, got '-5'");
    CHECK(error_of(itp + "a,1,nan,1\n", ef) == "'t.csv' line 2: column 'duration': expected a number, got 'nan'");
    CHECK(error_of(itp + "a,,10,1\n", ef) == "'t.csv' line 2: column 'submission_time': missing value");
    CHECK(error_of(itp + ",1,10,1\n", ef) == "'t.csv' line 2: column 'job_id': missing value");
    CHECK(error_of(itp + "a,yesterday,10,1\n", ef) ==
          "'t.csv' line 2: column 'submission_time': expected a time (YYYY-MM-DD HH:MM:SS or seconds), got "
          "'yesterday'");
    CHECK(error_of(itp + "a,1,10\n", ef) == "'t.csv' line 2: expected 4 columns, got 3");
    CHECK(error_of(itp + "a,1,10,1,9\n", ef) == "'t.csv' line 2: expected 4 columns, got 5");
    CHECK(error_of(itp + "a,1,10,1\nb,2,10,1\n\na,3,10,1\n", ef) ==
          "'t.csv' line 5: duplicate job id 'a' (first on line 2)");
    CHECK(error_of("job_id,submit_time_s,num_instances,gpus_per_instance,duration_s\nj,abc,1,1,10\n",
                   TraceFormat::canonical) == "'t.csv' line 2: column 'submit_time_s': expected a number, got 'abc'");
    CHECK(error_of("job_id,submit_time_s,num_instances,gpus_per_instance,duration_s\nj,0,1000,2000,10\n",
                   TraceFormat::canonical) ==
          "'t.csv' line 2: 2000000 GPUs in one job is out of range (at most 1000000)");
    CHECK(error_of("job_id,submit_time_s,num_instances,gpus_per_instance,duration_s\nj,0,1.5,2,10\n",
                   TraceFormat::canonical) ==
          "'t.csv' line 2: column 'num_instances': expected a whole instance count, got '1.5'");
    CHECK(error_of("name,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\np,1,1000,100,150,200\n",
                   std::nullopt) ==
          "'t.csv' line 2: deletion_time 150 is before scheduled_time 200 (negative duration)");
    CHECK(error_of("job_name,gpu_request,worker_num,submit_time,duration\ng,-1,1,0,10\n", std::nullopt) ==
          "'t.csv' line 2: column 'gpu_request': expected a non-negative GPU count, got '-1'");
    CHECK(error_of("timestamp,duration,num_gpus\n2017-13-01 00:00:00,10,1\n", std::nullopt) ==
          "'t.csv' line 2: column 'timestamp': expected a time (YYYY-MM-DD HH:MM:SS or seconds), got "
          "'2017-13-01 00:00:00'");
    CHECK(error_of("JobID|Submit|Start|End|AllocTRES\n"
                   "1|2026-01-01T00:00:00|2026-01-01T00:10:00|2026-01-01T00:05:00|gres/gpu=1\n",
                   std::nullopt) ==
          "'t.csv' line 2: End '2026-01-01T00:05:00' is before Start '2026-01-01T00:10:00' (negative duration)");
    CHECK(error_of("JobID|Submit|Start|End|AllocTRES\n"
                   "1|2026-01-01T00:00:00|2026-01-01T00:10:00|2026-01-01T00:15:00|gres/gpu=two\n",
                   std::nullopt) == "'t.csv' line 2: column 'AllocTRES': expected a whole GPU count, got 'two'");
    // Whole counts written as floats are fine.
    CHECK(parse(itp + "a,1,10,8.0\n", ef).jobs.at(0).gpus_per_instance == 8);
}

TEST_CASE("the error of a file names the file", "[placement][trace]") {
    CHECK_THROWS_WITH(import("bad-negative-duration.csv"),
                      "'" + fixtures +
                          "bad-negative-duration.csv' line 3: column 'duration': expected a non-negative duration in "
                          "seconds, got '-5'");
    CHECK_THROWS_AS(import("no-such-trace.csv"), InputMissingError);
    TraceOptions zero;
    zero.node_gpus = 0;
    CHECK_THROWS_AS(import("tiresias.csv", std::nullopt, zero), UsageError);
}

TEST_CASE("lenient import skips and counts malformed rows", "[placement][trace]") {
    TraceOptions lenient;
    lenient.lenient = true;
    const auto t = import("bad-negative-duration.csv", std::nullopt, lenient);
    REQUIRE(t.jobs.size() == 1);
    CHECK(t.jobs[0].id == "a");
    CHECK(t.report.skipped.at("malformed: negative duration") == RowTally{2, {3, 4}});

    const auto m = parse("job_id,submission_time,duration,num_gpu\n"
                         "a,1,10,1\nb,2,10,1.5\nc,3\nd,4,10,1\na,5,10,1\ne,6,10,x\nf,7,10,y\ng,8,10,z\nh,9,10,w\n",
                         TraceFormat::elasticflow, lenient);
    CHECK(ids(m) == std::vector<std::string>{"a", "d"});
    CHECK(m.report.rows_read == 9);
    CHECK(m.report.jobs_kept == 2);
    CHECK(m.report.rows_skipped() == 7);
    CHECK(m.report.skipped.at("malformed: non-integer GPU count") == RowTally{1, {3}});
    CHECK(m.report.skipped.at("malformed: wrong number of columns") == RowTally{1, {4}});
    CHECK(m.report.skipped.at("malformed: duplicate job id") == RowTally{1, {6}});
    CHECK(m.report.skipped.at("malformed: unparsable number") == RowTally{4, {7, 8, 9}});  // only 3 examples
    // Header errors stay errors.
    CHECK(error_of("job_id,duration\n", TraceFormat::elasticflow, lenient) ==
          "'t.csv' line 1: missing column 'submission_time' for the elasticflow trace format");
}

TEST_CASE("canonical comments, quoted fields and blank lines", "[placement][trace]") {
    const auto t = parse("# a comment before the header\n"
                         "job_id,submit_time_s,num_instances,gpus_per_instance,duration_s,user\n"
                         "\"job, one\",0,1,2,5,\"x\"\n"
                         "# a comment between rows\n"
                         "   \n"
                         "j2 , 3 , 1 , 1 , 7 ,y\n",
                         std::nullopt);
    REQUIRE(t.jobs.size() == 2);
    CHECK(t.jobs[0] == TraceJob{"job, one", 0, 1, 2, 5, 2, 3});
    CHECK(t.jobs[1] == TraceJob{"j2", 3, 1, 1, 7, 1, 6});
    CHECK(t.report.rows_read == 2);
}

TEST_CASE("wall-clock times are UTC seconds, other forms are refused", "[placement][trace]") {
    using placement::trace_fields::parse_datetime;
    CHECK(parse_datetime("1970-01-01 00:00:00") == 0.0);
    CHECK(parse_datetime("2000-02-29T12:00:00") == 951825600.0);
    CHECK(parse_datetime("2017-10-03 14:20:00.25") == 1507040400.25);
    CHECK(parse_datetime("2001-02-29 00:00:00") == std::nullopt);
    CHECK(parse_datetime("2017-10-03") == std::nullopt);
    CHECK(parse_datetime("2017-10-03 24:00:00") == std::nullopt);
    CHECK(parse_datetime("2017-10-03 14:20:00Z") == std::nullopt);
    CHECK(parse_datetime("Unknown") == std::nullopt);
}

TEST_CASE("describe and to_json summarise the import", "[placement][trace]") {
    const auto t = import("openb.csv");
    const auto lines = placement::describe(t);
    REQUIRE(lines.size() == 5);
    CHECK(lines[0] == "'" + fixtures + "openb.csv' (alibaba-openb trace): 7 rows, 3 jobs kept, 4 rows skipped");
    CHECK(lines[1] == "skipped 2 rows: fractional GPU share (lines 3, 8)");
    CHECK(lines[2] == "skipped 1 row: never started (line 7)");
    CHECK(lines[3] == "skipped 1 row: no GPUs (line 5)");
    CHECK(lines[4] == "submit times rebased: the first job arrives at 0 s (source time 1000 s)");
    const auto j = placement::to_json(t);
    CHECK(j.at("format") == "alibaba-openb");
    CHECK(j.at("rows_skipped") == 4);
    CHECK(j.at("skipped").at("fractional GPU share").at("first_lines") == json_io::Json::array({3, 8}));
    CHECK(j.at("reordered") == false);
}
