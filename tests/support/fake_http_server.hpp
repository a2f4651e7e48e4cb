// A fake HTTP/1.1 server on 127.0.0.1 for tests of HTTP clients: canned responses per request, every request kept.
#pragma once

#include <cctype>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <asio.hpp>

namespace gpuops::test {

struct RecordedRequest {
    std::string method;
    std::string target;                          ///< path and query, as sent
    std::map<std::string, std::string> headers;  ///< names in lower case
    std::string body;

    /// The header's value; "" when absent.
    [[nodiscard]] std::string header(const std::string& lower_case_name) const {
        const auto it = headers.find(lower_case_name);
        return it == headers.end() ? std::string() : it->second;
    }
    [[nodiscard]] bool has_header(const std::string& lower_case_name) const {
        return headers.contains(lower_case_name);
    }
};

struct CannedResponse {
    int status = 200;
    std::string body;
    std::chrono::milliseconds delay{0};  ///< wait this long before answering (a slow server)
    /// Answer 401 instead unless the request carries these headers (lower-case names), like IMDSv2-only EC2.
    std::map<std::string, std::string> required_headers;
};

/// Serves on an ephemeral port from its own thread until destroyed. Requests without a canned response get 404
/// with an empty body. One request per connection (it answers `Connection: close`).
class FakeHttpServer {
public:
    FakeHttpServer()
        : acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}), port_(acceptor_.local_endpoint().port()) {
        asio::co_spawn(io_, accept_loop(), asio::detached);
        thread_ = std::thread([this] { io_.run(); });
    }
    ~FakeHttpServer() {
        io_.stop();
        thread_.join();
    }
    FakeHttpServer(const FakeHttpServer&) = delete;
    FakeHttpServer& operator=(const FakeHttpServer&) = delete;

    [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

    /// What `method target` answers from now on.
    void set(const std::string& method, const std::string& target, CannedResponse response) {
        const std::lock_guard lock(mutex_);
        routes_[{method, target}] = std::move(response);
    }

    [[nodiscard]] std::vector<RecordedRequest> requests() const {
        const std::lock_guard lock(mutex_);
        return requests_;
    }

    [[nodiscard]] std::vector<RecordedRequest> requests(std::string_view method, std::string_view target) const {
        std::vector<RecordedRequest> out;
        for (auto& r : requests())
            if (r.method == method && r.target == target) out.push_back(std::move(r));
        return out;
    }

private:
    asio::awaitable<void> accept_loop() {
        for (;;) {
            auto socket = co_await acceptor_.async_accept(asio::use_awaitable);
            asio::co_spawn(io_, serve(std::move(socket)), asio::detached);
        }
    }

    asio::awaitable<void> serve(asio::ip::tcp::socket socket) {
        try {
            std::string buffer;
            const std::size_t head_size =
                co_await asio::async_read_until(socket, asio::dynamic_buffer(buffer), "\r\n\r\n", asio::use_awaitable);
            RecordedRequest request = parse_head(std::string_view(buffer).substr(0, head_size));
            const std::size_t length = std::stoul(
                request.headers.contains("content-length") ? request.headers.at("content-length") : std::string("0"));
            if (buffer.size() < head_size + length) {
                co_await asio::async_read(socket, asio::dynamic_buffer(buffer),
                                          asio::transfer_exactly(head_size + length - buffer.size()),
                                          asio::use_awaitable);
            }
            request.body = buffer.substr(head_size, length);
            const CannedResponse response = record(request);
            if (response.delay.count() > 0) {
                asio::steady_timer timer(socket.get_executor(), response.delay);
                co_await timer.async_wait(asio::use_awaitable);
            }
            const std::string text = "HTTP/1.1 " + std::to_string(response.status) +
                                     " Canned\r\nContent-Length: " + std::to_string(response.body.size()) +
                                     "\r\nConnection: close\r\n\r\n" + response.body;
            co_await asio::async_write(socket, asio::buffer(text), asio::use_awaitable);
        } catch (const std::exception&) {
            // The client gave up (a timeout test) or sent garbage: nothing to answer.
        }
    }

    static RecordedRequest parse_head(std::string_view head) {
        RecordedRequest request;
        std::size_t line_end = head.find("\r\n");
        const std::string_view first = head.substr(0, line_end);
        const std::size_t space1 = first.find(' ');
        const std::size_t space2 = first.find(' ', space1 + 1);
        request.method = first.substr(0, space1);
        request.target = first.substr(space1 + 1, space2 - space1 - 1);
        while (line_end + 2 < head.size()) {
            const std::size_t start = line_end + 2;
            line_end = head.find("\r\n", start);
            const std::string_view line = head.substr(start, line_end - start);
            const std::size_t colon = line.find(':');
            if (colon == std::string_view::npos) continue;
            std::string name(line.substr(0, colon));
            for (auto& c : name)
                c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            std::string_view value = line.substr(colon + 1);
            while (!value.empty() && value.front() == ' ')
                value.remove_prefix(1);
            request.headers[name] = value;
        }
        return request;
    }

    /// Keeps the request and picks its answer.
    CannedResponse record(const RecordedRequest& request) {
        const std::lock_guard lock(mutex_);
        requests_.push_back(request);
        const auto it = routes_.find({request.method, request.target});
        if (it == routes_.end()) return CannedResponse{404, {}, {}, {}};
        for (const auto& [name, value] : it->second.required_headers)
            if (request.header(name) != value) return CannedResponse{401, {}, {}, {}};
        return it->second;
    }

    asio::io_context io_;
    asio::ip::tcp::acceptor acceptor_;
    unsigned short port_;  ///< kept: the acceptor belongs to the server thread once it runs
    mutable std::mutex mutex_;
    std::map<std::pair<std::string, std::string>, CannedResponse> routes_;
    std::vector<RecordedRequest> requests_;
    std::thread thread_;
};

/// A URL on 127.0.0.1 where nothing listens: the port was free a moment ago, so connecting is refused.
inline std::string refused_url() {
    asio::io_context io;
    asio::ip::tcp::acceptor probe(io, {asio::ip::make_address("127.0.0.1"), 0});
    const auto port = probe.local_endpoint().port();
    probe.close();
    return "http://127.0.0.1:" + std::to_string(port);
}

}  // namespace gpuops::test
