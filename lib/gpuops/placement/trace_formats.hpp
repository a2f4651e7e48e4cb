// The per-format row mappers of the trace importers and what they share (internal to the placement module).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuops/placement/trace.hpp"
#include "gpuops/placement/trace_fields.hpp"

namespace gpuops::placement::trace_formats {

using Fields = std::vector<std::string_view>;

/// Counts one row under `reason`, keeping the first few line numbers.
void tally(std::map<std::string, RowTally, std::less<>>& map, std::string_view reason, int line);

/// Shapes jobs into instances and counts what was changed; shared by every format.
class Shaper {
public:
    Shaper(const TraceOptions& options, ImportReport& report) : options_(options), report_(report) {}
    [[nodiscard]] const TraceOptions& options() const noexcept { return options_; }

    /// Gives `job` its instances from `total` GPUs, keeping the source's instance count `hint` (0: none) when the
    /// GPUs divide evenly into node-sized instances. Returns the skip reason, or "" to keep the job.
    std::string_view shape(TraceJob& job, std::int64_t total, std::int64_t hint);
    /// Notes a change to the current row's job; counted by end_row only if the job is kept.
    void convert(std::string_view what) {
        if (pending_count_ < pending_.size()) pending_[pending_count_++] = what;
    }
    void end_row(bool kept, int line) {
        for (std::size_t i = 0; kept && i < pending_count_; ++i)
            tally(report_.conversions, pending_[i], line);
        pending_count_ = 0;
    }

private:
    const TraceOptions& options_;
    ImportReport& report_;
    std::array<std::string_view, 4> pending_{};
    std::size_t pending_count_ = 0;
};

/// One format's view of a row: fills `job` (id, submit, duration, shape) or returns why the row is skipped.
class RowMapper {
public:
    RowMapper() = default;
    RowMapper(const RowMapper&) = delete;
    RowMapper& operator=(const RowMapper&) = delete;
    RowMapper(RowMapper&&) = delete;
    RowMapper& operator=(RowMapper&&) = delete;
    virtual ~RowMapper() = default;
    /// `index` is the 0-based data row (for formats whose rows have no id).
    virtual std::string_view map(const Fields& f, std::int64_t index, TraceJob& job, Shaper& shaper) = 0;
};

/// Resolves required columns, naming the format and the first missing one.
class Columns {
public:
    Columns(const trace_fields::Header& header, TraceFormat format, std::string_view source, int line)
        : header_(header), format_(format), source_(source), line_(line) {}

    /// The index of a required column; DataError at the header line naming the format (and `hint`) when absent.
    [[nodiscard]] std::size_t need(std::string_view name, std::string_view hint = {}) const;
    [[nodiscard]] std::optional<std::size_t> want(std::string_view name) const { return header_.find(name); }
    [[nodiscard]] const std::string& name(std::size_t i) const { return header_.name(i); }

private:
    const trace_fields::Header& header_;
    TraceFormat format_;
    std::string_view source_;
    int line_;
};

/// The mapper for `format`; resolving its columns may throw the missing-column DataError.
[[nodiscard]] std::unique_ptr<RowMapper> make_mapper(TraceFormat format, const Columns& columns);

}  // namespace gpuops::placement::trace_formats
