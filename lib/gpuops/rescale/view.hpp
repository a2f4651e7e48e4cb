// A view of the group: an epoch and its members in rank order, the rank rule, and the hash members agree on.
#pragma once

#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "gpuops/rescale/protocol.hpp"

namespace gpuops::rescale {

struct GroupView {
    Epoch epoch = 0;
    std::vector<MemberId> members;  ///< index = rank
    std::string hash;
    bool operator==(const GroupView&) const = default;

    [[nodiscard]] std::size_t size() const noexcept { return members.size(); }
    [[nodiscard]] bool contains(MemberId id) const;
    [[nodiscard]] std::optional<std::size_t> rank_of(MemberId id) const;
};

/// The rank rule of research/rescale.md §5: survivors keep their relative order and close the gaps, joiners are
/// appended in admission order. A pure function of its inputs, so every party can recompute it.
[[nodiscard]] std::vector<MemberId> next_members(std::span<const MemberId> current, const std::set<MemberId>& removed,
                                                 std::span<const MemberId> joiners);

/// A digest of (epoch, members in rank order): 16 hex digits of FNV-1a 64. It detects disagreement between
/// honest parties; it is not a security boundary (the job token is).
[[nodiscard]] std::string view_hash(Epoch epoch, std::span<const MemberId> members);

[[nodiscard]] GroupView make_view(Epoch epoch, std::vector<MemberId> members);

}  // namespace gpuops::rescale
