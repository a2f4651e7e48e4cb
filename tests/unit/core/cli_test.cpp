// The CLI front door: every way a tool can end maps to the documented exit code and one stderr line.
#include <catch2/catch.hpp>

#include <iostream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "gpuops/core/cli.hpp"
#include "gpuops/core/error.hpp"

using gpuops::ExitCode;

namespace {

/// Swaps std::cout/std::cerr for string streams while a test runs a tool in-process.
struct Captured {
    std::ostringstream out, err;
    std::streambuf* old_out = std::cout.rdbuf(out.rdbuf());
    std::streambuf* old_err = std::cerr.rdbuf(err.rdbuf());
    Captured() = default;
    Captured(const Captured&) = delete;
    Captured& operator=(const Captured&) = delete;
    ~Captured() {
        std::cout.rdbuf(old_out);
        std::cerr.rdbuf(old_err);
    }
};

int run(std::vector<std::string> args, const std::function<ExitCode()>& body, Captured& io) {
    gpuops::cli::Tool tool("gpuops-test", "A test tool.", {"json", "text"});
    int count = 0;
    tool.app().add_option("--count", count, "A number");
    std::vector<char*> argv;
    args.insert(args.begin(), "gpuops-test");
    for (auto& a : args)
        argv.push_back(a.data());
    (void)io;
    return tool.run(static_cast<int>(argv.size()), argv.data(), body);
}

ExitCode ok() { return ExitCode::ok; }

}  // namespace

TEST_CASE("typed errors become their exit codes with one line on stderr", "[cli]") {
    const std::vector<std::pair<std::function<ExitCode()>, int>> cases{
        {[]() -> ExitCode {
             throw gpuops::DataError("bad value", {"f.json", "/a/0", 0});
         },
         65},
        {[]() -> ExitCode { throw gpuops::InputMissingError("cannot open 'x'"); }, 66},
        {[]() -> ExitCode { throw gpuops::UnavailableError("no GPU"); }, 69},
        {[]() -> ExitCode { throw gpuops::IoError("cannot write 'x'"); }, 74},
        {[]() -> ExitCode { throw gpuops::TimeoutError("timed out"); }, 75},
        {[]() -> ExitCode { throw gpuops::UsageError("--x: bad"); }, 2},
        {[]() -> ExitCode { throw std::runtime_error("boom"); }, 70},
        {[]() -> ExitCode { return ExitCode::negative; }, 1},
        {ok, 0},
    };
    for (const auto& [body, code] : cases) {
        Captured io;
        CHECK(run({}, body, io) == code);
        const std::string err = io.err.str();
        if (code == 0 || code == 1) {
            CHECK(err.empty());
        } else {
            CHECK(err.rfind("gpuops-test: error: ", 0) == 0);
            CHECK(std::count(err.begin(), err.end(), '\n') == 1);
        }
    }
    Captured io;
    run(
        {},
        []() -> ExitCode {
            throw gpuops::DataError("bad value", {"f.json", "/a/0", 0});
        },
        io);
    CHECK(io.err.str() == "gpuops-test: error: 'f.json': (/a/0) bad value\n");
    Captured io2;
    run(
        {}, []() -> ExitCode { throw std::runtime_error("boom"); }, io2);
    CHECK(io2.err.str() == "gpuops-test: error: internal error: boom\n");
}

TEST_CASE("CLI11's own exit codes are remapped to 2", "[cli]") {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"--no-such-option"}, std::vector<std::string>{"--count", "seven"},
          std::vector<std::string>{"--format", "yaml"}, std::vector<std::string>{"extra-positional"}}) {
        Captured io;
        bool ran = false;
        CHECK(run(
                  args,
                  [&] {
                      ran = true;
                      return ExitCode::ok;
                  },
                  io) == 2);
        CHECK_FALSE(ran);
        CHECK(io.err.str().rfind("gpuops-test: error: ", 0) == 0);
        CHECK(io.err.str().find("(see --help)") != std::string::npos);
        CHECK(io.out.str().empty());
    }
}

TEST_CASE("help and version print to stdout and exit 0 without running the tool", "[cli]") {
    bool ran = false;
    auto body = [&] {
        ran = true;
        return ExitCode::ok;
    };
    {
        Captured io;
        CHECK(run({"--help"}, body, io) == 0);
        CHECK(io.out.str().find("--timeout") != std::string::npos);
        CHECK(io.out.str().find("--count") != std::string::npos);
    }
    {
        Captured io;
        CHECK(run({"--version"}, body, io) == 0);
        CHECK(io.out.str() == "gpuops-test 0.1.0\n");
    }
    {
        Captured io;
        CHECK(run({"--version", "--format", "json", "--compact"}, body, io) == 0);
        CHECK(io.out.str().rfind(R"({"tool":"gpuops-test","version":"0.1.0","git_sha":)", 0) == 0);
    }
    CHECK_FALSE(ran);
}

TEST_CASE("the timeout must be a positive duration", "[cli]") {
    Captured io;
    CHECK(run({"--timeout", "soon"}, ok, io) == 2);
    CHECK(io.err.str() ==
          "gpuops-test: error: --timeout: invalid duration 'soon' (expected a number and a unit such as 30s, 250ms or "
          "1m30s)\n");
    Captured io2;
    CHECK(run({"--timeout", "0s"}, ok, io2) == 2);
    Captured io3;
    CHECK(run({"--timeout", "10s"}, ok, io3) == 0);  // a generous limit does not get in the way
}
