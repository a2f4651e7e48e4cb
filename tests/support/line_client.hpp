// A blocking line-protocol client over a real TCP socket on 127.0.0.1, with timeouts, for tests of servers.
#pragma once

#include <catch2/catch.hpp>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace gpuops::test {

class LineClient {
public:
    /// Connects to 127.0.0.1:port. `receive_buffer` > 0 shrinks the socket's receive buffer first, so that a
    /// client that stops reading fills up quickly.
    explicit LineClient(std::uint16_t port, int receive_buffer = 0) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
        REQUIRE(fd_ >= 0);
        if (receive_buffer > 0) {
            REQUIRE(::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer) == 0);
        }
        // A send that cannot progress for this long fails instead of hanging the test.
        const timeval send_timeout{10, 0};
        REQUIRE(::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout) == 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    }
    LineClient(const LineClient&) = delete;
    LineClient& operator=(const LineClient&) = delete;
    ~LineClient() { ::close(fd_); }

    /// Sends `data` as is; false when the peer has closed or reset the connection.
    bool try_send(std::string_view data) {
        while (!data.empty()) {
            const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            data.remove_prefix(static_cast<std::size_t>(n));
        }
        return true;
    }
    void send_line(std::string_view line) { REQUIRE(try_send(std::string(line) + "\n")); }

    /// The next line without its newline; nullopt at EOF, on a reset, or when none came within `timeout`.
    std::optional<std::string> read_line(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (true) {
            if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
                std::string line = buffer_.substr(0, nl);
                buffer_.erase(0, nl + 1);
                return line;
            }
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0 || !wait_readable(left)) return std::nullopt;
            char chunk[4096];
            const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return std::nullopt;
            buffer_.append(chunk, static_cast<std::size_t>(n));
        }
    }

    /// Whether the peer closed the connection (EOF or reset) within `timeout`; lines still unread are dropped.
    bool closed_by_peer(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (true) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0 || !wait_readable(left)) return false;
            char chunk[4096];
            const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return true;
        }
    }

private:
    bool wait_readable(std::chrono::milliseconds timeout) const {
        pollfd p{fd_, POLLIN, 0};
        return ::poll(&p, 1, static_cast<int>(timeout.count())) > 0;
    }

    int fd_;
    std::string buffer_;
};

}  // namespace gpuops::test
