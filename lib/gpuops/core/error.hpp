// Typed errors that carry their exit category; every tool maps them to the documented exit codes.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace gpuops {

/// The exit-code table of gpuops(7). Values follow sysexits.h where one exists.
enum class ExitCode : int {
    ok = 0,
    negative = 1,      ///< ran fine, negative verdict
    usage = 2,         ///< bad command line
    data = 65,         ///< bad input data (EX_DATAERR)
    no_input = 66,     ///< input missing (EX_NOINPUT)
    unavailable = 69,  ///< dependency unavailable (EX_UNAVAILABLE)
    internal = 70,     ///< internal bug (EX_SOFTWARE)
    io = 74,           ///< I/O error (EX_IOERR)
    temporary = 75,    ///< timeout or temporary failure (EX_TEMPFAIL)
};

[[nodiscard]] constexpr int to_int(ExitCode c) noexcept { return static_cast<int>(c); }

/// Base of every error gpuops throws on purpose. The message is the text after "<tool>: error: ".
class Error : public std::runtime_error {
public:
    Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
    [[nodiscard]] ExitCode code() const noexcept { return code_; }

private:
    ExitCode code_;
};

class UsageError : public Error {
public:
    explicit UsageError(const std::string& message) : Error(ExitCode::usage, message) {}
};

/// Where a bad value was found: any of file, JSON pointer and line may be empty/zero.
struct DataLocation {
    std::string file;
    std::string pointer;
    int line = 0;
};

/// Bad input data. The rendered message reads `'<file>' line <n>: (<pointer>) <reason>`,
/// leaving out whatever part of the location is unknown.
class DataError : public Error {
public:
    explicit DataError(std::string reason, DataLocation where = {});
    [[nodiscard]] const std::string& reason() const noexcept { return reason_; }
    [[nodiscard]] const DataLocation& where() const noexcept { return where_; }
    /// The same error, attributed to `file` (used when a parser that saw only text rethrows).
    [[nodiscard]] DataError in_file(std::string file) const;
    /// The same error with `prefix` prepended to its JSON pointer (for nested documents).
    [[nodiscard]] DataError under_pointer(std::string_view prefix) const;

private:
    std::string reason_;
    DataLocation where_;
};

class InputMissingError : public Error {
public:
    explicit InputMissingError(const std::string& message) : Error(ExitCode::no_input, message) {}
};

class UnavailableError : public Error {
public:
    explicit UnavailableError(const std::string& message) : Error(ExitCode::unavailable, message) {}
};

class InternalError : public Error {
public:
    explicit InternalError(const std::string& message) : Error(ExitCode::internal, message) {}
};

class IoError : public Error {
public:
    explicit IoError(const std::string& message) : Error(ExitCode::io, message) {}
};

class TimeoutError : public Error {
public:
    explicit TimeoutError(const std::string& message) : Error(ExitCode::temporary, message) {}
};

/// Quote a subject the way every gpuops message does: 'subject'. (Not named `quoted`: argument-dependent
/// lookup would pick std::quoted for std::string arguments.)
[[nodiscard]] std::string quote(std::string_view subject);

}  // namespace gpuops
