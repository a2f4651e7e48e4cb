// The JSON front door: read documents and JSON Lines, check the schema header, write with stable key order.
#pragma once

#include <cstdint>
#include <fstream>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuops/core/error.hpp"

namespace gpuops::json_io {

/// Documents keep the order in which keys were written, so output is stable and diffable.
using Json = nlohmann::ordered_json;

/// Reads one JSON document from `path`; "-" or "" means stdin.
/// Missing file: InputMissingError (66). Malformed JSON: DataError with the line (65).
[[nodiscard]] Json read_document(std::string_view path);
/// Parses `text` (from `source`, used in messages) as one JSON document.
[[nodiscard]] Json parse_document(std::string_view text, std::string_view source);
/// Reads JSON Lines: one value per line; empty lines are skipped, a bad line is a DataError naming it.
[[nodiscard]] std::vector<Json> read_lines(std::string_view path);
[[nodiscard]] std::vector<Json> parse_lines(std::istream& in, std::string_view source);

/// Reads a whole file (or stdin for "-"/"") as text, with the same error mapping as read_document.
[[nodiscard]] std::string read_text(std::string_view path);
/// The file at `path` opened for reading (binary), to stream it: InputMissingError when it does not exist,
/// IoError when it cannot be opened or is a directory. Not for "-" (read std::cin).
[[nodiscard]] std::ifstream open_file(std::string_view path);
/// The name to show for `path` in messages: "<stdin>" for "-" or "".
[[nodiscard]] std::string display_name(std::string_view path);

/// The header every gpuops document starts with: schema, schema_version, generator {tool, version}.
[[nodiscard]] Json make_header(std::string_view schema, int schema_version, std::string_view tool);
/// Rejects a document of another schema, or of a major version newer than `max_version` (DataError, 65).
/// Unknown fields are ignored. Returns the document's schema_version.
int check_header(const Json& doc, std::string_view schema, int max_version);

/// `doc` as text followed by a newline: pretty (2-space indent) or compact; invalid UTF-8 is replaced.
[[nodiscard]] std::string dump(const Json& doc, bool pretty = true);
/// Writes dump(doc, pretty).
void write(std::ostream& out, const Json& doc, bool pretty = true);

/// A read-only view of a JSON value that knows its JSON pointer, so every accessor can report
/// exactly which value was wrong: `(/devices/3/kind) expected a string, got number`.
class View {
public:
    explicit View(const Json& value, std::string pointer = {}) : value_(&value), pointer_(std::move(pointer)) {}

    [[nodiscard]] const Json& json() const noexcept { return *value_; }
    [[nodiscard]] const std::string& pointer() const noexcept { return pointer_; }

    /// Required member; DataError "missing required field" when absent or when this is not an object.
    [[nodiscard]] View at(std::string_view key) const;
    /// Optional member: absent or null gives nullopt.
    [[nodiscard]] std::optional<View> find(std::string_view key) const;
    [[nodiscard]] View at(std::size_t index) const;
    [[nodiscard]] std::vector<View> items() const;  ///< the elements of an array
    [[nodiscard]] std::size_t size() const;         ///< array length

    [[nodiscard]] bool is_null() const noexcept { return value_->is_null(); }
    [[nodiscard]] std::string as_string() const;
    [[nodiscard]] double as_number() const;
    [[nodiscard]] std::int64_t as_int() const;
    [[nodiscard]] std::int64_t as_int(std::int64_t min, std::int64_t max) const;  ///< with a range check
    [[nodiscard]] bool as_bool() const;

    /// Convenience: optional member as a given type.
    [[nodiscard]] std::optional<std::string> string_or_null(std::string_view key) const;
    [[nodiscard]] std::optional<double> number_or_null(std::string_view key) const;
    [[nodiscard]] std::optional<std::int64_t> int_or_null(std::string_view key) const;

    /// A DataError located at this value.
    [[nodiscard]] DataError error(std::string reason) const;

private:
    const Json* value_;
    std::string pointer_;
};

/// The JSON type name used in messages ("string", "number", "object", ...).
[[nodiscard]] std::string type_name(const Json& value);

}  // namespace gpuops::json_io
