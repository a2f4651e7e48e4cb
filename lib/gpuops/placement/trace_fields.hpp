// Row splitting and field parsing for the trace importers (internal to the placement module).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuops::placement::trace_fields {

/// A malformed value in one row. `category` is the short reason a lenient import counts ("negative duration");
/// `message` is the full reason for the error line ("column 'duration': expected ..., got '-5'").
struct RowError {
    std::string_view category;
    std::string message;
};

/// Splits `line` at `delim` into trimmed fields; a field in double quotes loses them ("" inside stays as is).
/// `out` is cleared first and reused, so a streaming reader does not allocate per row.
void split_fields(std::string_view line, char delim, std::vector<std::string_view>& out);

[[nodiscard]] bool iequals(std::string_view a, std::string_view b) noexcept;

/// The column names of a header line, looked up case-insensitively.
class Header {
public:
    Header(std::string_view line, char delim);
    [[nodiscard]] std::optional<std::size_t> find(std::string_view name) const;
    [[nodiscard]] bool has(std::string_view name) const { return find(name).has_value(); }
    [[nodiscard]] std::size_t size() const noexcept { return names_.size(); }
    [[nodiscard]] const std::string& name(std::size_t i) const { return names_[i]; }

private:
    std::vector<std::string> names_;
};

/// Largest GPU count a field or a job may have; larger is taken for garbage.
inline constexpr std::int64_t max_gpus = 1'000'000;

/// A finite number; RowError "missing value" / "unparsable number".
[[nodiscard]] double number(std::string_view text, std::string_view column);
/// number() that must be ≥ 0; RowError "negative duration".
[[nodiscard]] double duration(std::string_view text, std::string_view column);
/// A whole count ≥ 0 ("8" or "8.0"); RowError "non-integer GPU count", "negative GPU count", "GPU count out of
/// range", "unparsable number". `what` names the count in messages ("GPU count", "instance count").
[[nodiscard]] int count(std::string_view text, std::string_view column, std::string_view what = "GPU count");
/// A wall-clock time "YYYY-MM-DD HH:MM:SS" or "YYYY-MM-DDTHH:MM:SS" (optional .fraction; read as UTC) or plain
/// seconds, as seconds; RowError "bad time".
[[nodiscard]] double time_point(std::string_view text, std::string_view column);
/// Only the wall-clock form; nullopt when `text` is not one.
[[nodiscard]] std::optional<double> parse_datetime(std::string_view text) noexcept;

}  // namespace gpuops::placement::trace_fields
