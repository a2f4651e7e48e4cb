// Job and admin tokens read from files, so that they never appear in a process listing or a shell history.
#pragma once

#include <string>
#include <string_view>

namespace gpuops::rescale {

/// The token in `path`, without surrounding whitespace. Refused (DataError, 65) when the file is empty, holds
/// more than one line, or can be read or written by users outside the owner's group: a token anyone on the host
/// can read authenticates nobody. Missing file: InputMissingError (66).
[[nodiscard]] std::string read_token_file(std::string_view path);

}  // namespace gpuops::rescale
