// Rendering of typed errors into the one-line gpuops error voice.
#include "gpuops/core/error.hpp"

#include <utility>

namespace gpuops {
namespace {

std::string render(const std::string& reason, const DataLocation& where) {
    std::string out;
    if (!where.file.empty()) {
        out += quote(where.file);
        if (where.line > 0) out += " line " + std::to_string(where.line);
        out += ": ";
    } else if (where.line > 0) {
        out += "line " + std::to_string(where.line) + ": ";
    }
    if (!where.pointer.empty()) out += "(" + where.pointer + ") ";
    out += reason;
    return out;
}

}  // namespace

DataError::DataError(std::string reason, DataLocation where)
    : Error(ExitCode::data, render(reason, where)), reason_(std::move(reason)), where_(std::move(where)) {}

DataError DataError::in_file(std::string file) const {
    DataLocation where = where_;
    where.file = std::move(file);
    return DataError(reason_, std::move(where));
}

DataError DataError::under_pointer(std::string_view prefix) const {
    DataLocation where = where_;
    where.pointer = std::string(prefix) + where.pointer;
    return DataError(reason_, std::move(where));
}

std::string quote(std::string_view subject) {
    std::string out;
    out.reserve(subject.size() + 2);
    out += '\'';
    out += subject;
    out += '\'';
    return out;
}

}  // namespace gpuops
