// A view as a member sees it, and the checks a worker makes of a proposed view before it reconciles endpoints
// (research/rescale.md §6.4): pure functions of the committed view and the PREPARE.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuops/rescale/protocol.hpp"

namespace gpuops::rescale {

/// Members in rank order with their addresses.
struct MemberView {
    Epoch epoch = 0;
    std::string hash;
    std::vector<MemberId> members;             ///< index = rank
    std::map<MemberId, std::string> addr_b64;  ///< every member's address (opaque)
    [[nodiscard]] std::optional<std::size_t> rank_of(MemberId id) const;
    [[nodiscard]] std::size_t size() const noexcept { return members.size(); }
};

/// The committed view WELCOME hands over.
[[nodiscard]] MemberView view_from(const ViewInfo& info);
/// The view a PREPARE proposes, from the committed one: the delta applied, or the full table for a joiner.
[[nodiscard]] MemberView proposed_view(const MemberView& committed, const Prepare& prepare);
/// Why the proposal must be refused, or empty: the hash it names, the rank rule (survivors keep their order,
/// joiners appended), an address for every member.
[[nodiscard]] std::string check_proposal(const MemberView& committed, const Prepare& prepare,
                                         const MemberView& proposed);

}  // namespace gpuops::rescale
