// request_admin: connect, write one line, read lines until the reply, all under one deadline.
#include "gpuops/rescale/admin_client.hpp"

#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include <asio.hpp>
#include <fmt/format.h>

#include "gpuops/core/error.hpp"
#include "gpuops/core/units.hpp"
#include "gpuops/rescale/codec.hpp"

namespace gpuops::rescale {
namespace {

using asio::ip::tcp;

/// A STATUS reply lists every member; this bounds what is buffered without limiting any real job.
constexpr std::size_t max_reply_bytes = 16 * default_max_line_bytes;

/// One exchange on its own io_context. Each step's handler starts the next; the timer closes the socket, which
/// ends whatever step is pending.
class Exchange {
public:
    Exchange(HostPort coord, Message request, std::chrono::milliseconds timeout)
        : coord_(std::move(coord)), timeout_(timeout), request_(encode(Envelope{1, std::move(request)}) + "\n") {}

    AdminReply run() {
        std::error_code error;
        tcp::resolver resolver(io_);
        const auto endpoints = resolver.resolve(coord_.host, std::to_string(coord_.port), error);
        if (error) throw unreachable(error.message());
        timer_.expires_after(timeout_);
        timer_.async_wait([this](const std::error_code& e) {
            if (e) return;
            timed_out_ = true;
            std::error_code ignored;
            socket_.close(ignored);
        });
        asio::async_connect(socket_, endpoints, [this](const std::error_code& e, const tcp::endpoint&) {
            if (e) return fail(e, "connect");
            asio::async_write(socket_, asio::buffer(request_), [this](const std::error_code& w, std::size_t) {
                if (w) return fail(w, "send");
                read_line();
            });
        });
        io_.run();
        return outcome();
    }

private:
    void read_line() {
        asio::async_read_until(socket_, asio::dynamic_buffer(input_, max_reply_bytes), '\n',
                               [this](const std::error_code& e, std::size_t length) {
                                   if (e) return fail(e, "receive");
                                   const std::string line = input_.substr(0, length - 1);
                                   input_.erase(0, length);
                                   if (!take(line)) read_line();
                               });
    }

    /// Whether `line` is the answer. Anything else the coordinator pushes on this connection is skipped.
    bool take(const std::string& line) {
        Decoded decoded = decode(line, max_reply_bytes);
        if (const auto* bad = std::get_if<DecodeError>(&decoded)) {
            bad_reply_ = bad->message;
        } else if (const auto* reply = std::get_if<AdminReply>(&std::get<Envelope>(decoded).body)) {
            reply_ = *reply;
        } else if (const auto* error = std::get_if<ErrorReply>(&std::get<Envelope>(decoded).body)) {
            reply_ = AdminReply{false, error->code, error->msg, nullptr};
        } else {
            return false;
        }
        timer_.cancel();
        return true;
    }

    void fail(const std::error_code& error, const char* step) {
        if (!timed_out_) {
            failure_ = error;
            failed_step_ = step;
        }
        timer_.cancel();
    }

    [[nodiscard]] UnavailableError unreachable(const std::string& why) const {
        return UnavailableError(fmt::format("cannot reach the coordinator at {}: {}", quote(to_string(coord_)), why));
    }

    AdminReply outcome() const {
        if (reply_) return *reply_;
        if (bad_reply_) {
            throw DataError(
                fmt::format("the reply of the coordinator at {}: {}", quote(to_string(coord_)), *bad_reply_));
        }
        if (timed_out_) {
            throw TimeoutError(fmt::format("no reply from the coordinator at {} within {}", quote(to_string(coord_)),
                                           units::format_duration(timeout_)));
        }
        if (failed_step_ == std::string_view("connect")) throw unreachable(failure_.message());
        if (failure_ == asio::error::eof) {
            throw UnavailableError(
                fmt::format("the coordinator at {} closed the connection without a reply", quote(to_string(coord_))));
        }
        throw UnavailableError(
            fmt::format("{} failed at {}: {}", failed_step_, quote(to_string(coord_)), failure_.message()));
    }

    HostPort coord_;
    std::chrono::milliseconds timeout_;
    std::string request_;
    asio::io_context io_;
    tcp::socket socket_{io_};
    asio::steady_timer timer_{io_};
    std::string input_;
    std::optional<AdminReply> reply_;
    std::optional<std::string> bad_reply_;
    bool timed_out_ = false;
    std::error_code failure_;
    const char* failed_step_ = "";
};

}  // namespace

AdminReply request_admin(const HostPort& coord, const AdminCommand& command, std::chrono::milliseconds timeout) {
    return Exchange(coord, std::visit([](const auto& c) -> Message { return c; }, command), timeout).run();
}

AdminReply send_notice(const HostPort& coord, const Notice& notice, std::chrono::milliseconds timeout) {
    return Exchange(coord, notice, timeout).run();
}

}  // namespace gpuops::rescale
