// The coordinator's per-peer connection: bounded reading, bounded writing, and a lingering close.
#include "gpuops/rescale/server_connection.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace gpuops::rescale::detail {
namespace {

/// Lines handed to one gather write: enough to batch a fan-out, few enough to keep the buffer list small.
constexpr std::size_t max_lines_per_write = 64;

}  // namespace

Connection::Connection(asio::ip::tcp::socket socket, ConnId id, ConnectionLimits limits, ConnectionEvents& events)
    : socket_(std::move(socket)), linger_timer_(socket_.get_executor()), id_(id), limits_(limits), events_(events) {}

void Connection::start() { read_more(); }

void Connection::read_more() {
    reading_ = true;
    socket_.async_read_some(
        asio::buffer(chunk_.get(), read_chunk_bytes),
        [self = shared_from_this()](const std::error_code& error, std::size_t bytes) { self->on_read(error, bytes); });
}

void Connection::on_read(const std::error_code& error, std::size_t bytes) {
    reading_ = false;
    if (state_ == State::closed) return;
    if (error) {
        if (state_ == State::open) {
            lose(error == asio::error::eof ? "closed by the peer" : error.message());
        } else {
            close_now();
        }
        return;
    }
    if (state_ == State::open) {
        input_.append(std::string_view(chunk_.get(), bytes));
        deliver_lines();
    }
    // Once closing, input is dropped unread; reading on is how the peer's FIN or RST reaches us.
    if (state_ != State::closed && !reading_) read_more();
}

void Connection::deliver_lines() {
    while (state_ == State::open) {
        const auto line = input_.next();
        if (!line) break;
        events_.on_line(id_, *line);
    }
    if (state_ != State::open) {
        input_.clear();
        return;
    }
    input_.compact();
    if (input_.rest().size() > limits_.max_line_bytes) refuse_oversize();
}

/// A partial line already over the limit: the core answers TOO_LARGE and closes; nothing more of it is kept.
void Connection::refuse_oversize() {
    events_.on_line(id_, input_.rest());
    input_.clear();
    // The core closes after TOO_LARGE; should it ever not, the stream still cannot be resynchronised.
    close_after_flush();
}

void Connection::send(std::string line) {
    if (state_ != State::open) return;  // closed by the core or gone: the message has no reader
    const std::size_t size = line.size() + 1;
    if (queued_bytes_ > 0 && queued_bytes_ + size > limits_.max_queue_bytes) {
        lose(fmt::format("a slow reader: {} bytes waiting, limit {}", queued_bytes_ + size, limits_.max_queue_bytes));
        return;
    }
    line.push_back('\n');
    queue_.push_back(std::move(line));
    queued_bytes_ += size;
    if (!writing_) write_more();
}

void Connection::write_more() {
    writing_ = true;
    in_flight_ = std::min(queue_.size(), max_lines_per_write);
    std::vector<asio::const_buffer> buffers;
    buffers.reserve(in_flight_);
    // Deque elements stay in place while lines are appended behind them, so these buffers remain valid.
    for (std::size_t i = 0; i < in_flight_; ++i)
        buffers.emplace_back(asio::buffer(queue_[i]));
    asio::async_write(socket_, buffers, [self = shared_from_this()](const std::error_code& error, std::size_t) {
        self->on_written(error);
    });
}

void Connection::on_written(const std::error_code& error) {
    writing_ = false;
    if (state_ == State::closed) return;
    if (error) {
        if (state_ == State::open) {
            lose(error.message());
        } else {
            close_now();
        }
        return;
    }
    for (std::size_t i = 0; i < in_flight_; ++i) {
        queued_bytes_ -= queue_.front().size();
        queue_.pop_front();
    }
    in_flight_ = 0;
    if (!queue_.empty()) {
        write_more();
        return;
    }
    if (state_ == State::closing) start_linger();
    events_.on_flushed();
}

void Connection::close_after_flush() {
    if (state_ != State::open) return;
    state_ = State::closing;
    if (!writing_) start_linger();  // not writing means nothing is queued
}

/// Shutting down our side sends FIN after the queued bytes. Closing at once instead would reset the connection
/// if the peer had sent more (after an oversize line it has), and a reset can destroy the reply before it is read.
void Connection::start_linger() {
    state_ = State::lingering;
    std::error_code ignored;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    linger_timer_.expires_after(limits_.linger);
    linger_timer_.async_wait([self = shared_from_this()](const std::error_code& error) {
        if (!error) self->close_now();
    });
    if (!reading_) read_more();
}

void Connection::close_now() {
    if (state_ == State::closed) return;
    state_ = State::closed;
    std::error_code ignored;
    socket_.close(ignored);
    linger_timer_.cancel();
    events_.on_released(id_);
}

void Connection::lose(std::string_view why) {
    close_now();
    events_.on_lost(id_, why);
}

}  // namespace gpuops::rescale::detail
