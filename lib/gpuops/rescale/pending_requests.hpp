// The client's requests that wait for an answer (FENCE, GET): who waits, under which name and seq, and how each
// answer, refusal or lost connection settles them. Used on the client's I/O thread only.
#pragma once

#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpuops/rescale/protocol.hpp"

namespace gpuops::rescale::detail {

class PendingRequests {
public:
    using FencePromise = std::shared_ptr<std::promise<std::vector<KvEntry>>>;
    using GetPromise = std::shared_ptr<std::promise<std::string>>;

    /// The name a GET waits under: its GET_REPLY names the key and the member, not the request.
    [[nodiscard]] static std::string get_name(std::string_view key, MemberId member);

    void add_fence(const std::string& fence_id, std::uint64_t seq, FencePromise promise);
    void add_get(const std::string& name, std::uint64_t seq, GetPromise promise);
    /// The caller gave up (its timeout passed): a late answer is dropped.
    void forget_fence(const std::string& fence_id) { fences_.erase(fence_id); }
    void forget_get(const std::string& name) { gets_.erase(name); }

    void settle(const FenceDone& done);
    void settle(const GetReply& reply);
    /// An ERROR naming request `seq`: the fence or get it asked for fails with `why`.
    void refuse(std::uint64_t seq, const std::string& why);
    /// Every waiting request fails with `why` (the connection dropped, the worker is out).
    void fail_all(const std::string& why);

private:
    std::map<std::string, FencePromise> fences_;
    std::map<std::string, GetPromise> gets_;
    std::map<std::uint64_t, std::string> by_seq_;  ///< seq → the fence or get it asked for
};

}  // namespace gpuops::rescale::detail
