// Reading and writing gpuops JSON documents, with errors that name the file, line and JSON pointer.
#include "gpuops/core/json_io.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "gpuops/core/version.hpp"

namespace gpuops::json_io {
namespace {

bool is_stdin(std::string_view path) { return path.empty() || path == "-"; }

int line_of_offset(std::string_view text, std::size_t offset) {
    offset = std::min(offset, text.size());
    return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

/// nlohmann's messages start "[json.exception.parse_error.101] parse error at line 1, column 2: ";
/// keep only what went wrong, since the location is rendered by DataError.
std::string parse_reason(const nlohmann::json::parse_error& e) {
    std::string msg = e.what();
    if (auto pos = msg.find(": "); pos != std::string::npos && msg.rfind("[json.exception", 0) == 0) {
        msg = msg.substr(pos + 2);
    }
    return "invalid JSON: " + msg;
}

/// nlohmann's message without its "[json.exception.out_of_range.406] " prefix.
std::string exception_reason(const nlohmann::json::exception& e) {
    std::string msg = e.what();
    if (msg.rfind("[json.exception", 0) == 0) {
        if (const auto end = msg.find("] "); end != std::string::npos) msg = msg.substr(end + 2);
    }
    return msg;
}

std::string escape_token(std::string_view key) {
    std::string out;
    for (char c : key) {
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
    return out;
}

}  // namespace

std::string display_name(std::string_view path) { return is_stdin(path) ? "<stdin>" : std::string(path); }

std::ifstream open_file(std::string_view path) {
    std::error_code ec;
    if (std::filesystem::is_directory(std::filesystem::path(path), ec)) {
        throw IoError(fmt::format("cannot read {}: Is a directory", quote(path)));
    }
    std::ifstream in{std::string(path), std::ios::binary};
    if (!in) {
        const int err = errno;
        const std::string message = fmt::format("cannot open {}: {}", quote(path), std::strerror(err));
        if (err == ENOENT || err == ENOTDIR) throw InputMissingError(message);
        throw IoError(message);
    }
    return in;
}

std::string read_text(std::string_view path) {
    if (is_stdin(path)) {
        std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
        if (std::cin.bad()) throw IoError("cannot read standard input");
        return text;
    }
    std::ifstream in = open_file(path);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    if (in.bad()) throw IoError(fmt::format("cannot read {}", quote(path)));
    return buffer.str();
}

Json parse_document(std::string_view text, std::string_view source) {
    try {
        return Json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error& e) {
        // byte is 1-based and points just past the offending character.
        const std::size_t offset = e.byte > 0 ? e.byte - 1 : 0;
        throw DataError(parse_reason(e), {std::string(source), {}, line_of_offset(text, offset)});
    } catch (const nlohmann::json::exception& e) {
        // e.g. out_of_range.406: a number such as 1e400 that no double holds.
        throw DataError(std::string("invalid JSON: ") + exception_reason(e), {std::string(source), {}, 0});
    }
}

Json read_document(std::string_view path) { return parse_document(read_text(path), display_name(path)); }

std::vector<Json> parse_lines(std::istream& in, std::string_view source) {
    std::vector<Json> records;
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
        ++number;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        try {
            records.push_back(Json::parse(line));
        } catch (const nlohmann::json::parse_error& e) {
            throw DataError(parse_reason(e), {std::string(source), {}, number});
        } catch (const nlohmann::json::exception& e) {
            throw DataError(std::string("invalid JSON: ") + exception_reason(e), {std::string(source), {}, number});
        }
    }
    if (in.bad()) throw IoError(fmt::format("cannot read {}", quote(source)));
    return records;
}

std::vector<Json> read_lines(std::string_view path) {
    std::istringstream in(read_text(path));
    return parse_lines(in, display_name(path));
}

Json make_header(std::string_view schema, int schema_version, std::string_view tool) {
    Json doc;
    doc["schema"] = schema;
    doc["schema_version"] = schema_version;
    doc["generator"] = {{"tool", tool}, {"version", std::string(version())}};
    return doc;
}

int check_header(const Json& doc, std::string_view schema, int max_version) {
    const View root(doc);
    if (!doc.is_object())
        throw root.error(fmt::format("expected a {} document (a JSON object), got {}", schema, type_name(doc)));
    const auto found = root.find("schema");
    if (!found) throw root.error(fmt::format("missing 'schema' field; expected a {} document", quote(schema)));
    const std::string actual = found->as_string();
    if (actual != schema) {
        throw found->error(fmt::format("expected a {} document, got {}", quote(schema), quote(actual)));
    }
    const View version = root.at("schema_version");
    const auto major = static_cast<int>(version.as_int(1, std::numeric_limits<int>::max()));
    if (major > max_version) {
        throw version.error(fmt::format("unsupported {} schema_version {} (this build reads up to {})", quote(schema),
                                        major, max_version));
    }
    return major;
}

std::string dump(const Json& doc, bool pretty) {
    // Invalid UTF-8 that came in from outside (an XML attribute, a host name) is replaced, not fatal.
    return doc.dump(pretty ? 2 : -1, ' ', false, Json::error_handler_t::replace) + '\n';
}

void write(std::ostream& out, const Json& doc, bool pretty) { out << dump(doc, pretty); }

std::string type_name(const Json& value) {
    switch (value.type()) {
        case Json::value_t::null: return "null";
        case Json::value_t::object: return "object";
        case Json::value_t::array: return "array";
        case Json::value_t::string: return "string";
        case Json::value_t::boolean: return "boolean";
        case Json::value_t::number_integer:
        case Json::value_t::number_unsigned:
        case Json::value_t::number_float: return "number";
        default: return "value";
    }
}

DataError View::error(std::string reason) const {
    return DataError(std::move(reason), {{}, pointer_.empty() ? "/" : pointer_, 0});
}

View View::at(std::string_view key) const {
    if (!value_->is_object()) throw error(fmt::format("expected an object, got {}", type_name(*value_)));
    auto it = value_->find(key);
    if (it == value_->end()) {
        throw DataError("missing required field", {{}, pointer_ + "/" + escape_token(key), 0});
    }
    return View(*it, pointer_ + "/" + escape_token(key));
}

std::optional<View> View::find(std::string_view key) const {
    if (!value_->is_object()) throw error(fmt::format("expected an object, got {}", type_name(*value_)));
    auto it = value_->find(key);
    if (it == value_->end() || it->is_null()) return std::nullopt;
    return View(*it, pointer_ + "/" + escape_token(key));
}

View View::at(std::size_t index) const {
    if (!value_->is_array()) throw error(fmt::format("expected an array, got {}", type_name(*value_)));
    if (index >= value_->size())
        throw error(fmt::format("index {} out of range (array has {})", index, value_->size()));
    return View((*value_)[index], pointer_ + "/" + std::to_string(index));
}

std::vector<View> View::items() const {
    if (!value_->is_array()) throw error(fmt::format("expected an array, got {}", type_name(*value_)));
    std::vector<View> out;
    out.reserve(value_->size());
    for (std::size_t i = 0; i < value_->size(); ++i)
        out.emplace_back((*value_)[i], pointer_ + "/" + std::to_string(i));
    return out;
}

std::size_t View::size() const {
    if (!value_->is_array()) throw error(fmt::format("expected an array, got {}", type_name(*value_)));
    return value_->size();
}

std::string View::as_string() const {
    if (!value_->is_string()) throw error(fmt::format("expected a string, got {}", type_name(*value_)));
    return value_->get<std::string>();
}

double View::as_number() const {
    if (!value_->is_number()) throw error(fmt::format("expected a number, got {}", type_name(*value_)));
    const double v = value_->get<double>();
    if (!std::isfinite(v)) throw error("expected a finite number");
    return v;
}

std::int64_t View::as_int() const {
    if (value_->is_number_integer()) {
        if (value_->is_number_unsigned() && value_->get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max()) {
            throw error("integer out of range");
        }
        return value_->get<std::int64_t>();
    }
    if (value_->is_number_float()) {
        const double v = value_->get<double>();
        if (std::isfinite(v) && v == std::floor(v) && std::abs(v) < 9.0e15) return static_cast<std::int64_t>(v);
        throw error(fmt::format("expected an integer, got {}", value_->dump()));
    }
    throw error(fmt::format("expected an integer, got {}", type_name(*value_)));
}

std::int64_t View::as_int(std::int64_t min, std::int64_t max) const {
    const std::int64_t v = as_int();
    if (v < min || v > max) {
        if (max == std::numeric_limits<std::int64_t>::max() || max == std::numeric_limits<int>::max()) {
            throw error(fmt::format("expected an integer >= {}, got {}", min, v));
        }
        throw error(fmt::format("expected an integer in [{}, {}], got {}", min, max, v));
    }
    return v;
}

bool View::as_bool() const {
    if (!value_->is_boolean()) throw error(fmt::format("expected true or false, got {}", type_name(*value_)));
    return value_->get<bool>();
}

std::optional<std::string> View::string_or_null(std::string_view key) const {
    auto v = find(key);
    if (!v) return std::nullopt;
    return v->as_string();
}

std::optional<double> View::number_or_null(std::string_view key) const {
    auto v = find(key);
    if (!v) return std::nullopt;
    return v->as_number();
}

std::optional<std::int64_t> View::int_or_null(std::string_view key) const {
    auto v = find(key);
    if (!v) return std::nullopt;
    return v->as_int();
}

}  // namespace gpuops::json_io
