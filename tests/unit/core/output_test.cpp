// Atomic output: the file appears complete on commit, and never half-written when the writer fails.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/stat.h>

#include "gpuops/core/error.hpp"
#include "gpuops/core/output.hpp"

#include "support/temp_dir.hpp"

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

TEST_CASE("commit renames the temp file into place with a normal file mode", "[output]") {
    const gpuops::test::TempDir dir;
    const fs::path target = dir.path() / "out.json";
    {
        gpuops::Output out(target.string());
        out.stream() << "{\"a\": 1}\n";
        CHECK_FALSE(fs::exists(target));  // nothing visible before commit
        CHECK(gpuops::pending_temp_files().size() == 1);
        out.commit();
    }
    CHECK(slurp(target) == "{\"a\": 1}\n");
    CHECK(gpuops::pending_temp_files().empty());
    struct stat st {};
    REQUIRE(::stat(target.c_str(), &st) == 0);
    CHECK((st.st_mode & 0044) != 0);  // readable by others unless the umask says no, unlike mkstemp's 0600
    CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}) == 1);
}

TEST_CASE("an uncommitted output leaves neither the target nor a temp file", "[output]") {
    const gpuops::test::TempDir dir;
    const fs::path target = dir.path() / "out.json";
    std::ofstream(target) << "old contents\n";
    {
        gpuops::Output out(target.string());
        out.stream() << "half";
    }  // e.g. an exception unwound past it
    CHECK(slurp(target) == "old contents\n");
    CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}) == 1);
    CHECK(gpuops::pending_temp_files().empty());
}

TEST_CASE("an output in a missing directory is an I/O error naming the file", "[output]") {
    CHECK_THROWS_AS(gpuops::Output("/nonexistent-dir/x.json"), gpuops::IoError);
    CHECK_THROWS_WITH(gpuops::Output("/nonexistent-dir/x.json"),
                      "cannot create '/nonexistent-dir/x.json': No such file or directory");
}

TEST_CASE("a device is written in place, never replaced by a regular file", "[output]") {
    {
        gpuops::Output out("/dev/null");
        out.stream() << "discarded\n";
        out.commit();
    }
    struct stat st {};
    REQUIRE(::stat("/dev/null", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
}

TEST_CASE("a symlinked target keeps its link, and the file it points to is replaced", "[output]") {
    const gpuops::test::TempDir dir;
    const fs::path real = dir.path() / "real.json";
    const fs::path link = dir.path() / "link.json";
    std::ofstream(real) << "old\n";
    fs::create_symlink(real, link);
    {
        gpuops::Output out(link.string());
        out.stream() << "new\n";
        out.commit();
    }
    CHECK(fs::is_symlink(link));
    CHECK(slurp(real) == "new\n");
}
