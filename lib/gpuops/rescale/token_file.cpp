// Reading token files: trimmed, one line, not open to other users.
#include "gpuops/rescale/token_file.hpp"

#include <string>

#include <fmt/format.h>
#include <sys/stat.h>

#include "gpuops/core/error.hpp"
#include "gpuops/core/json_io.hpp"
#include "gpuops/core/text.hpp"

namespace gpuops::rescale {

std::string read_token_file(std::string_view path) {
    const std::string text = json_io::read_text(path);  // missing file: 66, unreadable: 74
    struct stat info {};
    if (::stat(std::string(path).c_str(), &info) == 0 && (info.st_mode & S_IRWXO) != 0) {
        throw DataError(
            fmt::format("other users can access the token file (mode {:o}); chmod 600 it", info.st_mode & 0777U),
            {std::string(path), "", 0});
    }
    const std::string_view token = text::trim(text);
    if (token.empty()) throw DataError("the token file is empty", {std::string(path), "", 0});
    if (token.find_first_of("\r\n") != std::string_view::npos) {
        throw DataError("a token file holds one line", {std::string(path), "", 0});
    }
    return std::string(token);
}

}  // namespace gpuops::rescale
