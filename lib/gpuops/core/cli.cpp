// Implementation of the CLI front door: parsing, --version, the timeout watchdog and exit-code mapping.
#include "gpuops/core/cli.hpp"

#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <new>
#include <thread>

#include <fmt/format.h>
#include <unistd.h>

#include "gpuops/core/json_io.hpp"
#include "gpuops/core/units.hpp"
#include "gpuops/core/version.hpp"

namespace gpuops::cli {
namespace {

/// Ends the process with exit 75 when the --timeout expires: removes temp files and writes one line.
class Watchdog {
public:
    Watchdog(std::string tool, std::chrono::nanoseconds limit, std::string limit_text)
        : thread_([this, tool = std::move(tool), limit, text = std::move(limit_text)] {
              std::unique_lock lock(mutex_);
              if (cv_.wait_for(lock, limit, [this] { return done_; })) return;
              for (const auto& path : pending_temp_files())
                  ::unlink(path.c_str());
              const std::string line = fmt::format("{}: error: timed out after {}\n", tool, text);
              (void)!::write(STDERR_FILENO, line.data(), line.size());
              std::_Exit(to_int(ExitCode::temporary));
          }) {}
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;
    ~Watchdog() {
        {
            const std::lock_guard lock(mutex_);
            done_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_;  // last: starts after the members it uses exist
};

}  // namespace

Tool::Tool(std::string name, std::string summary, std::vector<std::string> formats)
    : name_(std::move(name)), app_(std::move(summary), name_) {
    app_.set_help_flag("-h,--help", "Print this help and exit");
    app_.add_flag("--version", common_.version, "Print the version and exit (with --format json: build details)");
    app_.add_option("-o,--output", common_.output, "Write the result to FILE atomically instead of stdout")
        ->type_name("FILE");
    if (!formats.empty()) {
        common_.format = formats.front();
        std::vector<std::string> allowed = formats;
        if (std::find(allowed.begin(), allowed.end(), "json") == allowed.end()) allowed.emplace_back("json");
        format_option_ =
            app_.add_option("--format", common_.format, "Output format: " + fmt::format("{}", fmt::join(formats, ", ")))
                ->check(CLI::IsMember(allowed))
                ->type_name("FORMAT");
    }
    app_.add_flag("--compact", common_.compact, "Write JSON on one line");
    app_.add_option("--timeout", common_.timeout, "Give up after DURATION (e.g. 30s, 250ms) with exit 75")
        ->type_name("DURATION");
    app_.add_flag("-q,--quiet", common_.quiet, "Do not print warnings");
    app_.add_flag("-v,--verbose", common_.verbose,
                  "Print notes on stderr: what was found and where its numbers come from");
    app_.footer(fmt::format("See {}(1) and gpuops(7) for the exit codes and formats.", name_));
}

void Tool::write(std::string_view text) const {
    Output output = open_output();
    output.stream() << text;
    output.commit();
}

void Tool::print_error(std::string_view message) const { std::cerr << name_ << ": error: " << message << '\n'; }

void Tool::warn(std::string_view message) const {
    if (!common_.quiet) std::cerr << name_ << ": warning: " << message << '\n';
}

void Tool::note(std::string_view message) const {
    if (common_.verbose > 0 && !common_.quiet) std::cerr << name_ << ": note: " << message << '\n';
}

int Tool::run(int argc, char** argv, const std::function<ExitCode()>& body) {
    try {
        app_.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        std::cout << app_.help();
        return std::cout.flush() ? 0 : to_int(ExitCode::io);
    } catch (const CLI::ParseError& e) {
        // CLI11's own codes (100-127) would look like shell errors to Slurm and scripts: usage is 2.
        std::string message = e.what();
        if (!message.empty() && message.back() == '\n') message.pop_back();
        if (!message.empty()) message[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(message[0])));
        print_error(message + " (see --help)");
        return to_int(ExitCode::usage);
    }

    try {
        if (common_.version) {
            // Plain --version is one line for tickets and scripts; JSON only when asked for explicitly.
            if (format_given() && common_.format == "json") {
                write(json_io::dump(build_info(name_), !common_.compact));
            } else {
                write(fmt::format("{} {}\n", name_, version()));
            }
        } else {
            std::unique_ptr<Watchdog> watchdog;
            if (!common_.timeout.empty()) {
                std::chrono::nanoseconds limit{};
                try {
                    limit = units::parse_duration(common_.timeout);
                } catch (const DataError& e) {
                    throw UsageError("--timeout: " + e.reason());
                }
                if (limit.count() <= 0) throw UsageError("--timeout: the duration must be positive");
                watchdog = std::make_unique<Watchdog>(name_, limit, common_.timeout);
            }
            const ExitCode code = body();
            std::cout.flush();
            if (!std::cout || std::fflush(stdout) != 0) throw IoError("cannot write standard output");
            return to_int(code);
        }
        std::cout.flush();
        if (!std::cout || std::fflush(stdout) != 0) throw IoError("cannot write standard output");
        return 0;
    } catch (const Error& e) {
        print_error(e.what());
        return to_int(e.code());
    } catch (const std::bad_alloc&) {
        print_error("out of memory");
        return to_int(ExitCode::temporary);
    } catch (const std::exception& e) {
        print_error(fmt::format("internal error: {}", e.what()));
        return to_int(ExitCode::internal);
    }
}

}  // namespace gpuops::cli
