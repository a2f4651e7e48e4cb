// PUT/FENCE/GET per epoch (research/rescale.md §6.5): a KV namespace per committed epoch plus one for the job.
// A fence or a GET never hangs: it fails when a member of its epoch is gone, when the epoch ends, or at timeout.
#include <algorithm>

#include <fmt/format.h>

#include "gpuops/rescale/coordinator.hpp"

namespace gpuops::rescale {

bool Coordinator::check_kv_epoch(ConnId conn, std::uint64_t seq, const MemberState& m, Epoch epoch) {
    if (m.status != MemberStatus::active) {
        reply_error(conn, seq, ErrorCode::protocol, "only members of the committed view use the KV store");
        return false;
    }
    if (epoch != view_.epoch) {
        reply_error(conn, seq, epoch < view_.epoch ? ErrorCode::stale_epoch : ErrorCode::protocol,
                    fmt::format("epoch {} is not the committed epoch {}", epoch, view_.epoch));
        return false;
    }
    return true;
}

void Coordinator::handle(ConnId conn, std::uint64_t seq, const Put& m) {
    MemberState* member = member_on(conn, seq);
    if (!member || !check_kv_epoch(conn, seq, *member, m.epoch)) return;
    const KvPutRecord put{m.epoch, m.scope, member->registration.member_id, m.key, m.val_b64};
    persist(put);  // before a GET_REPLY reveals it
    store_put(put);
    answer_gets();
}

void Coordinator::store_put(const KvPutRecord& put) {
    auto& space = put.scope == KvScope::epoch ? epoch_values_ : job_values_;
    space[{put.member_id, put.key}] = put.val_b64;
}

void Coordinator::handle(ConnId conn, std::uint64_t seq, const Fence& m) {
    MemberState* member = member_on(conn, seq);
    if (!member || !check_kv_epoch(conn, seq, *member, m.epoch)) return;
    const MemberId id = member->registration.member_id;
    if (const auto done = done_fences_.find(m.fence_id); done != done_fences_.end()) {
        FenceDone reply = done->second;  // asked again after a reconnect
        if (!m.collect) reply.kv.clear();
        send(conn, std::move(reply));
        return;
    }
    const auto gone = std::ranges::find_if(view_.members, [&](MemberId peer) { return is_gone(peer); });
    if (gone != view_.members.end()) {
        send(conn, FenceDone{m.epoch, m.fence_id, false, fmt::format("member {} is gone", *gone), {}});
        return;
    }
    auto [it, fresh] = fences_.try_emplace(m.fence_id);
    if (fresh) it->second = PendingFence{view_.epoch, {}, {}, now_ + config_.fence_timeout_ms};
    it->second.arrived.insert(id);
    if (m.collect) it->second.collect.insert(id);
    if (it->second.arrived.size() == view_.members.size()) complete_fence(m.fence_id);
}

std::vector<KvEntry> Coordinator::epoch_kv() const {
    std::vector<KvEntry> out;
    for (const auto& [key, value] : epoch_values_)
        out.push_back({key.first, key.second, value});
    return out;
}

void Coordinator::complete_fence(const std::string& fence_id) {
    const PendingFence fence = fences_.extract(fence_id).mapped();
    const FenceDone done{fence.epoch, fence_id, true, {}, epoch_kv()};
    for (const MemberId id : fence.arrived) {
        FenceDone reply = done;
        if (!fence.collect.contains(id)) reply.kv.clear();
        send_to(id, std::move(reply));
    }
    done_fences_[fence_id] = done;
}

void Coordinator::fail_fence(const std::string& fence_id, const std::string& reason) {
    const PendingFence fence = fences_.extract(fence_id).mapped();
    const FenceDone failed{fence.epoch, fence_id, false, reason, {}};
    for (const MemberId id : fence.arrived)
        send_to(id, failed);
    if (fence.epoch == view_.epoch) done_fences_[fence_id] = failed;
}

void Coordinator::handle(ConnId conn, std::uint64_t seq, const Get& m) {
    MemberState* member = member_on(conn, seq);
    if (!member || !check_kv_epoch(conn, seq, *member, m.epoch)) return;
    const auto& space = m.scope == KvScope::epoch ? epoch_values_ : job_values_;
    if (const auto it = space.find({m.member_id, m.key}); it != space.end()) {
        send(conn, GetReply{m.epoch, m.key, m.member_id, true, it->second, {}});
        return;
    }
    if (!view_.contains(m.member_id) || is_gone(m.member_id)) {
        send(conn, GetReply{m.epoch,
                            m.key,
                            m.member_id,
                            false,
                            {},
                            fmt::format("member {} is not a live member of epoch {}", m.member_id, m.epoch)});
        return;
    }
    gets_.push_back({member->registration.member_id, m});  // direct modex: answered when the PUT arrives
}

void Coordinator::answer_gets() {
    std::erase_if(gets_, [&](const PendingGet& g) {
        const auto& space = g.request.scope == KvScope::epoch ? epoch_values_ : job_values_;
        const auto it = space.find({g.request.member_id, g.request.key});
        if (it == space.end()) return false;
        send_to(g.asker, GetReply{g.request.epoch, g.request.key, g.request.member_id, true, it->second, {}});
        return true;
    });
}

void Coordinator::fail_kv_for_gone(MemberId id) {
    if (!view_.contains(id)) return;
    const std::string reason = fmt::format("member {} is gone", id);
    std::vector<std::string> pending;
    for (const auto& [fence_id, fence] : fences_)
        pending.push_back(fence_id);
    for (const auto& fence_id : pending)
        fail_fence(fence_id, reason);
    std::erase_if(gets_, [&](const PendingGet& g) {
        if (g.asker == id) return true;
        if (g.request.member_id != id) return false;
        send_to(g.asker, GetReply{g.request.epoch, g.request.key, id, false, {}, reason});
        return true;
    });
}

void Coordinator::end_epoch_kv(Epoch ended) {
    const std::string reason = fmt::format("epoch {} ended", ended);
    std::vector<std::string> pending;
    for (const auto& [fence_id, fence] : fences_)
        pending.push_back(fence_id);
    for (const auto& fence_id : pending)
        fail_fence(fence_id, reason);
    for (const auto& g : gets_)
        send_to(g.asker, GetReply{g.request.epoch, g.request.key, g.request.member_id, false, {}, reason});
    gets_.clear();
    epoch_values_.clear();
    done_fences_.clear();
}

void Coordinator::check_fence_deadlines() {
    std::vector<std::string> expired;
    for (const auto& [fence_id, fence] : fences_)
        if (now_ >= fence.deadline) expired.push_back(fence_id);
    for (const auto& fence_id : expired)
        fail_fence(fence_id, "fence timeout");
}

}  // namespace gpuops::rescale
