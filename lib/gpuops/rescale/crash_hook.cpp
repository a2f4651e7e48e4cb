// The crash-after-write testing hook: parsing GPUOPS_RESCALE_CRASH_AFTER and counting appends.
#include "gpuops/rescale/crash_hook.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <system_error>
#include <variant>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"

namespace gpuops::rescale {
namespace {

constexpr std::array record_kinds{StartRecord::kind,  ConfigRecord::kind, RegisterRecord::kind, ProposeRecord::kind,
                                  CommitRecord::kind, AbortRecord::kind,  DeadRecord::kind,     LeftRecord::kind,
                                  KvPutRecord::kind,  CloseRecord::kind};

std::string_view kind_of(const Record& record) {
    return std::visit([](const auto& r) { return std::decay_t<decltype(r)>::kind; }, record);
}

}  // namespace

CrashPoint parse_crash_point(std::string_view text) {
    const auto fail = [&](std::string_view why) {
        return DataError(fmt::format("{}={}: {}", crash_after_env, text, why));
    };
    const auto colon = text.find(':');
    CrashPoint point{std::string(text.substr(0, colon)), 1};
    if (std::find(record_kinds.begin(), record_kinds.end(), point.kind) == record_kinds.end()) {
        throw fail(fmt::format("expected a record kind ({})", fmt::join(record_kinds, ", ")));
    }
    if (colon != std::string_view::npos) {
        const std::string_view count = text.substr(colon + 1);
        const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), point.nth);
        if (ec != std::errc() || end != count.data() + count.size() || point.nth == 0) {
            throw fail("expected KIND:n with n >= 1");
        }
    }
    return point;
}

std::optional<CrashPoint> crash_point_from_env() {
    const char* value = std::getenv(std::string(crash_after_env).c_str());
    if (value == nullptr || *value == '\0') return std::nullopt;
    return parse_crash_point(value);
}

bool CrashHook::after_append(const Record& record, bool dry_run) {
    if (!point_ || kind_of(record) != point_->kind || ++seen_ != point_->nth) return false;
    // SIGKILL, not abort() or exit(): nothing may run after the write, as after a power cut.
    if (!dry_run) std::raise(SIGKILL);
    return true;
}

}  // namespace gpuops::rescale
