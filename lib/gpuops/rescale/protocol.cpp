// Names of the protocol's enums as they appear on the wire.
#include "gpuops/rescale/protocol.hpp"

#include <array>
#include <utility>

namespace gpuops::rescale {
namespace {

template <typename E, std::size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

template <typename E, std::size_t N>
std::string_view name_in(const NameTable<E, N>& table, E value) {
    for (const auto& [v, name] : table)
        if (v == value) return name;
    return "?";
}

template <typename E, std::size_t N>
std::optional<E> value_in(const NameTable<E, N>& table, std::string_view text) {
    for (const auto& [v, name] : table)
        if (name == text) return v;
    return std::nullopt;
}

constexpr NameTable<ErrorCode, 9> error_codes{{
    {ErrorCode::protocol, "PROTOCOL"},
    {ErrorCode::unknown_type, "UNKNOWN_TYPE"},
    {ErrorCode::too_large, "TOO_LARGE"},
    {ErrorCode::bad_token, "BAD_TOKEN"},
    {ErrorCode::unknown_member, "UNKNOWN_MEMBER"},
    {ErrorCode::stale_epoch, "STALE_EPOCH"},
    {ErrorCode::busy, "BUSY"},
    {ErrorCode::invalid, "INVALID"},
    {ErrorCode::closed, "CLOSED"},
}};

constexpr NameTable<TransitionKind, 4> transition_kinds{{
    {TransitionKind::shrink, "SHRINK"},
    {TransitionKind::expand, "EXPAND"},
    {TransitionKind::fail, "FAIL"},
    {TransitionKind::mixed, "MIXED"},
}};

constexpr NameTable<JoinState, 2> join_states{{{JoinState::joining, "JOINING"}, {JoinState::active, "ACTIVE"}}};

constexpr NameTable<KvScope, 2> kv_scopes{{{KvScope::epoch, "epoch"}, {KvScope::job, "job"}}};

}  // namespace

std::string_view to_string(ErrorCode code) { return name_in(error_codes, code); }
std::optional<ErrorCode> error_code_from_string(std::string_view text) { return value_in(error_codes, text); }

std::string_view to_string(TransitionKind kind) { return name_in(transition_kinds, kind); }
std::optional<TransitionKind> transition_kind_from_string(std::string_view text) {
    return value_in(transition_kinds, text);
}

std::string_view to_string(JoinState state) { return name_in(join_states, state); }
std::optional<JoinState> join_state_from_string(std::string_view text) { return value_in(join_states, text); }

std::string_view to_string(KvScope scope) { return name_in(kv_scopes, scope); }
std::optional<KvScope> kv_scope_from_string(std::string_view text) { return value_in(kv_scopes, text); }

std::string_view type_of(const Message& message) {
    return std::visit([](const auto& m) { return std::decay_t<decltype(m)>::type; }, message);
}

}  // namespace gpuops::rescale
