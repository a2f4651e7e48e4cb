// The per-format row mappers: which columns each trace format needs and how a row becomes a TraceJob or a skip.
#include "gpuops/placement/trace_formats.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"

namespace gpuops::placement::trace_formats {
namespace {

using trace_fields::RowError;

// Skip reasons and conversions: fixed phrases, so that counts group and tests can name them.
constexpr std::string_view no_gpus = "no GPUs";
constexpr std::string_view zero_duration = "zero duration";
constexpr std::string_view fractional = "fractional GPU share";
constexpr std::string_view never_started = "never started";
constexpr std::string_view still_running = "still running";
constexpr std::string_view job_step = "job step";
constexpr std::string_view no_equal_split = "not a multiple of the node size (split rule skip)";
constexpr std::string_view split_conversion = "split into equal instances (more GPUs than a node)";
constexpr std::string_view padded_conversion = "padded to whole nodes (split rule round-up)";
constexpr std::string_view uneven_conversion = "re-split (GPUs not divisible by the source's instance count)";
constexpr std::string_view oversize_conversion = "re-split (source instance larger than a node)";
constexpr std::string_view fraction_conversion = "fractional GPU share rounded up to 1 GPU";

/// An id field that must not be empty.
void set_id(TraceJob& job, const Fields& f, std::size_t col, const Columns& c) {
    if (f[col].empty()) throw RowError{"missing value", fmt::format("column {}: missing value", quote(c.name(col)))};
    job.id.assign(f[col]);
}

class CanonicalMapper final : public RowMapper {
public:
    explicit CanonicalMapper(const Columns& c)
        : c_(c),
          id_(c.need("job_id")),
          submit_(c.need("submit_time_s")),
          w_(c.need("num_instances")),
          g_(c.need("gpus_per_instance")),
          duration_(c.need("duration_s")) {}
    std::string_view map(const Fields& f, std::int64_t /*index*/, TraceJob& job, Shaper& shaper) override {
        set_id(job, f, id_, c_);
        job.submit_s = trace_fields::number(f[submit_], c_.name(submit_));
        const int w = trace_fields::count(f[w_], c_.name(w_), "instance count");
        const int g = trace_fields::count(f[g_], c_.name(g_));
        job.duration_s = trace_fields::duration(f[duration_], c_.name(duration_));
        return shaper.shape(job, static_cast<std::int64_t>(w) * g, w);
    }

private:
    const Columns& c_;
    std::size_t id_, submit_, w_, g_, duration_;
};

/// Alibaba openb pods: one pod is one job of one instance; run time from scheduling to deletion.
class OpenbMapper final : public RowMapper {
    static constexpr std::string_view no_times =
        " (this pod list has no times: openb_pod_list_default.csv and _gpuspec33.csv have them)";

public:
    explicit OpenbMapper(const Columns& c)
        : c_(c),
          id_(c.need("name")),
          gpus_(c.need("num_gpu")),
          milli_(c.need("gpu_milli")),
          created_(c.need("creation_time", no_times)),
          deleted_(c.need("deletion_time", no_times)),
          scheduled_(c.need("scheduled_time", no_times)) {}
    std::string_view map(const Fields& f, std::int64_t /*index*/, TraceJob& job, Shaper& shaper) override {
        set_id(job, f, id_, c_);
        const int gpus = trace_fields::count(f[gpus_], c_.name(gpus_));
        const int milli = trace_fields::count(f[milli_], c_.name(milli_), "GPU share in thousandths");
        job.submit_s = trace_fields::number(f[created_], c_.name(created_));
        const double deleted = trace_fields::number(f[deleted_], c_.name(deleted_));
        const bool scheduled = !f[scheduled_].empty();
        double start = 0;
        if (scheduled) start = trace_fields::number(f[scheduled_], c_.name(scheduled_));
        if (gpus == 0) return no_gpus;
        if (milli < 1000) {
            if (!shaper.options().round_up_fractional) return fractional;
            shaper.convert(fraction_conversion);
        }
        if (!scheduled) return never_started;
        if (deleted < start) {
            throw RowError{"negative duration",
                           fmt::format("{} {} is before {} {} (negative duration)", c_.name(deleted_), f[deleted_],
                                       c_.name(scheduled_), f[scheduled_])};
        }
        job.duration_s = deleted - start;
        return shaper.shape(job, gpus, 0);
    }

private:
    const Columns& c_;
    std::size_t id_, gpus_, milli_, created_, deleted_, scheduled_;
};

/// Alibaba GFS jobs: gpu_request GPUs per worker, worker_num workers.
class GfsMapper final : public RowMapper {
public:
    explicit GfsMapper(const Columns& c)
        : c_(c),
          id_(c.need("job_name")),
          g_(c.need("gpu_request")),
          w_(c.need("worker_num")),
          submit_(c.need("submit_time")),
          duration_(c.need("duration")) {}
    std::string_view map(const Fields& f, std::int64_t /*index*/, TraceJob& job, Shaper& shaper) override {
        set_id(job, f, id_, c_);
        const double g = trace_fields::number(f[g_], c_.name(g_));
        if (g < 0) {
            throw RowError{"negative GPU count", fmt::format("column {}: expected a non-negative GPU count, got {}",
                                                             quote(c_.name(g_)), quote(f[g_]))};
        }
        const int w = trace_fields::count(f[w_], c_.name(w_), "instance count");
        job.submit_s = trace_fields::number(f[submit_], c_.name(submit_));
        job.duration_s = trace_fields::duration(f[duration_], c_.name(duration_));
        if (g > static_cast<double>(trace_fields::max_gpus)) {
            throw RowError{"GPU count out of range", fmt::format("column {}: GPU count {} is out of range (at most {})",
                                                                 quote(c_.name(g_)), f[g_], trace_fields::max_gpus)};
        }
        if (g == 0 || w == 0) return no_gpus;
        if (std::floor(g) != g) {
            if (!shaper.options().round_up_fractional) return fractional;
            shaper.convert(fraction_conversion);
        }
        return shaper.shape(job, static_cast<std::int64_t>(w) * static_cast<std::int64_t>(std::ceil(g)), w);
    }

private:
    const Columns& c_;
    std::size_t id_, g_, w_, submit_, duration_;
};

/// Formats that give a total GPU count per job, with an optional instance (node) count.
class TotalGpusMapper final : public RowMapper {
public:
    struct Spec {
        std::string_view id, submit, duration, gpus, nodes;  // nodes and id may be empty: absent
    };
    TotalGpusMapper(const Columns& c, const Spec& spec)
        : c_(c),
          id_(spec.id.empty() ? c.want("job_id") : std::optional(c.need(spec.id))),
          submit_(c.need(spec.submit)),
          duration_(c.need(spec.duration)),
          gpus_(c.need(spec.gpus)),
          nodes_(spec.nodes.empty() ? std::nullopt : std::optional(c.need(spec.nodes))) {}
    std::string_view map(const Fields& f, std::int64_t index, TraceJob& job, Shaper& shaper) override {
        if (id_) {
            set_id(job, f, *id_, c_);
        } else {
            job.id = std::to_string(index);
        }
        job.submit_s = trace_fields::time_point(f[submit_], c_.name(submit_));
        job.duration_s = trace_fields::duration(f[duration_], c_.name(duration_));
        const int gpus = trace_fields::count(f[gpus_], c_.name(gpus_));
        const int nodes = nodes_ ? trace_fields::count(f[*nodes_], c_.name(*nodes_), "node count") : 0;
        return shaper.shape(job, gpus, nodes);
    }

private:
    const Columns& c_;
    std::optional<std::size_t> id_;
    std::size_t submit_, duration_, gpus_;
    std::optional<std::size_t> nodes_;
};

/// GPUs in a TRES string: "gres/gpu=8", else the sum of typed "gres/gpu:a100=4" entries; -1 when none is listed.
std::int64_t tres_value(std::string_view tres, std::string_view key, bool typed_sum, std::string_view column,
                        std::string_view what) {
    std::int64_t plain = -1;
    std::int64_t typed = -1;
    std::size_t pos = 0;
    while (pos <= tres.size()) {
        const auto end = std::min(tres.find(',', pos), tres.size());
        const auto entry = tres.substr(pos, end - pos);
        pos = end + 1;
        const auto eq = entry.find('=');
        if (eq == std::string_view::npos) continue;
        const auto name = entry.substr(0, eq);
        const bool exact = name == key;
        const bool sub = typed_sum && name.size() > key.size() && name.starts_with(key) && name[key.size()] == ':';
        if (!exact && !sub) continue;
        const int v = trace_fields::count(entry.substr(eq + 1), column, what);
        if (exact) {
            plain = v;
        } else {
            typed = std::max<std::int64_t>(typed, 0) + v;
        }
    }
    return plain >= 0 ? plain : typed;
}

bool unset_time(std::string_view v) { return v.empty() || v == "Unknown" || v == "None"; }

/// Slurm sacct --parsable2: allocations only; run time End − Start; GPUs from AllocTRES.
class SacctMapper final : public RowMapper {
public:
    explicit SacctMapper(const Columns& c)
        : c_(c),
          id_(c.need("JobID")),
          submit_(c.need("Submit")),
          start_(c.need("Start")),
          end_(c.need("End")),
          tres_(tres_column(c)),
          req_tres_(c.want("ReqTRES")),
          nodes_(c.want("NNodes")) {}
    // A header with ReqTRES but no AllocTRES uses ReqTRES for every row.
    static std::size_t tres_column(const Columns& c) {
        if (const auto a = c.want("AllocTRES")) return *a;
        if (const auto r = c.want("ReqTRES")) return *r;
        return c.need("AllocTRES", " (or ReqTRES)");
    }
    std::string_view map(const Fields& f, std::int64_t /*index*/, TraceJob& job, Shaper& shaper) override {
        set_id(job, f, id_, c_);
        if (f[id_].find('.') != std::string_view::npos) return job_step;
        job.submit_s = trace_fields::time_point(f[submit_], c_.name(submit_));
        std::string_view tres = f[tres_];
        if (tres.empty() && req_tres_) tres = f[*req_tres_];
        const auto gpus = tres_value(tres, "gres/gpu", true, c_.name(tres_), "GPU count");
        std::int64_t nodes = 0;
        if (nodes_) {
            nodes = trace_fields::count(f[*nodes_], c_.name(*nodes_), "node count");
        } else {
            nodes = std::max<std::int64_t>(tres_value(tres, "node", false, c_.name(tres_), "node count"), 0);
        }
        // A pending job has no AllocTRES yet: "never started" says more than "no GPUs".
        if (unset_time(f[start_])) return never_started;
        if (unset_time(f[end_])) return still_running;
        if (gpus <= 0) return no_gpus;
        const double start = trace_fields::time_point(f[start_], c_.name(start_));
        const double end = trace_fields::time_point(f[end_], c_.name(end_));
        if (end < start) {
            throw RowError{"negative duration", fmt::format("{} {} is before {} {} (negative duration)", c_.name(end_),
                                                            quote(f[end_]), c_.name(start_), quote(f[start_]))};
        }
        job.duration_s = end - start;
        return shaper.shape(job, gpus, nodes);
    }

private:
    const Columns& c_;
    std::size_t id_, submit_, start_, end_, tres_;
    std::optional<std::size_t> req_tres_, nodes_;
};

}  // namespace

void tally(std::map<std::string, RowTally, std::less<>>& map, std::string_view reason, int line) {
    auto it = map.find(reason);
    if (it == map.end()) it = map.emplace(std::string(reason), RowTally{}).first;
    ++it->second.rows;
    if (it->second.first_lines.size() < RowTally::max_examples) it->second.first_lines.push_back(line);
}

std::string_view Shaper::shape(TraceJob& job, std::int64_t total, std::int64_t hint) {
    if (total == 0) return no_gpus;
    if (job.duration_s == 0) return zero_duration;
    if (total > trace_fields::max_gpus) {
        throw RowError{"GPU count out of range",
                       fmt::format("{} GPUs in one job is out of range (at most {})", total, trace_fields::max_gpus)};
    }
    const int node = options_.node_gpus;
    job.source_gpus = static_cast<int>(total);
    if (hint > 0 && total % hint == 0 && total / hint <= node) {
        job.instances = static_cast<int>(hint);
        job.gpus_per_instance = static_cast<int>(total / hint);
        return {};
    }
    const auto s = split_gpus(static_cast<int>(total), node, options_.split);
    if (!s) return no_equal_split;
    job.instances = s->instances;
    job.gpus_per_instance = s->gpus_per_instance;
    if (hint > 0) {
        convert(total % hint != 0 ? uneven_conversion : oversize_conversion);
    } else if (s->instances > 1) {
        convert(split_conversion);
    }
    if (static_cast<std::int64_t>(s->instances) * s->gpus_per_instance > total) {
        convert(padded_conversion);
    }
    return {};
}

std::size_t Columns::need(std::string_view name, std::string_view hint) const {
    if (const auto i = header_.find(name)) return *i;
    throw DataError(fmt::format("missing column {} for the {} trace format{}", quote(name), to_string(format_), hint),
                    {std::string(source_), "", line_});
}

std::unique_ptr<RowMapper> make_mapper(TraceFormat format, const Columns& c) {
    switch (format) {
        case TraceFormat::canonical: return std::make_unique<CanonicalMapper>(c);
        case TraceFormat::alibaba_openb: return std::make_unique<OpenbMapper>(c);
        case TraceFormat::alibaba_gfs: return std::make_unique<GfsMapper>(c);
        case TraceFormat::elasticflow:
            return std::make_unique<TotalGpusMapper>(
                c, TotalGpusMapper::Spec{"job_id", "submission_time", "duration", "num_gpu", ""});
        case TraceFormat::tiresias:
            return std::make_unique<TotalGpusMapper>(
                c, TotalGpusMapper::Spec{"job_id", "submit_time", "duration", "num_gpu", ""});
        case TraceFormat::philly:
            return std::make_unique<TotalGpusMapper>(
                c, TotalGpusMapper::Spec{"", "timestamp", "duration", "num_gpus", ""});
        case TraceFormat::helios:
            return std::make_unique<TotalGpusMapper>(
                c, TotalGpusMapper::Spec{"job_id", "submit_time", "duration", "gpu_num", "node_num"});
        case TraceFormat::sacct: return std::make_unique<SacctMapper>(c);
    }
    throw InternalError("unknown trace format");
}

}  // namespace gpuops::placement::trace_formats
