// Output to stdout or to a file written atomically (temp file + rename), so a failure never leaves half a file.
#pragma once

#include <fstream>
#include <ostream>
#include <string>
#include <vector>

namespace gpuops {

class Output {
public:
    /// `path` "-" (or empty) is stdout; a regular file is created atomically on commit(); an existing
    /// device or FIFO (e.g. /dev/null) is written in place.
    explicit Output(std::string path);
    Output(const Output&) = delete;
    Output& operator=(const Output&) = delete;
    Output(Output&& other) noexcept;
    Output& operator=(Output&&) = delete;
    ~Output() noexcept;

    [[nodiscard]] std::ostream& stream();
    [[nodiscard]] bool is_stdout() const noexcept { return path_.empty() || path_ == "-"; }
    /// Flushes and checks the stream, then renames the temp file into place. Throws IoError (74).
    void commit();

private:
    std::string path_;
    std::string target_;  ///< path_ with symlinks resolved: what the temp file is renamed onto
    std::string temp_path_;
    std::ofstream file_;
    bool committed_ = false;
    bool direct_ = false;  ///< writing a device or FIFO in place (no temp file)
};

/// Temp files currently being written; a timeout removes them before the process exits.
[[nodiscard]] std::vector<std::string> pending_temp_files();

}  // namespace gpuops
