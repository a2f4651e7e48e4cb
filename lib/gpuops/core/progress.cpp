// The stderr progress counter: rate-limited redraws, a final line on finish, an erased line when abandoned.
#include "gpuops/core/progress.hpp"

#include <iostream>
#include <limits>
#include <utility>

#include <fmt/format.h>
#include <unistd.h>

namespace gpuops::progress {
namespace {

std::string render(const std::string& label, std::size_t done, std::size_t total) {
    if (total == 0) return fmt::format("{}: {}", label, done);
    // Floating point keeps done * 100 from overflowing; 100% is kept for the moment the work is really done.
    auto percent = static_cast<unsigned>(static_cast<double>(done) / static_cast<double>(total) * 100.0);
    if (done < total && percent > 99) percent = 99;
    return fmt::format("{}: {}/{} ({}%)", label, done, total, percent);
}

}  // namespace

Progress::Progress(std::string label, std::size_t total, std::ostream* sink, Clock clock)
    : label_(std::move(label)),
      total_(total),
      sink_(sink),
      clock_(clock ? std::move(clock) : Clock(&std::chrono::steady_clock::now)) {
    if (sink_) draw();
}

Progress::Progress(Progress&& other) noexcept
    : label_(std::move(other.label_)),
      total_(other.total_),
      done_(other.done_),
      sink_(std::exchange(other.sink_, nullptr)),
      clock_(std::move(other.clock_)),
      last_draw_(other.last_draw_) {}

Progress& Progress::operator=(Progress&& other) noexcept {
    if (this != &other) {
        erase();
        label_ = std::move(other.label_);
        total_ = other.total_;
        done_ = other.done_;
        sink_ = std::exchange(other.sink_, nullptr);
        clock_ = std::move(other.clock_);
        last_draw_ = other.last_draw_;
    }
    return *this;
}

Progress::~Progress() { erase(); }

void Progress::advance(std::size_t n) {
    const std::size_t room = (total_ > 0 ? total_ : std::numeric_limits<std::size_t>::max()) - done_;
    done_ += n < room ? n : room;
    if (sink_ && clock_() - last_draw_ >= redraw_interval) draw();
}

void Progress::finish() {
    if (!sink_) return;
    draw();
    *sink_ << '\n' << std::flush;
    sink_ = nullptr;
}

void Progress::draw() {
    last_draw_ = clock_();
    *sink_ << '\r' << render(label_, done_, total_) << std::flush;
}

void Progress::erase() noexcept {
    if (!sink_) return;
    try {
        *sink_ << "\r\033[K" << std::flush;
    } catch (...) {
        // A stream that throws on write (exceptions() set) must not turn cleanup into std::terminate.
    }
    sink_ = nullptr;
}

std::ostream* progress_sink(bool quiet) { return !quiet && isatty(STDERR_FILENO) == 1 ? &std::cerr : nullptr; }

}  // namespace gpuops::progress
