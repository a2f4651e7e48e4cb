// A one-line progress counter on stderr for interactive use, silent when stderr is not a terminal or -q is given.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>

namespace gpuops::progress {

/// Draws `label: 37/120 (30%)` (or `label: 37` when the total is unknown, i.e. 0) over and over on one line of
/// `sink`, returning the cursor with '\r'. Redraws at most once per redraw_interval so that a tight loop pays
/// little. finish() draws the final count and ends the line; a Progress destroyed unfinished (an error is on its
/// way) erases its line with "\r\033[K" instead, so the error message starts on a clean line.
class Progress {
public:
    using Clock = std::function<std::chrono::steady_clock::time_point()>;

    static constexpr std::chrono::milliseconds redraw_interval{100};

    /// A null `sink` disables everything. `clock` defaults to std::chrono::steady_clock::now; tests inject one.
    /// Draws the initial `label: 0/total (0%)` at once.
    Progress(std::string label, std::size_t total, std::ostream* sink, Clock clock = {});
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;
    Progress(Progress&& other) noexcept;
    Progress& operator=(Progress&& other) noexcept;
    ~Progress();

    /// Counts `n` more items done (never past a known total) and redraws when redraw_interval has passed.
    void advance(std::size_t n = 1);
    /// Draws the final count and a newline; nothing is drawn after that.
    void finish();

    [[nodiscard]] std::size_t done() const noexcept { return done_; }
    [[nodiscard]] std::size_t total() const noexcept { return total_; }

private:
    void draw();
    void erase() noexcept;

    std::string label_;
    std::size_t total_ = 0;
    std::size_t done_ = 0;
    std::ostream* sink_ = nullptr;  ///< not owned; null once finished, moved from or disabled
    Clock clock_;
    std::chrono::steady_clock::time_point last_draw_{};
};

/// &std::cerr when stderr is a terminal and `quiet` is false, else nullptr (which disables Progress).
[[nodiscard]] std::ostream* progress_sink(bool quiet);

}  // namespace gpuops::progress
