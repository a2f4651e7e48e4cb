// One peer of the coordinator's server (private to server.cpp): a bounded line reader, a bounded output queue,
// and a close that lets the last replies reach the peer.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include <asio.hpp>

#include "gpuops/rescale/line_buffer.hpp"
#include "gpuops/rescale/protocol.hpp"

namespace gpuops::rescale::detail {

/// What a connection tells the server. Every call comes from the event loop's thread.
class ConnectionEvents {
public:
    /// One line, without its newline; a line longer than the limit is passed whole so the core can refuse it.
    virtual void on_line(ConnId id, std::string_view line) = 0;
    /// The peer went away (EOF, error) or was dropped as a slow reader, while the core still counted on it.
    virtual void on_lost(ConnId id, std::string_view why) = 0;
    /// The socket is closed; the server forgets the connection.
    virtual void on_released(ConnId id) = 0;
    /// The output queue became empty.
    virtual void on_flushed() = 0;

protected:
    ConnectionEvents() = default;
    ConnectionEvents(const ConnectionEvents&) = default;
    ConnectionEvents& operator=(const ConnectionEvents&) = default;
    ~ConnectionEvents() = default;
};

struct ConnectionLimits {
    std::size_t max_line_bytes = 0;
    std::size_t max_queue_bytes = 0;
    /// After the last reply of a closed connection: how long to wait for the peer's FIN before cutting it off.
    std::chrono::milliseconds linger{2000};
};

class Connection : public std::enable_shared_from_this<Connection> {
public:
    Connection(asio::ip::tcp::socket socket, ConnId id, ConnectionLimits limits, ConnectionEvents& events);

    void start();
    /// Queues one line (the newline is added). A queue over its limit drops the connection instead.
    void send(std::string line);
    /// The core closed this connection: write what is queued, then close (without reporting it back).
    void close_after_flush();
    /// Closes the socket now, without reporting to the core.
    void close_now();

    [[nodiscard]] bool flushed() const noexcept { return queue_.empty(); }
    /// The seq of the next message the coordinator sends on this connection.
    [[nodiscard]] std::uint64_t next_seq() noexcept { return ++sent_seq_; }

private:
    /// open: lines flow both ways. closing: the core is done with it, the queue drains. lingering: the queue is
    /// written and our side shut down; input is discarded until the peer closes or the linger time passes.
    enum class State { open, closing, lingering, closed };

    void read_more();
    void on_read(const std::error_code& error, std::size_t bytes);
    void deliver_lines();
    void refuse_oversize();
    void write_more();
    void on_written(const std::error_code& error);
    void start_linger();
    void lose(std::string_view why);

    asio::ip::tcp::socket socket_;
    asio::steady_timer linger_timer_;
    ConnId id_;
    ConnectionLimits limits_;
    ConnectionEvents& events_;
    State state_ = State::open;

    /// Where reads land; not zero-filled: a thousand connections must not touch 64 KiB each up front.
    std::unique_ptr<char[]> chunk_ = std::make_unique_for_overwrite<char[]>(read_chunk_bytes);
    LineBuffer input_;  ///< received bytes not yet delivered: at most one partial line
    bool reading_ = false;

    std::deque<std::string> queue_;  ///< lines with their newline; the first in_flight_ are being written
    std::size_t queued_bytes_ = 0;
    std::size_t in_flight_ = 0;
    bool writing_ = false;
    std::uint64_t sent_seq_ = 0;
};

}  // namespace gpuops::rescale::detail
