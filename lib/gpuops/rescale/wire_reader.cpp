// WireValue: field access over a simdjson DOM with json_io::View's messages.
#include "gpuops/rescale/wire_reader.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

namespace gpuops::rescale::detail {

namespace {
/// RFC 6901: "~" is "~0" and "/" is "~1" inside a reference token.
void append_token(std::string& out, std::string_view token) {
    for (const char c : token) {
        if (c == '~') {
            out += "~0";
        } else if (c == '/') {
            out += "~1";
        } else {
            out += c;
        }
    }
}
}  // namespace

std::string_view type_name(const simdjson::dom::element& value) {
    switch (value.type()) {
        case simdjson::dom::element_type::NULL_VALUE: return "null";
        case simdjson::dom::element_type::OBJECT: return "object";
        case simdjson::dom::element_type::ARRAY: return "array";
        case simdjson::dom::element_type::STRING: return "string";
        case simdjson::dom::element_type::BOOL: return "boolean";
        case simdjson::dom::element_type::INT64:
        case simdjson::dom::element_type::UINT64:
        case simdjson::dom::element_type::DOUBLE: return "number";
    }
    return "value";
}

std::string WireValue::pointer() const {
    std::vector<const WireValue*> chain;
    for (const WireValue* v = this; v->parent_ != nullptr; v = v->parent_)
        chain.push_back(v);
    std::reverse(chain.begin(), chain.end());
    std::string out;
    for (const WireValue* v : chain) {
        out += '/';
        if (v->element_) {
            out += std::to_string(v->index_);
        } else {
            append_token(out, v->key_);
        }
    }
    return out;
}

DataError WireValue::error(std::string reason) const {
    const std::string where = pointer();
    return DataError(std::move(reason), {{}, where.empty() ? "/" : where, 0});
}

simdjson::dom::object WireValue::as_object() const {
    simdjson::dom::object object;
    if (value_.get_object().get(object) != simdjson::SUCCESS) {
        throw error(fmt::format("expected an object, got {}", type_name(value_)));
    }
    return object;
}

simdjson::dom::array WireValue::as_array() const {
    simdjson::dom::array array;
    if (value_.get_array().get(array) != simdjson::SUCCESS) {
        throw error(fmt::format("expected an array, got {}", type_name(value_)));
    }
    return array;
}

WireValue WireValue::at(std::string_view key) const {
    simdjson::dom::element member;
    if (as_object().at_key(key).get(member) != simdjson::SUCCESS) {
        std::string where = pointer() + '/';
        append_token(where, key);
        throw DataError("missing required field", {{}, where, 0});
    }
    return {member, this, key, 0, false};
}

std::optional<WireValue> WireValue::find(std::string_view key) const {
    simdjson::dom::element member;
    if (as_object().at_key(key).get(member) != simdjson::SUCCESS || member.is_null()) return std::nullopt;
    return WireValue(member, this, key, 0, false);
}

std::string_view WireValue::as_string_view() const {
    std::string_view text;
    if (value_.get_string().get(text) != simdjson::SUCCESS) {
        throw error(fmt::format("expected a string, got {}", type_name(value_)));
    }
    return text;
}

std::int64_t WireValue::as_int(std::int64_t min, std::int64_t max) const {
    std::int64_t v = 0;
    switch (value_.type()) {
        case simdjson::dom::element_type::INT64: v = value_.get_int64().value_unsafe(); break;
        case simdjson::dom::element_type::UINT64: throw error("integer out of range");  // above INT64_MAX
        case simdjson::dom::element_type::DOUBLE: {
            const double d = value_.get_double().value_unsafe();
            if (!std::isfinite(d) || d != std::floor(d) || std::abs(d) >= 9.0e15) {
                throw error(fmt::format("expected an integer, got {}", simdjson::to_string(value_)));
            }
            v = static_cast<std::int64_t>(d);
            break;
        }
        default: throw error(fmt::format("expected an integer, got {}", type_name(value_)));
    }
    if (v < min || v > max) {
        if (max == std::numeric_limits<std::int64_t>::max()) {
            throw error(fmt::format("expected an integer >= {}, got {}", min, v));
        }
        throw error(fmt::format("expected an integer in [{}, {}], got {}", min, max, v));
    }
    return v;
}

bool WireValue::as_bool() const {
    bool v = false;
    if (value_.get_bool().get(v) != simdjson::SUCCESS) {
        throw error(fmt::format("expected true or false, got {}", type_name(value_)));
    }
    return v;
}

json_io::Json WireValue::to_json() const { return json_io::Json::parse(simdjson::to_string(value_)); }

}  // namespace gpuops::rescale::detail
