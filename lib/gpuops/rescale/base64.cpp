// Base64 by hand: a dozen lines, where a library (OpenSSL's EVP_EncodeBlock) would add a dependency for it.
#include "gpuops/rescale/base64.hpp"

#include <algorithm>
#include <cstdint>

namespace gpuops::rescale {

namespace {
constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string base64_encode(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (std::size_t i = 0; i < bytes.size(); i += 3) {
        const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
        std::uint32_t chunk = 0;
        for (std::size_t k = 0; k < 3; ++k)
            chunk = (chunk << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0U);
        for (std::size_t k = 0; k < 4; ++k)
            out += k <= n ? alphabet[(chunk >> (18 - 6 * k)) & 0x3F] : '=';
    }
    return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
    if (text.size() % 4 != 0) return std::nullopt;
    std::string out;
    out.reserve(text.size() / 4 * 3);
    for (std::size_t i = 0; i < text.size(); i += 4) {
        std::uint32_t chunk = 0;
        int padding = 0;
        for (std::size_t k = 0; k < 4; ++k) {
            const char c = text[i + k];
            std::uint32_t value = 0;
            if (c == '=' && i + 4 == text.size() && k >= 2) {
                ++padding;
            } else if (padding > 0) {
                return std::nullopt;  // data after padding
            } else {
                const auto pos = alphabet.find(c);
                if (pos == std::string_view::npos) return std::nullopt;
                value = static_cast<std::uint32_t>(pos);
            }
            chunk = (chunk << 6) | value;
        }
        for (int k = 0; k < 3 - padding; ++k)
            out += static_cast<char>((chunk >> (16 - 8 * k)) & 0xFF);
    }
    return out;
}

}  // namespace gpuops::rescale
