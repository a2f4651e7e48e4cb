// The crash-after-write testing hook: what GPUOPS_RESCALE_CRASH_AFTER accepts and which append it fires at.
#include <catch2/catch.hpp>

#include "gpuops/core/error.hpp"
#include "gpuops/rescale/crash_hook.hpp"

using namespace gpuops::rescale;

TEST_CASE("crash hook: KIND means the first append of that kind and KIND:n the n-th") {
    CHECK(parse_crash_point("COMMIT") == CrashPoint{"COMMIT", 1});
    CHECK(parse_crash_point("KV_PUT:3") == CrashPoint{"KV_PUT", 3});
    for (const char* bad : {"", "commit", "COMMIT:0", "COMMIT:", "COMMIT:x", "NOPE:1", "COMMIT:2:3"}) {
        INFO(bad);
        CHECK_THROWS_AS(parse_crash_point(bad), gpuops::DataError);
    }
}

TEST_CASE("crash hook: fires only at the n-th append of the armed kind") {
    CrashHook hook(CrashPoint{"COMMIT", 2});
    CHECK_FALSE(hook.after_append(StartRecord{1}, true));
    CHECK_FALSE(hook.after_append(CommitRecord{1, "h1"}, true));
    CHECK_FALSE(hook.after_append(ProposeRecord{2, 1, {1}, "h2"}, true));
    CHECK(hook.after_append(CommitRecord{2, "h2"}, true));
    CHECK_FALSE(hook.after_append(CommitRecord{3, "h3"}, true));
    CrashHook unarmed(std::nullopt);
    CHECK_FALSE(unarmed.after_append(CommitRecord{1, "h1"}, true));
}
