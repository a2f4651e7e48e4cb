// Line framing for the protocol's byte streams: what a read returned goes in, complete lines come out.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gpuops::rescale::detail {

/// The most one read takes from a socket.
inline constexpr std::size_t read_chunk_bytes = std::size_t{64} * 1024;

/// Holds at most the lines not yet taken plus one partial line. Each byte is scanned for the newline once, however
/// many reads a long line (a 1024-member PREPARE) arrives in.
class LineBuffer {
public:
    void append(std::string_view bytes) { buffer_.append(bytes); }

    /// The next complete line, without its newline; valid until the next append(), compact() or clear().
    [[nodiscard]] std::optional<std::string_view> next() {
        const std::size_t end = buffer_.find('\n', std::max(taken_, scanned_));
        if (end == std::string::npos) {
            scanned_ = buffer_.size();
            return std::nullopt;
        }
        const std::string_view line = std::string_view(buffer_).substr(taken_, end - taken_);
        taken_ = end + 1;
        return line;
    }
    /// Drops the lines taken; what remains is a partial line.
    void compact() {
        buffer_.erase(0, taken_);
        scanned_ -= std::min(scanned_, taken_);
        taken_ = 0;
    }
    /// The bytes not taken yet.
    [[nodiscard]] std::string_view rest() const { return std::string_view(buffer_).substr(taken_); }
    void clear() {
        buffer_.clear();
        buffer_.shrink_to_fit();
        taken_ = 0;
        scanned_ = 0;
    }

private:
    std::string buffer_;
    std::size_t taken_ = 0;    ///< bytes before this offset were handed out as lines
    std::size_t scanned_ = 0;  ///< no newline before this offset (past taken_)
};

}  // namespace gpuops::rescale::detail
