// The rank rule and the view hash.
#include "gpuops/rescale/view.hpp"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <unordered_set>

#include <fmt/format.h>

namespace gpuops::rescale {

bool GroupView::contains(MemberId id) const { return rank_of(id).has_value(); }

std::optional<std::size_t> GroupView::rank_of(MemberId id) const {
    const auto it = std::find(members.begin(), members.end(), id);
    if (it == members.end()) return std::nullopt;
    return static_cast<std::size_t>(it - members.begin());
}

std::vector<MemberId> next_members(std::span<const MemberId> current, const std::set<MemberId>& removed,
                                   std::span<const MemberId> joiners) {
    std::vector<MemberId> out;
    out.reserve(current.size() + joiners.size());
    std::unordered_set<MemberId> present;  // a joiner already in the view is not appended twice
    present.reserve(current.size() + joiners.size());
    for (const MemberId id : current) {
        if (!removed.contains(id) && present.insert(id).second) out.push_back(id);
    }
    for (const MemberId id : joiners) {
        if (!removed.contains(id) && present.insert(id).second) out.push_back(id);
    }
    return out;
}

std::string view_hash(Epoch epoch, std::span<const MemberId> members) {
    constexpr std::uint64_t offset = 0xcbf29ce484222325ULL;
    constexpr std::uint64_t prime = 0x100000001b3ULL;
    std::uint64_t h = offset;
    const auto feed = [&h](std::string_view text) {
        for (const char c : text) {
            h ^= static_cast<unsigned char>(c);
            h *= prime;
        }
    };
    // Canonical text "epoch:m0,m1,..." so that the hash can be recomputed by any client from the PREPARE; fed a
    // number at a time, since every joiner of a 1024-member view hashes it.
    feed(fmt::format_int(epoch).c_str());
    feed(":");
    for (std::size_t i = 0; i < members.size(); ++i) {
        if (i > 0) feed(",");
        feed(fmt::format_int(members[i]).c_str());
    }
    return fmt::format("{:016x}", h);
}

GroupView make_view(Epoch epoch, std::vector<MemberId> members) {
    std::string hash = view_hash(epoch, members);
    return {epoch, std::move(members), std::move(hash)};
}

}  // namespace gpuops::rescale
