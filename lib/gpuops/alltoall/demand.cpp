// The AlltoAllv demand matrix: reading documents and CSV, and writing documents (the generators are in
// demand_generators.cpp).
#include "gpuops/alltoall/demand.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "gpuops/alltoall/demand_internal.hpp"
#include "gpuops/core/error.hpp"
#include "gpuops/core/units.hpp"

namespace gpuops::alltoall {
namespace demand_detail {

bool checked_add(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
    if (a > max_u64 - b) return false;
    out = a + b;
    return true;
}

bool checked_mul(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
    if (a != 0 && b > max_u64 / a) return false;
    out = a * b;
    return true;
}

std::optional<std::uint64_t> checked_total(const Demand& d) {
    std::uint64_t sum = 0;
    for (const std::uint64_t b : d.bytes)
        if (!checked_add(sum, b, sum)) return std::nullopt;
    return sum;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

std::vector<std::string_view> split(std::string_view s, char separator) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (true) {
        const auto end = s.find(separator, start);
        out.push_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
        if (end == std::string_view::npos) return out;
        start = end + 1;
    }
}

std::optional<std::uint64_t> parse_u64(std::string_view s) {
    if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return v;
}

Demand empty_demand(const topo::Topology& t, std::string_view source) {
    Demand d;
    d.gpus = t.devices_of(topo::DeviceKind::gpu);
    const std::size_t n = d.gpus.size();
    if (n < 2) {
        throw DataError(n == 0 ? std::string("the topology has no GPUs: there is no demand to describe")
                               : std::string("the topology has one GPU: a demand needs at least two"));
    }
    if (n > max_gpus) {
        throw DataError(fmt::format("the topology has {} GPUs; a dense demand matrix holds at most {}", n, max_gpus));
    }
    d.bytes.assign(n * n, 0);
    d.source = source;
    return d;
}

}  // namespace demand_detail

namespace {

using namespace demand_detail;

using json_io::Json;
using json_io::View;
using topo::DeviceKind;
using topo::Topology;

constexpr std::string_view entry_hint = "expected a non-negative integer number of bytes";

std::vector<std::string> gpu_labels(const Topology& t, const std::vector<topo::DeviceId>& gpus) {
    std::vector<std::string> out;
    out.reserve(gpus.size());
    for (const topo::DeviceId g : gpus)
        out.push_back(t.label(g));
    return out;
}

// ---- reading ----------------------------------------------------------------------------------------------------

std::uint64_t json_bytes(const View& v) {
    const Json& j = v.json();
    if (j.is_number_unsigned()) return j.get<std::uint64_t>();
    if (j.is_number_integer()) {
        const auto x = j.get<std::int64_t>();
        if (x < 0) throw v.error(fmt::format("{}, got {}", entry_hint, x));
        return static_cast<std::uint64_t>(x);
    }
    if (j.is_number_float()) {
        const double x = j.get<double>();
        if (!(x >= 0) || std::floor(x) != x) throw v.error(fmt::format("{}, got {}", entry_hint, j.dump()));
        if (x >= 18446744073709551616.0)  // 2^64
            throw v.error(fmt::format("too large: at most {} bytes, got {}", max_u64, j.dump()));
        return static_cast<std::uint64_t>(x);
    }
    throw v.error(fmt::format("{}, got {}", entry_hint, json_io::type_name(j)));
}

bool is_header_line(const std::vector<std::string_view>& fields) {
    // A label always holds a letter other than an exponent's; numbers (even malformed ones) do not.
    constexpr std::string_view numeric = "0123456789+-.eE \t\r";
    return std::any_of(fields.begin(), fields.end(),
                       [&](std::string_view f) { return f.find_first_not_of(numeric) != std::string_view::npos; });
}

Demand demand_from_text(std::string_view text, const Topology& topology, std::string_view source_name) {
    std::string_view body = text;
    if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);  // a UTF-8 byte order mark
    const auto first = body.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && (body[first] == '{' || body[first] == '[')) {
        return demand_from_json(json_io::parse_document(text, source_name), topology, source_name);
    }
    return demand_from_csv(text, topology, source_name);
}

}  // namespace

std::uint64_t Demand::row_sum(std::size_t i) const {
    std::uint64_t sum = 0;
    for (std::size_t j = 0; j < size(); ++j)
        sum += at(i, j);
    return sum;
}

std::uint64_t Demand::column_sum(std::size_t j) const {
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < size(); ++i)
        sum += at(i, j);
    return sum;
}

std::uint64_t Demand::total() const {
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < size(); ++i)
        for (std::size_t j = 0; j < size(); ++j)
            if (i != j) sum += at(i, j);
    return sum;
}

Demand load_demand(std::string_view file_or_spec, const Topology& topology) {
    if (!file_or_spec.empty() && file_or_spec != "-") {
        std::error_code ec;
        if (!std::filesystem::exists(std::filesystem::path(file_or_spec), ec) && looks_like_spec(file_or_spec))
            return generate_demand(file_or_spec, topology);
    }
    const std::string name = json_io::display_name(file_or_spec);
    return demand_from_text(json_io::read_text(file_or_spec), topology, name);
}

Demand demand_from_json(const Json& doc, const Topology& topology, std::string_view source_name) {
    try {
        json_io::check_header(doc, "gpuops.demand", demand_schema_version);
        Demand d = empty_demand(topology, source_name);
        const std::size_t n = d.size();
        const View root(doc);
        const auto labels = gpu_labels(topology, d.gpus);
        const View gpus = root.at("gpus");
        const auto listed = gpus.items();
        for (std::size_t k = 0; k < std::min(n, listed.size()); ++k) {
            const auto label = listed[k].as_string();
            if (label != labels[k]) {
                throw listed[k].error(
                    fmt::format("expected {} (GPU {} of the topology), got {}", quote(labels[k]), k, quote(label)));
            }
        }
        if (listed.size() != n)
            throw gpus.error(fmt::format("expected the topology's {} GPUs, got {}", n, listed.size()));

        const View rows = root.at("bytes");
        if (rows.size() != n) throw rows.error(fmt::format("expected {} rows, got {}", n, rows.size()));
        for (std::size_t i = 0; i < n; ++i) {
            const View row = rows.at(i);
            if (row.size() != n) throw row.error(fmt::format("expected {} numbers, got {}", n, row.size()));
            for (std::size_t j = 0; j < n; ++j)
                d.at(i, j) = json_bytes(row.at(j));
        }
        if (!checked_total(d)) throw rows.error("the matrix holds more than 2^64-1 bytes in all");
        if (const auto spec = root.string_or_null("spec")) d.spec = *spec;
        return d;
    } catch (const DataError& e) {
        if (e.where().file.empty() && !source_name.empty()) throw e.in_file(std::string(source_name));
        throw;
    }
}

Demand demand_from_csv(std::string_view text, const Topology& topology, std::string_view source_name) {
    const std::string file(source_name);
    try {
        Demand d = empty_demand(topology, source_name);
        const std::size_t n = d.size();
        const auto labels = gpu_labels(topology, d.gpus);
        std::string_view body = text;
        if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);
        const auto lines = split(body, '\n');
        std::size_t rows = 0;
        bool first = true;
        int line_number = 0;
        for (const std::string_view raw : lines) {
            ++line_number;
            const std::string_view line = trim(raw);
            if (line.empty() || line.front() == '#') continue;
            const auto fail = [&](const std::string& reason) { return DataError(reason, {file, {}, line_number}); };
            const auto fields = split(line, ',');
            if (first && is_header_line(fields)) {
                first = false;
                if (fields.size() != n) throw fail(fmt::format("expected {} GPU labels, got {}", n, fields.size()));
                for (std::size_t k = 0; k < n; ++k) {
                    if (trim(fields[k]) != labels[k]) {
                        throw fail(fmt::format("column {}: expected GPU label {}, got {}", k + 1, quote(labels[k]),
                                               quote(trim(fields[k]))));
                    }
                }
                continue;
            }
            first = false;
            if (rows == n) throw fail(fmt::format("expected {} rows, got more", n));
            if (fields.size() != n) throw fail(fmt::format("expected {} numbers, got {}", n, fields.size()));
            for (std::size_t j = 0; j < n; ++j) {
                const std::string_view field = trim(fields[j]);
                const auto v = parse_u64(field);
                if (!v) {
                    const bool digits =
                        !field.empty() && field.find_first_not_of("0123456789") == std::string_view::npos;
                    throw fail(digits ? fmt::format("column {}: too large: at most {} bytes, got {}", j + 1, max_u64,
                                                    quote(field))
                                      : fmt::format("column {}: {}, got {}", j + 1, entry_hint, quote(field)));
                }
                d.at(rows, j) = *v;
            }
            ++rows;
        }
        if (rows != n) {
            throw DataError(fmt::format("expected {} rows, got {}", n, rows),
                            {file, {}, std::max(1, line_number - (body.ends_with('\n') ? 1 : 0))});
        }
        if (!checked_total(d)) throw DataError("the matrix holds more than 2^64-1 bytes in all", {file, {}, 0});
        return d;
    } catch (const DataError& e) {
        if (e.where().file.empty() && !file.empty()) throw e.in_file(file);
        throw;
    }
}

Json to_json(const Demand& demand, const Topology& topology) {
    Json doc = json_io::make_header("gpuops.demand", demand_schema_version, "vp-plan");
    doc["gpus"] = gpu_labels(topology, demand.gpus);
    Json rows = Json::array();
    for (std::size_t i = 0; i < demand.size(); ++i) {
        Json row = Json::array();
        for (std::size_t j = 0; j < demand.size(); ++j)
            row.push_back(demand.at(i, j));
        rows.push_back(std::move(row));
    }
    doc["bytes"] = std::move(rows);
    if (!demand.spec.empty()) doc["spec"] = demand.spec;
    return doc;
}

}  // namespace gpuops::alltoall
