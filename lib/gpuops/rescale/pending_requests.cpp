// Settling the client's waiting FENCE and GET requests.
#include "gpuops/rescale/pending_requests.hpp"

#include <exception>
#include <utility>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"

namespace gpuops::rescale::detail {

std::string PendingRequests::get_name(std::string_view key, MemberId member) {
    return fmt::format("{}@{}", key, member);
}

void PendingRequests::add_fence(const std::string& fence_id, std::uint64_t seq, FencePromise promise) {
    fences_[fence_id] = std::move(promise);
    by_seq_[seq] = fence_id;
}

void PendingRequests::add_get(const std::string& name, std::uint64_t seq, GetPromise promise) {
    gets_[name] = std::move(promise);
    by_seq_[seq] = name;
}

void PendingRequests::settle(const FenceDone& done) {
    const auto it = fences_.find(done.fence_id);
    if (it == fences_.end()) return;
    if (done.ok) {
        it->second->set_value(done.kv);
    } else {
        it->second->set_exception(std::make_exception_ptr(
            UnavailableError(fmt::format("fence {} failed: {}", quote(done.fence_id), done.reason))));
    }
    fences_.erase(it);
}

void PendingRequests::settle(const GetReply& reply) {
    const auto it = gets_.find(get_name(reply.key, reply.member_id));
    if (it == gets_.end()) return;
    if (reply.ok) {
        it->second->set_value(reply.val_b64);
    } else {
        it->second->set_exception(std::make_exception_ptr(
            UnavailableError(fmt::format("get {} failed: {}", quote(reply.key), reply.reason))));
    }
    gets_.erase(it);
}

void PendingRequests::refuse(std::uint64_t seq, const std::string& why) {
    const auto it = by_seq_.find(seq);
    if (it == by_seq_.end()) return;
    const auto error = std::make_exception_ptr(UnavailableError(why));
    if (const auto f = fences_.find(it->second); f != fences_.end()) {
        f->second->set_exception(error);
        fences_.erase(f);
    }
    if (const auto g = gets_.find(it->second); g != gets_.end()) {
        g->second->set_exception(error);
        gets_.erase(g);
    }
    by_seq_.erase(it);
}

void PendingRequests::fail_all(const std::string& why) {
    for (auto& [id, promise] : fences_)
        promise->set_exception(std::make_exception_ptr(UnavailableError(why)));
    for (auto& [name, promise] : gets_)
        promise->set_exception(std::make_exception_ptr(UnavailableError(why)));
    fences_.clear();
    gets_.clear();
    by_seq_.clear();
}

}  // namespace gpuops::rescale::detail
