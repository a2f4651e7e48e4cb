// Base64 (RFC 4648, with padding) for the opaque byte strings the rescale protocol carries (endpoint addresses,
// KV values).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpuops::rescale {

[[nodiscard]] std::string base64_encode(std::string_view bytes);
/// nullopt when `text` is not base64.
[[nodiscard]] std::optional<std::string> base64_decode(std::string_view text);

}  // namespace gpuops::rescale
