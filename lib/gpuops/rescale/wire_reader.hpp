// Reading one protocol line: simdjson parses it (a 1024-member PREPARE in a tenth of the time a DOM of
// nlohmann values takes), and WireValue reads fields with the same messages and JSON pointers as json_io::View.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "gpuops/core/error.hpp"
#include "gpuops/core/json_io.hpp"

namespace gpuops::rescale::detail {

/// A value inside a parsed line. It knows its parent, not its pointer: the pointer is spelled out only for an
/// error, so reading a 1024-entry table allocates no paths. A child must not outlive the value it came from.
class WireValue {
public:
    explicit WireValue(simdjson::dom::element value) : value_(value) {}

    /// Required member: DataError "missing required field" when absent, or when this is not an object.
    [[nodiscard]] WireValue at(std::string_view key) const;
    /// Optional member: absent or null gives nullopt.
    [[nodiscard]] std::optional<WireValue> find(std::string_view key) const;
    /// Calls `visit(element)` for each element of an array.
    template <typename Visit>
    void for_each(Visit&& visit) const {
        const simdjson::dom::array list = as_array();
        std::size_t index = 0;
        for (const simdjson::dom::element item : list)
            visit(WireValue(item, this, {}, index++, true));
    }

    /// Calls `visit(key, value)` for each member of an object, in document order.
    template <typename Visit>
    void for_each_field(Visit&& visit) const {
        for (const simdjson::dom::key_value_pair field : as_object())
            visit(field.key, WireValue(field.value, this, field.key, 0, false));
    }

    [[nodiscard]] bool is_object() const { return value_.type() == simdjson::dom::element_type::OBJECT; }
    [[nodiscard]] std::string as_string() const { return std::string(as_string_view()); }
    [[nodiscard]] std::string_view as_string_view() const;
    [[nodiscard]] std::int64_t as_int(std::int64_t min, std::int64_t max) const;
    [[nodiscard]] bool as_bool() const;
    /// The value as a JSON document (for free-form fields such as a worker's `meta`).
    [[nodiscard]] json_io::Json to_json() const;

    /// A DataError located at this value.
    [[nodiscard]] DataError error(std::string reason) const;
    [[nodiscard]] std::string pointer() const;

private:
    WireValue(simdjson::dom::element value, const WireValue* parent, std::string_view key, std::size_t index,
              bool element)
        : value_(value), parent_(parent), key_(key), index_(index), element_(element) {}
    [[nodiscard]] simdjson::dom::array as_array() const;
    [[nodiscard]] simdjson::dom::object as_object() const;

    simdjson::dom::element value_;
    const WireValue* parent_ = nullptr;
    std::string_view key_;   ///< the member name under the parent object
    std::size_t index_ = 0;  ///< or, for an array element, its index
    bool element_ = false;
};

/// The JSON type name used in messages ("string", "number", "object", ...).
[[nodiscard]] std::string_view type_name(const simdjson::dom::element& value);

}  // namespace gpuops::rescale::detail
