// A testing hook, not a feature: kill the coordinator right after a chosen durable write, so that tests can check
// that a restart loses no decision (research/rescale.md §7, crash-point enumeration).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "gpuops/rescale/records.hpp"

namespace gpuops::rescale {

/// The environment variable that arms the hook: GPUOPS_RESCALE_CRASH_AFTER=<KIND>[:<n>], e.g. COMMIT:2 kills the
/// process with SIGKILL right after the second COMMIT record is durable. KIND is a record kind (START, CONFIG,
/// REGISTER, PROPOSE, COMMIT, ABORT, DEAD, LEFT, KV_PUT, CLOSE); n defaults to 1. Appends are counted within the
/// process, not in the store: a start appends one START, so START:n fires only for n = 1.
inline constexpr std::string_view crash_after_env = "GPUOPS_RESCALE_CRASH_AFTER";

struct CrashPoint {
    std::string kind;
    std::uint64_t nth = 1;
    bool operator==(const CrashPoint&) const = default;
};

/// DataError naming the variable when `text` is not KIND[:n] with a known kind and n >= 1.
[[nodiscard]] CrashPoint parse_crash_point(std::string_view text);
/// The crash point the environment asks for; nullopt when the variable is unset or empty.
[[nodiscard]] std::optional<CrashPoint> crash_point_from_env();

/// Counts durable appends and raises SIGKILL at the armed one. Unarmed, it does nothing.
class CrashHook {
public:
    explicit CrashHook(std::optional<CrashPoint> point) : point_(std::move(point)) {}
    /// Call after `record` is durable. Returns (when it returns) whether the hook would have fired; the
    /// process does not survive a firing hook unless `dry_run` (for tests of the counting).
    bool after_append(const Record& record, bool dry_run = false);
    [[nodiscard]] bool armed() const noexcept { return point_.has_value(); }

private:
    std::optional<CrashPoint> point_;
    std::uint64_t seen_ = 0;
};

}  // namespace gpuops::rescale
