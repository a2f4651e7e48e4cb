// Line-delimited JSON for the rescale protocol: encode a message, decode a line into a message or a typed error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "gpuops/core/json_io.hpp"
#include "gpuops/rescale/protocol.hpp"

namespace gpuops::rescale {

/// The line limit when the server sets none (§6.1): large enough for a peer table of 1024 UCX addresses.
inline constexpr std::size_t default_max_line_bytes = std::size_t{1} << 20;

/// A message with its per-sender sequence number (replies name it in `re`).
struct Envelope {
    std::uint64_t seq = 0;
    Message body;
    bool operator==(const Envelope&) const = default;
};

/// Why a line was refused: the ERROR code to answer with, a message that names the bad field, and the request's
/// seq when it could be read (for `re`).
struct DecodeError {
    ErrorCode code = ErrorCode::protocol;
    std::string message;
    std::optional<std::uint64_t> seq;
    bool operator==(const DecodeError&) const = default;
};

using Decoded = std::variant<Envelope, DecodeError>;

[[nodiscard]] json_io::Json to_json(const Envelope& envelope);
/// One line of compact JSON, without the newline.
[[nodiscard]] std::string encode(const Envelope& envelope);

/// A message encoded once for many connections: their lines differ only in `seq`. A PREPARE with a full peer
/// table goes to every joiner; encoding it per joiner would cost the coordinator n² at bootstrap.
class EncodedMessage {
public:
    explicit EncodedMessage(const Message& message);
    /// The line `encode(Envelope{seq, message})` gives, without the newline.
    [[nodiscard]] std::string line(std::uint64_t seq) const;

private:
    std::string head_;  ///< through `"seq":`
    std::string tail_;  ///< after the seq's digits
};

/// Never throws: bad input of any kind becomes a DecodeError (TOO_LARGE, UNKNOWN_TYPE or PROTOCOL).
/// Unknown fields are ignored, so newer peers can add some.
[[nodiscard]] Decoded decode(std::string_view line, std::size_t max_line_bytes = default_max_line_bytes) noexcept;

}  // namespace gpuops::rescale
