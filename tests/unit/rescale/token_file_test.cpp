// Token files: trimmed, one line, refused when empty or open to other users.
#include <catch2/catch.hpp>

#include <filesystem>

#include "gpuops/core/error.hpp"
#include "gpuops/rescale/token_file.hpp"

#include "support/temp_dir.hpp"

using namespace gpuops::rescale;
namespace fs = std::filesystem;

namespace {

std::string token_file(const gpuops::test::TempDir& dir, const std::string& text, fs::perms perms) {
    dir.write("token", text);
    const auto path = dir.path() / "token";
    fs::permissions(path, perms);
    return path.string();
}

gpuops::ExitCode code_of(const std::string& path) {
    try {
        (void)read_token_file(path);
    } catch (const gpuops::Error& e) {
        return e.code();
    }
    return gpuops::ExitCode::ok;
}

}  // namespace

TEST_CASE("token file: the token is the trimmed content of an owner-only file") {
    gpuops::test::TempDir dir;
    CHECK(read_token_file(token_file(dir, "  s3cret\n", fs::perms::owner_read | fs::perms::owner_write)) == "s3cret");
    // Group access is allowed: a job's processes may run under several accounts of one group.
    CHECK(read_token_file(token_file(dir, "s3cret", fs::perms::owner_read | fs::perms::group_read)) == "s3cret");
}

TEST_CASE("token file: empty, several lines, open to others, or missing is refused") {
    gpuops::test::TempDir dir;
    const auto owner = fs::perms::owner_read | fs::perms::owner_write;
    CHECK(code_of(token_file(dir, " \n\t", owner)) == gpuops::ExitCode::data);
    CHECK(code_of(token_file(dir, "one\ntwo\n", owner)) == gpuops::ExitCode::data);
    CHECK(code_of(token_file(dir, "s3cret", owner | fs::perms::others_read)) == gpuops::ExitCode::data);
    CHECK(code_of((dir.path() / "absent").string()) == gpuops::ExitCode::no_input);
}
