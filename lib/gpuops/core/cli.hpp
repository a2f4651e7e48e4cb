// The CLI front door every gpuops tool goes through: common options, exit-code mapping, one error voice.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "gpuops/core/error.hpp"
#include "gpuops/core/output.hpp"

namespace gpuops::cli {

/// Options every tool has.
struct Common {
    std::string output = "-";  ///< -o FILE, written atomically
    std::string format;        ///< --format, one of the tool's formats
    std::string timeout;       ///< --timeout text, e.g. 30s
    bool compact = false;      ///< --compact: one-line JSON
    bool quiet = false;        ///< -q: no warnings
    int verbose = 0;           ///< -v (repeatable): notes
    bool version = false;
};

class Tool {
public:
    /// `formats`: the values --format accepts; the first one is the default.
    Tool(std::string name, std::string summary, std::vector<std::string> formats);

    [[nodiscard]] CLI::App& app() noexcept { return app_; }
    [[nodiscard]] const Common& common() const noexcept { return common_; }
    [[nodiscard]] std::string_view name() const noexcept { return name_; }
    /// Whether --format was given on the command line (not just defaulted).
    [[nodiscard]] bool format_given() const { return format_option_ != nullptr && format_option_->count() > 0; }

    /// Parses argv and runs `body` under the gpuops contract: --help/--version, --timeout watchdog,
    /// typed errors mapped to exit codes, and a final check that stdout was written. Returns the exit code.
    int run(int argc, char** argv, const std::function<ExitCode()>& body);

    /// The -o destination (stdout by default). Commit it once the whole output is written.
    [[nodiscard]] Output open_output() const { return Output(common_.output); }
    /// Writes the whole result to the -o destination at once and commits it.
    void write(std::string_view text) const;

    /// Diagnostics on stderr: `<tool>: warning: ...` (hidden by -q) and `<tool>: note: ...` (shown by -v).
    void warn(std::string_view message) const;
    void note(std::string_view message) const;

private:
    void print_error(std::string_view message) const;

    std::string name_;
    CLI::App app_;
    Common common_;
    CLI::Option* format_option_ = nullptr;
};

}  // namespace gpuops::cli
