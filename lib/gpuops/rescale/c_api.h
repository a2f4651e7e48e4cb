/* The rescale client for runtimes written in C, shaped like the PMI shim a runtime's bootstrap already calls
 * (Charm++'s runtime_init / runtime_kvs_put / runtime_kvs_get / runtime_barrier), plus the rescale callbacks.
 * Every call returns GPUOPS_RESCALE_OK or a negative code; gpuops_rescale_last_error() says why, in one line.
 * A handle is used from one thread at a time; callbacks run on the client's own thread. */
#ifndef GPUOPS_RESCALE_C_API_H
#define GPUOPS_RESCALE_C_API_H

#include <stddef.h> /* NOLINT(modernize-deprecated-headers): a C header */
#include <stdint.h> /* NOLINT(modernize-deprecated-headers) */

#ifdef __cplusplus
extern "C" {
#endif

enum {
    GPUOPS_RESCALE_OK = 0,
    GPUOPS_RESCALE_EINVAL = -1,   /* a bad argument (NULL, an address that is not HOST:PORT, a short buffer) */
    GPUOPS_RESCALE_ETIMEOUT = -2, /* the timeout passed */
    GPUOPS_RESCALE_EGONE = -3,    /* this worker is out of the group (released, evicted, job closed) */
    GPUOPS_RESCALE_EFAILED = -4   /* the coordinator refused the request or the fence failed */
};

typedef struct gpuops_rescale gpuops_rescale_t; /* NOLINT(modernize-use-using): C has no using */

typedef struct { /* NOLINT(modernize-use-using) */
    /* A transition started: reach a safe point, then call gpuops_rescale_safe_point() (victim != 0:
     * migrate work away, then gpuops_rescale_drained()). NULL: the client does so at once. */
    void (*on_transition)(void* user, uint64_t transition_id, int victim);
    /* A proposed view: reconcile endpoints; return 0 on success (ACK), nonzero to refuse it (NACK). */
    int (*on_prepare)(void* user, uint64_t epoch, int rank, int size);
    /* The view is committed: switch to it. */
    void (*on_commit)(void* user, uint64_t epoch, int rank, int size);
    /* The proposal was abandoned: undo what on_prepare did. */
    void (*on_abort)(void* user, uint64_t epoch);
    /* Out of the group: stop using it. */
    void (*on_exit)(void* user, const char* reason);
    void* user;
} gpuops_rescale_callbacks_t;

/* Connects to the coordinator at `coord` (HOST:PORT), registers as `worker_id` with this process's endpoint
 * address (`addr`, `addr_len` bytes, opaque), and waits up to `timeout_ms` to be a member of a committed view.
 * `callbacks` may be NULL. On success *out is the handle. */
int gpuops_rescale_init(const char* coord, const char* job, const char* token, const char* worker_id, const void* addr,
                        size_t addr_len, const gpuops_rescale_callbacks_t* callbacks, int64_t timeout_ms,
                        gpuops_rescale_t** out);
/* Leaves the group (best effort) and frees the handle. */
void gpuops_rescale_fini(gpuops_rescale_t* handle);

/* The committed view: this worker's rank, the size and the epoch. */
int gpuops_rescale_rank(const gpuops_rescale_t* handle);
int gpuops_rescale_size(const gpuops_rescale_t* handle);
uint64_t gpuops_rescale_epoch(const gpuops_rescale_t* handle);
/* The endpoint address of `rank` in the committed view, into `buf` (capacity `cap`); *len is its length. */
int gpuops_rescale_peer_addr(const gpuops_rescale_t* handle, int rank, void* buf, size_t cap, size_t* len);

/* The key-value calls of the current epoch (runtime_kvs_put / runtime_barrier / runtime_kvs_get). */
int gpuops_rescale_put(gpuops_rescale_t* handle, const char* key, const void* value, size_t len);
int gpuops_rescale_barrier(gpuops_rescale_t* handle, int64_t timeout_ms);
int gpuops_rescale_get(gpuops_rescale_t* handle, const char* key, int rank, void* buf, size_t cap, size_t* len,
                       int64_t timeout_ms);

/* The transition in progress: this worker reached its safe point / drained its work. */
int gpuops_rescale_safe_point(gpuops_rescale_t* handle);
int gpuops_rescale_drained(gpuops_rescale_t* handle);
/* Blocks until a view newer than `epoch` is committed (or the worker is out, or the timeout passes). */
int gpuops_rescale_wait_epoch_after(gpuops_rescale_t* handle, uint64_t epoch, int64_t timeout_ms);

/* Why the last failed call on this thread failed; never NULL. */
const char* gpuops_rescale_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* GPUOPS_RESCALE_C_API_H */
