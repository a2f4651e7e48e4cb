// Unit tests for gpuops::progress: what reaches the terminal, and when, under a fake clock.
#include <catch2/catch.hpp>

#include <iostream>
#include <limits>
#include <sstream>
#include <streambuf>
#include <utility>

#include <unistd.h>

#include "gpuops/core/progress.hpp"

using namespace std::chrono_literals;
using gpuops::progress::Progress;

namespace {

/// A clock that moves only when a test says so.
struct FakeClock {
    std::chrono::steady_clock::time_point now{std::chrono::steady_clock::time_point{} + 1h};
    Progress::Clock clock() {
        return [this] { return now; };
    }
};

/// A stream buffer that can be told to fail every write, to check cleanup of a broken stream.
class BreakableBuffer : public std::streambuf {
public:
    bool broken = false;
    std::string text;

protected:
    int_type overflow(int_type c) override {
        if (broken) return traits_type::eof();
        if (!traits_type::eq_int_type(c, traits_type::eof())) text += traits_type::to_char_type(c);
        return traits_type::not_eof(c);
    }
};

}  // namespace

TEST_CASE("Progress draws at once and then at most every redraw interval", "[progress]") {
    FakeClock time;
    std::ostringstream out;
    Progress progress("copy", 120, &out, time.clock());
    CHECK(out.str() == "\rcopy: 0/120 (0%)");

    progress.advance(36);
    CHECK(out.str() == "\rcopy: 0/120 (0%)");  // no time has passed
    time.now += 99ms;
    progress.advance();
    CHECK(out.str() == "\rcopy: 0/120 (0%)");
    time.now += 1ms;
    progress.advance(0);
    CHECK(out.str() == "\rcopy: 0/120 (0%)\rcopy: 37/120 (30%)");
    CHECK(progress.done() == 37);
    CHECK(progress.total() == 120);

    time.now += 50ms;
    progress.advance(3);
    CHECK(out.str() == "\rcopy: 0/120 (0%)\rcopy: 37/120 (30%)");  // the interval counts from the last draw
    time.now += 50ms;
    progress.advance(0);
    CHECK(out.str() == "\rcopy: 0/120 (0%)\rcopy: 37/120 (30%)\rcopy: 40/120 (33%)");
}

TEST_CASE("Progress redraws a thousand tight advances only a few times", "[progress]") {
    FakeClock time;
    std::ostringstream out;
    Progress progress("scan", 1000, &out, time.clock());
    for (int i = 0; i < 1000; ++i) {
        time.now += 1ms;
        progress.advance();
    }
    std::size_t draws = 0;
    for (char c : out.str())
        draws += c == '\r' ? 1 : 0;
    CHECK(draws == 11);  // the first draw and one per 100 ms of the second that passed
    CHECK(out.str().ends_with("\rscan: 1000/1000 (100%)"));
}

TEST_CASE("Progress finish draws the final count and ends the line once", "[progress]") {
    FakeClock time;
    std::ostringstream out;
    {
        Progress progress("copy", 120, &out, time.clock());
        progress.advance(120);
        progress.finish();
        CHECK(out.str() == "\rcopy: 0/120 (0%)\rcopy: 120/120 (100%)\n");
        progress.finish();
        time.now += 1s;
        progress.advance();
        CHECK(out.str() == "\rcopy: 0/120 (0%)\rcopy: 120/120 (100%)\n");
    }
    CHECK(out.str() == "\rcopy: 0/120 (0%)\rcopy: 120/120 (100%)\n");  // nothing erased after finish
}

TEST_CASE("Progress destroyed unfinished erases its line", "[progress]") {
    FakeClock time;
    std::ostringstream out;
    {
        Progress progress("copy", 10, &out, time.clock());
        progress.advance(4);
    }
    CHECK(out.str() == "\rcopy: 0/10 (0%)\r\033[K");
}

TEST_CASE("Progress without a total shows the count alone", "[progress]") {
    FakeClock time;
    std::ostringstream out;
    Progress progress("probe", 0, &out, time.clock());
    progress.advance(5);
    time.now += 100ms;
    progress.advance(1'000'000);
    progress.finish();
    CHECK(out.str() == "\rprobe: 0\rprobe: 1000005\rprobe: 1000005\n");
}

TEST_CASE("Progress never counts past its total and shows 100% only when done", "[progress]") {
    FakeClock time;
    std::ostringstream out;
    Progress progress("copy", 1000, &out, time.clock());
    progress.advance(999);
    time.now += 1s;
    progress.advance(0);
    CHECK(out.str().ends_with("\rcopy: 999/1000 (99%)"));
    progress.advance(5000);
    CHECK(progress.done() == 1000);

    const std::size_t huge = std::numeric_limits<std::size_t>::max();
    std::ostringstream big_out;
    Progress big("bytes", huge, &big_out, time.clock());
    big.advance(huge - 1);
    big.finish();
    CHECK(big_out.str().ends_with(" (99%)\n"));

    std::ostringstream open_out;
    Progress open("items", 0, &open_out, time.clock());
    open.advance(huge);
    open.advance(huge);  // saturates instead of wrapping
    CHECK(open.done() == huge);
}

TEST_CASE("Progress with no sink draws nothing but still counts", "[progress]") {
    FakeClock time;
    Progress progress("copy", 10, nullptr, time.clock());
    time.now += 1s;
    progress.advance(3);
    progress.finish();
    CHECK(progress.done() == 3);
    Progress with_real_clock("copy", 10, nullptr);
    with_real_clock.advance();
    CHECK(with_real_clock.done() == 1);
}

TEST_CASE("Progress uses the steady clock when none is given", "[progress]") {
    std::ostringstream out;
    Progress progress("copy", 2, &out);
    progress.advance(2);
    progress.finish();
    CHECK(out.str().starts_with("\rcopy: 0/2 (0%)"));
    CHECK(out.str().ends_with("\rcopy: 2/2 (100%)\n"));
}

TEST_CASE("Progress moves the line's ownership with it", "[progress]") {
    FakeClock time;
    std::ostringstream out;
    {
        Progress first("copy", 10, &out, time.clock());
        Progress second(std::move(first));
        second.advance(10);
        second.finish();
    }  // first, moved from, must not erase the finished line
    CHECK(out.str() == "\rcopy: 0/10 (0%)\rcopy: 10/10 (100%)\n");

    std::ostringstream a_out;
    std::ostringstream b_out;
    {
        Progress a("a", 5, &a_out, time.clock());
        Progress b("b", 5, &b_out, time.clock());
        a = std::move(b);  // a's unfinished line is erased first
        CHECK(a_out.str() == "\ra: 0/5 (0%)\r\033[K");
        a.advance(2);
        time.now += 1s;
        a.advance(0);
        CHECK(b_out.str() == "\rb: 0/5 (0%)\rb: 2/5 (40%)");
    }
    CHECK(a_out.str() == "\ra: 0/5 (0%)\r\033[K");
    CHECK(b_out.str() == "\rb: 0/5 (0%)\rb: 2/5 (40%)\r\033[K");  // erased exactly once, by its new owner
}

TEST_CASE("Progress cleanup survives a stream that throws", "[progress]") {
    BreakableBuffer buffer;
    std::ostream out(&buffer);
    out.exceptions(std::ios::badbit);
    FakeClock time;
    CHECK_NOTHROW([&] {
        Progress progress("copy", 10, &out, time.clock());
        buffer.broken = true;
    }());
    CHECK(buffer.text == "\rcopy: 0/10 (0%)");
}

TEST_CASE("progress_sink is stderr only on a terminal and never when quiet", "[progress]") {
    CHECK(gpuops::progress::progress_sink(true) == nullptr);
    std::ostream* expected = isatty(STDERR_FILENO) == 1 ? &std::cerr : nullptr;
    CHECK(gpuops::progress::progress_sink(false) == expected);
}
