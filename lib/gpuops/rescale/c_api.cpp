// The C API over gpuops::rescale::Client: exceptions become return codes and a thread-local message.
#include "gpuops/rescale/c_api.h"

#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "gpuops/core/error.hpp"
#include "gpuops/rescale/client.hpp"

using gpuops::rescale::Client;
using gpuops::rescale::ClientState;
using gpuops::rescale::MemberView;

struct gpuops_rescale {
    std::unique_ptr<Client> client;
    gpuops_rescale_callbacks_t callbacks{};
    std::uint64_t barrier_epoch = 0;  ///< barriers are numbered per epoch, the same way by every member
    std::uint64_t barriers = 0;
};

namespace {

thread_local std::string last_error = "no error";

int fail(int code, std::string message) {
    last_error = std::move(message);
    return code;
}

/// Runs `body` and maps what it throws to a code.
template <typename F>
int guarded(F&& body) {
    try {
        return body();
    } catch (const gpuops::TimeoutError& e) {
        return fail(GPUOPS_RESCALE_ETIMEOUT, e.what());
    } catch (const gpuops::UsageError& e) {
        return fail(GPUOPS_RESCALE_EINVAL, e.what());
    } catch (const gpuops::UnavailableError& e) {
        return fail(GPUOPS_RESCALE_EFAILED, e.what());
    } catch (const std::exception& e) {
        return fail(GPUOPS_RESCALE_EFAILED, e.what());
    }
}

int rank_in(const MemberView& view, std::optional<gpuops::rescale::MemberId> id) {
    if (!id) return -1;
    const auto rank = view.rank_of(*id);
    return rank ? static_cast<int>(*rank) : -1;
}

/// The member id of `rank` in the committed view; throws UsageError when there is none.
gpuops::rescale::MemberId member_at(const Client& client, int rank) {
    const MemberView view = client.view();
    if (rank < 0 || static_cast<std::size_t>(rank) >= view.size())
        throw gpuops::UsageError(fmt::format("rank {} is not in the view of size {}", rank, view.size()));
    return view.members[static_cast<std::size_t>(rank)];
}

int copy_out(const std::string& bytes, void* buf, size_t cap, size_t* len) {
    if (len != nullptr) *len = bytes.size();
    if (bytes.size() > cap) return fail(GPUOPS_RESCALE_EINVAL, fmt::format("the value needs {} bytes", bytes.size()));
    if (!bytes.empty()) std::memcpy(buf, bytes.data(), bytes.size());
    return GPUOPS_RESCALE_OK;
}

gpuops::rescale::ClientCallbacks wrap(gpuops_rescale* h) {
    gpuops::rescale::ClientCallbacks cb;
    const gpuops_rescale_callbacks_t& c = h->callbacks;
    if (c.on_transition != nullptr) {
        cb.on_transition = [h](const gpuops::rescale::Transition& t, bool victim) {
            h->callbacks.on_transition(h->callbacks.user, t.transition_id, victim ? 1 : 0);
        };
    }
    if (c.on_prepare != nullptr) {
        cb.on_prepare = [h](const MemberView& next, const gpuops::rescale::Prepare&) -> std::string {
            const int rc = h->callbacks.on_prepare(h->callbacks.user, next.epoch, rank_in(next, h->client->member_id()),
                                                   static_cast<int>(next.size()));
            return rc == 0 ? std::string() : fmt::format("the runtime refused the view (code {})", rc);
        };
    }
    if (c.on_commit != nullptr) {
        cb.on_commit = [h](const MemberView& view) {
            h->callbacks.on_commit(h->callbacks.user, view.epoch, rank_in(view, h->client->member_id()),
                                   static_cast<int>(view.size()));
        };
    }
    if (c.on_abort != nullptr) {
        cb.on_abort = [h](const gpuops::rescale::Abort& a) {
            h->callbacks.on_abort(h->callbacks.user, a.epoch.value_or(0));
        };
    }
    if (c.on_exit != nullptr) {
        cb.on_exit = [h](ClientState, const std::string& reason) {
            h->callbacks.on_exit(h->callbacks.user, reason.c_str());
        };
    }
    return cb;
}

}  // namespace

extern "C" {

int gpuops_rescale_init(const char* coord, const char* job, const char* token, const char* worker_id, const void* addr,
                        size_t addr_len, const gpuops_rescale_callbacks_t* callbacks, int64_t timeout_ms,
                        gpuops_rescale_t** out) {
    if (coord == nullptr || job == nullptr || token == nullptr || worker_id == nullptr || out == nullptr ||
        (addr == nullptr && addr_len > 0) || timeout_ms < 0)
        return fail(GPUOPS_RESCALE_EINVAL, "gpuops_rescale_init: a required argument is NULL or negative");
    *out = nullptr;
    return guarded([&]() -> int {
        auto handle = std::make_unique<gpuops_rescale>();
        if (callbacks != nullptr) handle->callbacks = *callbacks;
        gpuops::rescale::ClientOptions options;
        options.coord = coord;
        options.job = job;
        options.token = token;
        options.worker_id = worker_id;
        options.addr_b64 = gpuops::rescale::base64_encode(std::string_view(static_cast<const char*>(addr), addr_len));
        handle->client = std::make_unique<Client>(std::move(options), wrap(handle.get()));
        handle->client->start();
        if (!handle->client->wait_active(std::chrono::milliseconds(timeout_ms))) {
            const ClientState s = handle->client->state();
            const bool gone = s == ClientState::evicted || s == ClientState::released || s == ClientState::stopped;
            return fail(gone ? GPUOPS_RESCALE_EGONE : GPUOPS_RESCALE_ETIMEOUT,
                        fmt::format("not a member of a committed view after {} ms (state {})", timeout_ms,
                                    gpuops::rescale::to_string(s)));
        }
        *out = handle.release();
        return GPUOPS_RESCALE_OK;
    });
}

void gpuops_rescale_fini(gpuops_rescale_t* handle) {
    if (handle == nullptr) return;
    handle->client->stop("finished");
    delete handle;  // NOLINT(cppcoreguidelines-owning-memory): the C API owns the handle by pointer
}

int gpuops_rescale_rank(const gpuops_rescale_t* handle) {
    if (handle == nullptr) return fail(GPUOPS_RESCALE_EINVAL, "NULL handle");
    return rank_in(handle->client->view(), handle->client->member_id());
}

int gpuops_rescale_size(const gpuops_rescale_t* handle) {
    if (handle == nullptr) return fail(GPUOPS_RESCALE_EINVAL, "NULL handle");
    return static_cast<int>(handle->client->view().size());
}

uint64_t gpuops_rescale_epoch(const gpuops_rescale_t* handle) {
    return handle == nullptr ? 0 : handle->client->view().epoch;
}

int gpuops_rescale_peer_addr(const gpuops_rescale_t* handle, int rank, void* buf, size_t cap, size_t* len) {
    if (handle == nullptr || (buf == nullptr && cap > 0)) return fail(GPUOPS_RESCALE_EINVAL, "NULL argument");
    return guarded([&]() -> int {
        const MemberView view = handle->client->view();
        const auto id = member_at(*handle->client, rank);
        const auto bytes = gpuops::rescale::base64_decode(view.addr_b64.at(id));
        if (!bytes) return fail(GPUOPS_RESCALE_EFAILED, fmt::format("the address of rank {} is not base64", rank));
        return copy_out(*bytes, buf, cap, len);
    });
}

int gpuops_rescale_put(gpuops_rescale_t* handle, const char* key, const void* value, size_t len) {
    if (handle == nullptr || key == nullptr || (value == nullptr && len > 0))
        return fail(GPUOPS_RESCALE_EINVAL, "NULL argument");
    return guarded([&]() -> int {
        handle->client->put(key,
                            gpuops::rescale::base64_encode(std::string_view(static_cast<const char*>(value), len)));
        return GPUOPS_RESCALE_OK;
    });
}

int gpuops_rescale_barrier(gpuops_rescale_t* handle, int64_t timeout_ms) {
    if (handle == nullptr || timeout_ms < 0) return fail(GPUOPS_RESCALE_EINVAL, "NULL handle or negative timeout");
    return guarded([&]() -> int {
        // Each barrier of an epoch needs its own fence id, and every member numbers its barriers the same way.
        const std::uint64_t epoch = handle->client->view().epoch;
        if (epoch != handle->barrier_epoch) {
            handle->barrier_epoch = epoch;
            handle->barriers = 0;
        }
        const std::string id = fmt::format("barrier-{}-{}", epoch, ++handle->barriers);
        (void)handle->client->fence(id, false, std::chrono::milliseconds(timeout_ms));
        return GPUOPS_RESCALE_OK;
    });
}

int gpuops_rescale_get(gpuops_rescale_t* handle, const char* key, int rank, void* buf, size_t cap, size_t* len,
                       int64_t timeout_ms) {
    if (handle == nullptr || key == nullptr || (buf == nullptr && cap > 0) || timeout_ms < 0)
        return fail(GPUOPS_RESCALE_EINVAL, "NULL argument or negative timeout");
    return guarded([&]() -> int {
        const std::string b64 =
            handle->client->get(key, member_at(*handle->client, rank), std::chrono::milliseconds(timeout_ms));
        const auto bytes = gpuops::rescale::base64_decode(b64);
        if (!bytes) return fail(GPUOPS_RESCALE_EFAILED, fmt::format("the value of {} is not base64", key));
        return copy_out(*bytes, buf, cap, len);
    });
}

int gpuops_rescale_safe_point(gpuops_rescale_t* handle) {
    if (handle == nullptr) return fail(GPUOPS_RESCALE_EINVAL, "NULL handle");
    handle->client->safe_point();
    return GPUOPS_RESCALE_OK;
}

int gpuops_rescale_drained(gpuops_rescale_t* handle) {
    if (handle == nullptr) return fail(GPUOPS_RESCALE_EINVAL, "NULL handle");
    handle->client->drained();
    return GPUOPS_RESCALE_OK;
}

int gpuops_rescale_wait_epoch_after(gpuops_rescale_t* handle, uint64_t epoch, int64_t timeout_ms) {
    if (handle == nullptr || timeout_ms < 0) return fail(GPUOPS_RESCALE_EINVAL, "NULL handle or negative timeout");
    if (handle->client->wait_epoch_after(epoch, std::chrono::milliseconds(timeout_ms))) return GPUOPS_RESCALE_OK;
    const ClientState s = handle->client->state();
    if (s == ClientState::evicted || s == ClientState::released || s == ClientState::stopped)
        return fail(GPUOPS_RESCALE_EGONE, fmt::format("the worker is {}", gpuops::rescale::to_string(s)));
    return fail(GPUOPS_RESCALE_ETIMEOUT, fmt::format("no view after epoch {} within {} ms", epoch, timeout_ms));
}

const char* gpuops_rescale_last_error(void) { return last_error.c_str(); }

}  // extern "C"
