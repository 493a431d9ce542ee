/* opd/client.h: the C client library of the opd daemon (libopd_client, pkg-config
 * opd-client): connections, tensors held by the daemon, boxed and typed operator calls,
 * synchronous and pipelined asynchronous forms. The protocol is proto/opd.proto.
 *
 * [Note: Using the client]
 *
 *   opd_client *c;
 *   if (opd_client_connect("tcp://127.0.0.1:7878", NULL, &c) != 0)
 *     fprintf(stderr, "%s\n", opd_client_last_error());
 *   int64_t shape[] = {2, 2};
 *   float xa[4] = {1, 2, 3, 4}, xb[4] = {10, 20, 30, 40}, sum[4];
 *   opd_client_tensor a, b, out;
 *   opd_client_upload(c, OPD_FLOAT32, shape, 2, xa, sizeof xa, NULL, &a);
 *   opd_client_upload(c, OPD_FLOAT32, shape, 2, xb, sizeof xb, NULL, &b);
 *   opd_add(c, a, b, NULL, &out);                        // alpha: the default, 1
 *   opd_client_download(c, out, sum, sizeof sum, NULL);
 *   opd_client_release(c, (opd_client_tensor[]){a, b, out}, 3);
 *   opd_client_close(c);
 *
 * Errors. Every fallible function returns 0 (or a non-negative count) on success and a
 * negative OPD_E* code of opd/error.h on failure:
 *   OPD_EINVAL     a bad argument or URL; a buffer too small for a download
 *   OPD_ENOENT     no daemon at the address (refused, no such socket, unknown host)
 *   OPD_ECANCELED  the client was closed; the request did not complete
 *   OPD_ESESSION   the session was lost after its hello: the daemon closed the connection,
 *                  died, or stopped answering (liveness_timeout_ms, call_timeout_ms); its
 *                  handles and graphs are gone and every pending and later request fails
 *   OPD_EUNAVAILABLE  no daemon of the address took the session (each draining)
 *   OPD_EBUSY      a timeout ran out; or a blocking call made from a callback
 *   OPD_ENOMEM     out of memory
 *   OPD_ERESOURCE  a request frame over the server's max_frame_bytes
 *   OPD_EINTERNAL  a protocol violation by the server, or an unexpected socket error
 * and for a request the server rejected, its ErrorCode mapped back: INVALID_ARGUMENT ->
 * OPD_EINVAL, NOT_FOUND -> OPD_ENOENT, UNIMPLEMENTED -> OPD_ENOTIMPL, RESOURCE_EXHAUSTED ->
 * OPD_ERESOURCE, INDEX_OUT_OF_RANGE -> OPD_EINDEX, CANCELLED -> OPD_ECANCELED, any other ->
 * OPD_EINTERNAL. A synchronous function that fails leaves a message for its thread in
 * opd_client_last_error() ("aten::add.Tensor: The size of tensor a (2) must match ..." for
 * a server error: the operator, then the server's message); a future keeps its own
 * (opd_future_error, opd_future_error_op). A server error leaves the session usable; a
 * lost connection fails every pending and later request with OPD_ESESSION and a message
 * naming the daemon ([Note: A lost session is final]).
 *
 * Tensors live in the daemon and are named by handles (opd_client_tensor), valid only on
 * the connection that made them; 0 is never a handle. Each call returns new handles for
 * its tensor results, views included; release them with opd_client_release (closing the
 * connection releases them all).
 *
 * [Note: Client thread safety]
 * Every function may be called from any thread, and one opd_client may be shared by many
 * threads, with these exceptions: opd_client_close must be called once, when no other
 * thread uses the client and from no callback; an opd_future may be waited on from
 * several threads, but opd_future_free must be its last use. There is no I/O thread: a
 * thread that waits (opd_future_wait*, opd_client_poll, opd_client_wait_all, a
 * synchronous call, or a submission blocked on the in-flight limit) runs the connection's
 * I/O for every thread while it waits, one thread at a time; the others sleep until their
 * requests complete or they take over. Submissions are written to the socket at once when
 * it can take them, otherwise by the next waiting thread, so a single-threaded program
 * must wait (or poll) to make progress.
 *
 * Callbacks run on the thread doing the I/O, in completion order (which is submission
 * order), without any lock held. A callback may read its future (opd_future_*, except
 * wait and free) and submit asynchronous requests on the same client (those never block
 * there, even over the in-flight limit); a blocking call on the same client fails with
 * OPD_EBUSY there.
 *
 * Memory: a request frame is built once and sent; uploads are written from the caller's
 * buffer and downloads read into it without copies, so those buffers must stay valid
 * until the request completes. At most max_in_flight requests (the server's limit, or
 * opd_client_options.max_in_flight) are pending at once; a submission beyond it waits.
 * Response frames are limited to the server's max_frame_bytes (and the client's
 * max_response_frame_bytes) and decoded with an allocator bounded to 32 times the frame.
 */
#ifndef OPD_CLIENT_H
#define OPD_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opd/dtype.h" /* opd_dtype: OPD_FLOAT32, ... (c10's ScalarType values) */
#include "opd/error.h" /* OPD_E* codes (only the codes: the client has its own messages) */

#ifdef __cplusplus
extern "C" {
#endif

#define OPD_CLIENT_PROTOCOL_VERSION 1
#define OPD_CLIENT_MAX_DIMS         64
#define OPD_CLIENT_DEFAULT_URL      "tcp://127.0.0.1:7470" /* the daemon's default */

typedef struct opd_client opd_client;
typedef struct opd_future opd_future;

/* A tensor held by the daemon: a handle of this connection's session; 0 means none. */
typedef uint64_t opd_client_tensor;

/* Device types are c10 backend components, as in the protocol. */
#define OPD_CLIENT_DEVICE_CPU  0
#define OPD_CLIENT_DEVICE_CUDA 1
#define OPD_CLIENT_DEVICE_META 10

typedef struct opd_client_device {
  int32_t type;  /* OPD_CLIENT_DEVICE_* */
  int32_t index; /* -1: the default device of that type */
} opd_client_device;

/* ---- values of boxed calls ---- */

typedef enum opd_client_value_kind {
  OPD_CV_NONE,
  OPD_CV_BOOL,
  OPD_CV_INT,
  OPD_CV_DOUBLE,
  OPD_CV_STR,
  OPD_CV_TENSOR,
  OPD_CV_INTS,
  OPD_CV_DOUBLES,
  OPD_CV_BOOLS,
  OPD_CV_TENSORS,     /* Tensor[] */
  OPD_CV_OPT_TENSORS, /* Tensor?[]: handle 0 is None */
  OPD_CV_DTYPE,
  OPD_CV_DEVICE,
  OPD_CV_LITERAL, /* a small tensor passed by value */
} opd_client_value_kind;

/* A small constant tensor passed by value (at most the server's max_literal_bytes). */
typedef struct opd_client_literal {
  int dtype; /* opd_dtype */
  int ndim;
  const int64_t *shape;
  const void *data; /* little-endian, row-major */
  size_t nbytes;    /* product(shape) * element size */
} opd_client_literal;

/* One argument or result of a boxed call. `len` is the element count of a list and the
 * byte length of a string. In results every pointer points into memory the future owns. */
typedef struct opd_client_value {
  opd_client_value_kind kind;
  size_t len;
  union {
    bool b;
    int64_t i;
    double d;
    const char *s; /* NUL-terminated */
    opd_client_tensor tensor;
    const int64_t *ints;
    const double *doubles;
    const bool *bools;
    const opd_client_tensor *tensors;
    int dtype;
    opd_client_device device;
    const opd_client_literal *literal;
  } u;
} opd_client_value;

static inline opd_client_value opd_cv_none(void) {
  return (opd_client_value){.kind = OPD_CV_NONE};
}
static inline opd_client_value opd_cv_bool(bool v) {
  return (opd_client_value){.kind = OPD_CV_BOOL, .u.b = v};
}
static inline opd_client_value opd_cv_int(int64_t v) {
  return (opd_client_value){.kind = OPD_CV_INT, .u.i = v};
}
static inline opd_client_value opd_cv_double(double v) {
  return (opd_client_value){.kind = OPD_CV_DOUBLE, .u.d = v};
}
/* s must be NUL-terminated. */
opd_client_value opd_cv_str(const char *s);
static inline opd_client_value opd_cv_tensor(opd_client_tensor t) {
  return (opd_client_value){.kind = OPD_CV_TENSOR, .u.tensor = t};
}
static inline opd_client_value opd_cv_ints(const int64_t *v, size_t n) {
  return (opd_client_value){.kind = OPD_CV_INTS, .len = n, .u.ints = v};
}
static inline opd_client_value opd_cv_doubles(const double *v, size_t n) {
  return (opd_client_value){.kind = OPD_CV_DOUBLES, .len = n, .u.doubles = v};
}
static inline opd_client_value opd_cv_bools(const bool *v, size_t n) {
  return (opd_client_value){.kind = OPD_CV_BOOLS, .len = n, .u.bools = v};
}
static inline opd_client_value opd_cv_tensors(const opd_client_tensor *v, size_t n) {
  return (opd_client_value){.kind = OPD_CV_TENSORS, .len = n, .u.tensors = v};
}
static inline opd_client_value opd_cv_opt_tensors(const opd_client_tensor *v, size_t n) {
  return (opd_client_value){.kind = OPD_CV_OPT_TENSORS, .len = n, .u.tensors = v};
}
static inline opd_client_value opd_cv_dtype(int dtype) {
  return (opd_client_value){.kind = OPD_CV_DTYPE, .u.dtype = dtype};
}
static inline opd_client_value opd_cv_device(int32_t type, int32_t index) {
  return (opd_client_value){.kind = OPD_CV_DEVICE, .u.device = {type, index}};
}
static inline opd_client_value opd_cv_literal(const opd_client_literal *l) {
  return (opd_client_value){.kind = OPD_CV_LITERAL, .u.literal = l};
}

/* A Scalar argument: an int, a double or a bool. Its kind matters for type promotion, as in
 * PyTorch: int64 tensor + int 2 is int64, + double 2.0 is float32. */
typedef struct opd_client_scalar {
  opd_client_value_kind kind; /* OPD_CV_INT, OPD_CV_DOUBLE or OPD_CV_BOOL */
  union {
    bool b;
    int64_t i;
    double d;
  } u;
} opd_client_scalar;

static inline opd_client_scalar opd_cs_int(int64_t v) {
  return (opd_client_scalar){.kind = OPD_CV_INT, .u.i = v};
}
static inline opd_client_scalar opd_cs_double(double v) {
  return (opd_client_scalar){.kind = OPD_CV_DOUBLE, .u.d = v};
}
static inline opd_client_scalar opd_cs_bool(bool v) {
  return (opd_client_scalar){.kind = OPD_CV_BOOL, .u.b = v};
}
static inline opd_client_value opd_cv_scalar(opd_client_scalar s) {
  opd_client_value v = {.kind = s.kind};
  if (s.kind == OPD_CV_BOOL)
    v.u.b = s.u.b;
  else if (s.kind == OPD_CV_INT)
    v.u.i = s.u.i;
  else
    v.u.d = s.u.d;
  return v;
}

/* Pointers to temporaries for the optional arguments of typed calls (see below):
 * opd_sum_dim_intlist(c, x, (int64_t[]){1}, 1, OPD_BOOL(true), OPD_DTYPE(OPD_FLOAT64), &r). */
#define OPD_INT(v)           (&(const int64_t){(v)})
#define OPD_DOUBLE(v)        (&(const double){(v)})
#define OPD_BOOL(v)          (&(const bool){(v)})
#define OPD_DTYPE(v)         (&(const int){(v)})
#define OPD_SCALAR_INT(v)    (&(const opd_client_scalar){.kind = OPD_CV_INT, .u.i = (v)})
#define OPD_SCALAR_DOUBLE(v) (&(const opd_client_scalar){.kind = OPD_CV_DOUBLE, .u.d = (v)})
#define OPD_SCALAR_BOOL(v)   (&(const opd_client_scalar){.kind = OPD_CV_BOOL, .u.b = (v)})
#define OPD_DEVICE(t, i)     (&(const opd_client_device){(t), (i)})

/* ---- connections ---- */

/* A session's class for sharing the daemon's workers (Hello.priority in proto/opd.proto):
 * the daemon grants at most its max_priority (docs/CONFIG.md). */
typedef enum opd_client_priority {
  OPD_CLIENT_PRIORITY_NORMAL = 0,
  OPD_CLIENT_PRIORITY_LOW = 1, /* background work: about half normal's share when both wait */
  OPD_CLIENT_PRIORITY_HIGH = 2 /* about twice normal's share */
} opd_client_priority;

/* Which daemon of an address that names several gets the session ([Note: Placement]). */
typedef enum opd_client_placement {
  OPD_CLIENT_PLACE_FIRST = 0,    /* the first that takes it, in the address's order */
  OPD_CLIENT_PLACE_RANDOM = 1,   /* the first that takes it, in a random order */
  OPD_CLIENT_PLACE_LEAST_LOADED, /* the less loaded of two random ones (power of two choices) */
  OPD_CLIENT_PLACE_AFFINITY      /* by affinity_key: rendezvous hashing with bounded load */
} opd_client_placement;

typedef struct opd_client_options {
  const char *client_name; /* sent in Hello; NULL: "opd-client" */
  /* the whole connect, every candidate daemon and its hello included; 0: 10000; negative:
   * no limit */
  int connect_timeout_ms;
  uint32_t max_in_flight;            /* 0: the server's limit (or 256 if it has none) */
  uint64_t max_response_frame_bytes; /* 0: 64 MiB; lowered to the server's max_frame_bytes */
  opd_client_priority priority;      /* asked for in Hello (0: normal) */
  /* [Note: Batched writes] (connection.c). 0: a submission is written at once (when the
   * socket takes it). N > 0: submissions are held and written together, in one system
   * call, once N bytes of them wait, or at a submission that finds the oldest held one
   * write_batch_us old or more, or when a thread waits or polls on the client, or at
   * opd_client_flush. */
  uint32_t write_batch_bytes;
  uint32_t write_batch_us;
  opd_client_placement placement; /* 0: first */
  /* OPD_CLIENT_PLACE_AFFINITY's key (a model's name: sessions of one key meet on one daemon,
   * where its graphs are cached); required with it, ignored otherwise */
  const char *affinity_key;
  /* a TCP connection whose daemon has not acknowledged for this long is lost (TCP
   * keepalive and TCP_USER_TIMEOUT, [Note: Never hang]); 0: 30000; negative: off */
  int liveness_timeout_ms;
  /* the call deadline: the longest a request may stay unanswered after its submission;
   * past it the client ends the session, failing every pending request with OPD_ESESSION
   * (checked whenever the client runs its I/O: [Note: Never hang]); 0 or negative: none */
  int call_timeout_ms;
} opd_client_options;

/* One device type's memory in a daemon's load. */
typedef struct opd_client_device_load {
  int32_t type;  /* OPD_CLIENT_DEVICE_* */
  int32_t index; /* -1: every device of the type together */
  uint64_t bytes_held;
  uint64_t bytes_limit; /* 0: no limit */
} opd_client_device_load;

#define OPD_CLIENT_MAX_DEVICE_LOADS 8

/* What the server said in its HelloReply. */
typedef struct opd_client_server_info {
  uint32_t protocol_version;
  char server[64]; /* "opd 0.1.0" (truncated to fit) */
  uint64_t max_frame_bytes;
  uint64_t max_literal_bytes;
  uint64_t max_handles;
  uint64_t max_bytes_held;
  uint32_t max_in_flight;
  opd_client_priority priority; /* the class granted */
  /* its load when it answered (HelloReply.load): sessions other than this one, jobs queued
   * or running, whether it drains, memory per device type (the first
   * OPD_CLIENT_MAX_DEVICE_LOADS) */
  uint64_t sessions;
  uint64_t jobs_queued;
  bool draining;
  size_t num_devices;
  opd_client_device_load devices[OPD_CLIENT_MAX_DEVICE_LOADS];
} opd_client_server_info;

/* Connects and says hello. url names one daemon or several:
 *   tcp://HOST:PORT     a name (every address it resolves to, IPv4 and IPv6), an IPv4
 *                       address, or an IPv6 one in brackets: tcp://[::1]:7878
 *   tcp://H1:P1,H2:P2   a list, each resolved the same way
 *   srv://NAME          the DNS SRV records of NAME (_rpc._tcp.opd.ns.svc.cluster.local):
 *                       their targets and ports, by priority
 *   unix://PATH         one daemon's socket (unix:///run/opd.sock)
 * options (may be NULL) choose the placement among several ([Note: Placement]). A daemon
 * that refuses, does not answer in time or drains is passed over for the next, within
 * connect_timeout_ms. On failure *out is NULL: OPD_EINVAL (bad URL), OPD_ENOENT (no daemon
 * there, or a name that does not resolve), OPD_EBUSY (timeout), OPD_EUNAVAILABLE (every
 * daemon drains), or the server's refusal; the message names each daemon tried and why it
 * was passed over. */
int opd_client_connect(const char *url, const opd_client_options *options, opd_client **out);
/* The daemon the session landed on: "tcp://10.0.0.3:7470", "tcp://[::1]:7470",
 * "unix:///run/opd.sock" (numeric, as connected), or "" when opd_client_connect_fd was
 * given a socket that is neither. */
const char *opd_client_endpoint(const opd_client *c);
/* The placement named "first", "random", "least_loaded" or "affinity": 0, or OPD_EINVAL. */
int opd_client_placement_parse(const char *name, opd_client_placement *out);
/* The same over a connected stream socket the client takes over (and closes). */
int opd_client_connect_fd(int fd, const opd_client_options *options, opd_client **out);
/* Cancels the requests still pending (OPD_ECANCELED; their callbacks run), closes the
 * connection (the daemon releases the session's handles) and frees the client once the
 * caller's futures are freed too. NULL is a no-op. See [Note: Client thread safety]. */
void opd_client_close(opd_client *c);
const opd_client_server_info *opd_client_server(const opd_client *c);
/* False once the connection is lost (every request then fails) or the client closed. */
bool opd_client_connected(opd_client *c);

/* The message of the last failure of a synchronous client function on this thread ("" if
 * none), and its code. */
const char *opd_client_last_error(void);
int opd_client_last_error_code(void);
/* "invalid argument" for OPD_EINVAL; "EINVAL" for OPD_EINVAL. */
const char *opd_client_strerror(int err);
const char *opd_client_err_name(int err);
/* Element size of an opd_dtype (0 for an invalid one). */
size_t opd_client_dtype_size(int dtype);

/* ---- futures ---- */

/* Runs when a request completes; see [Note: Client thread safety]. */
typedef void (*opd_future_cb)(opd_future *f, void *user);

/* Every asynchronous function takes `cb` (may be NULL), `user` and `out`: with `out`, the
 * caller gets the future and frees it with opd_future_free; without (NULL), the library
 * frees it once `cb` has run (fire-and-forget). On a failed submission (a negative return)
 * nothing is sent, cb never runs and *out is NULL. */

/* Waits for completion (running the connection's I/O meanwhile): the request's result
 * code, 0 or a negative OPD_E* code. */
int opd_future_wait(opd_future *f);
/* The same with a limit: OPD_EBUSY if it has not completed within timeout_ms. */
int opd_future_wait_for(opd_future *f, int timeout_ms);
bool opd_future_done(const opd_future *f);
/* Waits for a pending future, then frees it. NULL is a no-op. */
void opd_future_free(opd_future *f);
/* The result code once done (OPD_EBUSY before). */
int opd_future_status(const opd_future *f);
/* The error message ("" on success): the server's, or the client's own. */
const char *opd_future_error(const opd_future *f);
/* The operator the server names in its error ("" if none). */
const char *opd_future_error_op(const opd_future *f);
/* The results of a successful call (tensors as new handles), valid until opd_future_free. */
const opd_client_value *opd_future_results(const opd_future *f, size_t *num_results);
/* Result i of a successful call, which must be a Tensor: its handle, or 0. */
opd_client_tensor opd_future_tensor(const opd_future *f, size_t i);
/* The handle an upload made (0 before success). */
opd_client_tensor opd_future_handle(const opd_future *f);

/* Runs the connection's I/O until a request completes or timeout_ms passes (0: only what
 * is ready; negative: no limit), running callbacks: the number of requests completed (0 on
 * timeout, or when another thread runs the I/O meanwhile; requests the callbacks submit do
 * not change it), or the connection's error once it is lost and nothing completed. */
int opd_client_poll(opd_client *c, int timeout_ms);
/* Waits until every request submitted so far has completed: 0, or the connection's error
 * once it is lost (its requests then fail: OPD_ECANCELED, or the server's code when it
 * closed the session with an error). */
int opd_client_wait_all(opd_client *c);
/* Requests submitted and not yet completed (one whose callback is running counts until it
 * returns). */
size_t opd_client_pending(opd_client *c);
/* For an application that waits on several clients (or other descriptors) in its own
 * event loop: the connection's socket, to be watched for readability, and for
 * writability while opd_client_wants_write is true (a request the socket did not take
 * whole at submission); when it is ready, opd_client_poll(c, 0) runs the I/O and the
 * callbacks. The application must not read, write or close the descriptor itself. */
int opd_client_fd(const opd_client *c);
bool opd_client_wants_write(opd_client *c);
/* Writes the submissions held by batching (opd_client_options.write_batch_bytes) now, as
 * far as the socket takes them without blocking; the rest goes with the next wait or poll.
 * 0, or the connection's error once it is lost. A no-op from a callback (the thread running
 * the I/O writes them when its callbacks return). */
int opd_client_flush(opd_client *c);

/* ---- tensors ---- */

/* A download's metadata: the tensor's dtype and shape, and nbytes (product(shape) * element
 * size) of contiguous row-major data. */
typedef struct opd_client_tensor_info {
  int dtype;
  int ndim;
  int64_t shape[OPD_CLIENT_MAX_DIMS];
  uint64_t nbytes;
} opd_client_tensor_info;

/* Makes a tensor in the daemon from nbytes of contiguous row-major data (nbytes must be
 * product(shape) * element size) on `device` (NULL: the CPU). */
int opd_client_upload(opd_client *c, int dtype, const int64_t *shape, int ndim, const void *data,
                      size_t nbytes, const opd_client_device *device, opd_client_tensor *out);
/* `data` must stay valid until the future completes. */
int opd_client_upload_async(opd_client *c, int dtype, const int64_t *shape, int ndim,
                            const void *data, size_t nbytes, const opd_client_device *device,
                            opd_future_cb cb, void *user, opd_future **out);

/* Copies tensor t, contiguous row-major, into buf (capacity bytes); info (may be NULL)
 * gets its metadata, also when buf is too small (OPD_EINVAL). */
int opd_client_download(opd_client *c, opd_client_tensor t, void *buf, size_t capacity,
                        opd_client_tensor_info *info);
/* The same into a new malloc'd buffer (*data; free() it; NULL when nbytes is 0). */
int opd_client_download_alloc(opd_client *c, opd_client_tensor t, opd_client_tensor_info *info,
                              void **data);
/* buf must stay valid until the future completes; buf NULL: the library allocates (take
 * it with opd_future_take_data). */
int opd_client_download_async(opd_client *c, opd_client_tensor t, void *buf, size_t capacity,
                              opd_future_cb cb, void *user, opd_future **out);
/* A completed download's metadata (NULL before the DownloadReply arrived). */
const opd_client_tensor_info *opd_future_tensor_info(const opd_future *f);
/* The buffer a download allocated; the caller now owns it (free()). NULL if none. */
void *opd_future_take_data(opd_future *f);

/* Drops handles (an unknown handle is an error; the others are still released). */
int opd_client_release(opd_client *c, const opd_client_tensor *handles, size_t n);
int opd_client_release_async(opd_client *c, const opd_client_tensor *handles, size_t n,
                             opd_future_cb cb, void *user, opd_future **out);

/* ---- the session ---- */

/* A change of the session's thread-local dispatch sets from their defaults (see
 * DispatchState in proto/opd.proto): keys added to the include and exclude sets, and keys
 * removed from them (PyTorch's dispatch key names: "AutogradFunctionality", "Meta",
 * "AutocastCPU"). */
typedef struct opd_client_dispatch_change {
  const char *const *include;
  size_t num_include;
  const char *const *exclude;
  size_t num_exclude;
  const char *const *remove_include;
  size_t num_remove_include;
  const char *const *remove_exclude;
  size_t num_remove_exclude;
} opd_client_dispatch_change;

/* Sets the session's dispatch sets to the defaults changed by `change`; later calls of this
 * session run with them (each change replaces the previous one). */
int opd_client_change_dispatch_state(opd_client *c, const opd_client_dispatch_change *change);
int opd_client_change_dispatch_state_async(opd_client *c, const opd_client_dispatch_change *change,
                                           opd_future_cb cb, void *user, opd_future **out);
/* The same with keys added only: include and exclude on top of the defaults. */
int opd_client_set_dispatch_state(opd_client *c, const char *const *include, size_t num_include,
                                  const char *const *exclude, size_t num_exclude);
int opd_client_set_dispatch_state_async(opd_client *c, const char *const *include,
                                        size_t num_include, const char *const *exclude,
                                        size_t num_exclude, opd_future_cb cb, void *user,
                                        opd_future **out);
/* Waits until the session's earlier work is finished on every device. */
int opd_client_synchronize(opd_client *c);
/* A round trip with `len` bytes echoed back (and checked: a different echo completes the
 * future with OPD_EINTERNAL). The payload is copied: the caller may reuse it at once. */
int opd_client_ping(opd_client *c, const void *payload, size_t len);
int opd_client_ping_async(opd_client *c, const void *payload, size_t len, opd_future_cb cb,
                          void *user, opd_future **out);

/* ---- calls ---- */

/* The boxed call: any operator by name ("aten::add.Tensor", overload included; also those
 * registered at run time), arguments in schema order, keyword-only ones positionally;
 * trailing arguments may be left out to take their defaults. Every result must be a Tensor:
 * up to max_outs handles go to outs, their count to *num_outs (may be NULL); results beyond
 * max_outs are released and the call fails with OPD_EINVAL. */
int opd_client_call(opd_client *c, const char *op, const opd_client_value *args, size_t nargs,
                    opd_client_tensor *outs, size_t max_outs, size_t *num_outs);
/* Results of any kind: opd_future_results. */
int opd_client_call_async(opd_client *c, const char *op, const opd_client_value *args, size_t nargs,
                          opd_future_cb cb, void *user, opd_future **out);

/* ---- graphs ----
 *
 * [Note: Graphs in the client]
 * A graph is a whole program of operator calls that the daemon validates, optimises and
 * compiles once and then runs as one request (proto/opd.proto, docs/GRAPHS.md). It is built
 * with an opd_graph_builder, in either of two ways:
 *
 *   capture: the typed calls you already have record nodes instead of making round trips
 *     opd_graph_builder *b;
 *     opd_graph_capture_begin(c, &b);
 *     opd_client_tensor x, w, h, y;
 *     opd_graph_input(b, OPD_FLOAT32, (int64_t[]){4, 8}, 2, NULL, false, &x);   // per run
 *     opd_graph_input(b, OPD_FLOAT32, (int64_t[]){8, 8}, 2, NULL, true, &w);    // a weight
 *     opd_mm(c, x, w, &h);          // recorded: h is a graph value, nothing is sent
 *     opd_relu(c, h, &y);
 *     opd_graph_capture_end(b);
 *     opd_client_graph g;
 *     opd_graph_define(b, &y, 1, &g, NULL);  // validated, optimised, compiled (or cached)
 *     opd_graph_builder_free(b);
 *     opd_graph_run(c, g, (opd_client_tensor[]){xt, wt}, 2, &out, 1, NULL);  // handles
 *
 *   boxed, for programs that build graphs from data: opd_graph_node(b, "aten::mm",
 *     args, nargs, &value), the arguments as for opd_client_call.
 *
 * [Note: Graph values]
 * While a graph is built, its inputs and the results of its nodes are graph values: an
 * opd_client_tensor with its top bit set, never a handle (handles stay below 2^63), holding
 * the value's position (input i is i, node j of a graph with k inputs is k + j) and which
 * result of the node it is (opd_graph_output; OPD_CLIENT_GRAPH_ALL_OUTPUTS: the whole list
 * a node returns, for a Tensor[] argument). A graph value means something only to the
 * builder that made it; a handle passed to a node is refused (a graph holds no handle:
 * make the tensor an input), and so is a graph value passed to a call that goes to the
 * daemon.
 *
 * Capture: between opd_graph_capture_begin(c, ...) and opd_graph_capture_end, the
 * synchronous calls on c from the thread that began it (the typed calls, opd_client_call)
 * are recorded into the builder and return graph values at once: one per result of a
 * typed call; opd_client_call, which does not know the operator's results, returns its
 * first (opd_graph_output gives the others). Their arguments are checked as they are
 * recorded only as far as the client can (graph values, not handles); the daemon checks
 * everything when the graph is defined and names the node that is wrong ("graph node 3
 * (aten::add.Tensor): ..."). Asynchronous calls on c from that thread fail with OPD_EINVAL
 * during a capture, and every other request (uploads, downloads, ...) and every other
 * thread's calls go to the daemon as usual. A thread captures into one builder at a time.
 *
 * Defining sends the graph (one request) and waits for the daemon's GraphInfo; the graph
 * id is chosen by the client, so opd_graph_define_async may be followed by
 * opd_graph_run_async at once (the run, pipelined behind the define, fails with OPD_ENOENT
 * when the define did). A run gives one handle per input in order (parameters too) and
 * gets one new handle per output; its asynchronous form's results are opd_future_results /
 * opd_future_tensor, as a call's. Graphs belong to the connection: closing it releases
 * them. Thread safety: a builder is used by one thread at a time; defined graphs, runs and
 * releases follow [Note: Client thread safety].
 */
typedef uint64_t opd_client_graph; /* the client's id of a graph defined in the daemon */
typedef struct opd_graph_builder opd_graph_builder;

#define OPD_CLIENT_GRAPH_VALUE_BIT   (UINT64_C(1) << 63)
#define OPD_CLIENT_GRAPH_ALL_OUTPUTS UINT32_MAX

static inline bool opd_graph_is_value(opd_client_tensor v) {
  return (v & OPD_CLIENT_GRAPH_VALUE_BIT) != 0;
}
static inline uint32_t opd_graph_value_position(opd_client_tensor v) {
  return (uint32_t)((v >> 32) & 0x7fffffffu);
}
/* Result i of the node whose value (its first result) is v; OPD_CLIENT_GRAPH_ALL_OUTPUTS:
 * the whole list it returns. */
static inline opd_client_tensor opd_graph_output(opd_client_tensor v, uint32_t i) {
  return (v & ~(opd_client_tensor)UINT32_MAX) | i;
}

/* What the daemon made of a graph (GraphInfo in proto/opd.proto). */
typedef struct opd_client_graph_info {
  opd_client_graph graph;
  uint64_t compiled; /* the compiled graph's id in the daemon (GET /v1/graphs/{id}) */
  bool cache_hit;    /* the define found it compiled */
  uint32_t nodes_before, nodes_after, kernels, softmax_patterns, groups;
  uint32_t kernels_last_run; /* launched by the graph's last run (kernels: by a run now) */
  uint64_t runs, compile_us;
  char key[17]; /* the cache key's hash */
} opd_client_graph_info;

/* A new, empty builder for graphs of client c. */
int opd_graph_builder_new(opd_client *c, opd_graph_builder **out);
/* Ends a capture still under way. NULL is a no-op. */
void opd_graph_builder_free(opd_graph_builder *b);
/* Adds an input (all inputs come before the first node): a tensor of this dtype and shape on
 * `device` (NULL: the CPU), given anew each run, or with `parameter` a weight uploaded once
 * and passed every run. *value is its graph value. */
int opd_graph_input(opd_graph_builder *b, int dtype, const int64_t *shape, int ndim,
                    const opd_client_device *device, bool parameter, opd_client_tensor *value);
/* Adds a node: operator `op` with arguments as for opd_client_call, tensors as graph values
 * (a Tensor[] as a list of them). *value is its first result. */
int opd_graph_node(opd_graph_builder *b, const char *op, const opd_client_value *args, size_t nargs,
                   opd_client_tensor *value);
/* A new builder into which this thread's synchronous calls on c are recorded until
 * opd_graph_capture_end (OPD_EBUSY when this thread captures already). */
int opd_graph_capture_begin(opd_client *c, opd_graph_builder **out);
/* Stops recording (the builder stays, to define). */
int opd_graph_capture_end(opd_graph_builder *b);
/* Sends the graph with these outputs (graph values) and waits: *graph gets its id, info
 * (may be NULL) what the daemon made of it. The builder may then be freed, or used again
 * (with more nodes, other outputs) for another graph. */
int opd_graph_define(opd_graph_builder *b, const opd_client_tensor *outputs, size_t noutputs,
                     opd_client_graph *graph, opd_client_graph_info *info);
/* The same without waiting: *graph is valid at once (runs may follow right away); the
 * future's opd_future_graph_info is the daemon's answer. */
int opd_graph_define_async(opd_graph_builder *b, const opd_client_tensor *outputs, size_t noutputs,
                           opd_client_graph *graph, opd_future_cb cb, void *user, opd_future **out);
/* A completed define's (or describe's) GraphInfo; NULL before, or after a failure. */
const opd_client_graph_info *opd_future_graph_info(const opd_future *f);
/* Runs graph g on one handle per input: up to max_outs output handles go to outs, their
 * count to *num_outs (may be NULL), as opd_client_call does. */
int opd_graph_run(opd_client *c, opd_client_graph g, const opd_client_tensor *inputs,
                  size_t ninputs, opd_client_tensor *outs, size_t max_outs, size_t *num_outs);
int opd_graph_run_async(opd_client *c, opd_client_graph g, const opd_client_tensor *inputs,
                        size_t ninputs, opd_future_cb cb, void *user, opd_future **out);
/* Releases graph g in the daemon (its id may then be reused). */
int opd_graph_release(opd_client *c, opd_client_graph g);
int opd_graph_release_async(opd_client *c, opd_client_graph g, opd_future_cb cb, void *user,
                            opd_future **out);
/* The graph's GraphInfo as it is now (runs decide which fused groups stay fused) and, with
 * introspection non-NULL, the daemon's introspection document (JSON text, malloc'd: free()
 * it; its passes with the IR after each, its groups and their decisions). */
int opd_graph_describe(opd_client *c, opd_client_graph g, opd_client_graph_info *info,
                       char **introspection);

/* [Note: Typed calls]
 * opd/client_ops.h declares one typed call per operator of the daemon's built-in list
 * (kernels/aten_schemas.def), generated by client/gen_ops.py, in two forms:
 *
 *   int opd_add(opd_client *c, opd_client_tensor self, opd_client_tensor other,
 *               const opd_client_scalar *alpha, opd_client_tensor *result);
 *   int opd_add_async(opd_client *c, opd_client_tensor self, opd_client_tensor other,
 *                     const opd_client_scalar *alpha, opd_future_cb cb, void *user,
 *                     opd_future **out);
 *
 * Names: opd_ + the operator's name, alone for its "main" overload (the overload-less one,
 * else the overload named Tensor, else the operator's only overload), otherwise followed by
 * _ and the overload name in lower case: aten::add.Tensor -> opd_add, aten::add.Scalar ->
 * opd_add_scalar, aten::sum -> opd_sum, aten::sum.dim_IntList -> opd_sum_dim_intlist,
 * aten::masked_fill_.Scalar -> opd_masked_fill_, aten::_softmax -> opd__softmax. A name
 * that other opd libraries already use gets _op appended: aten::log -> opd_log_op.
 *
 * Arguments, in schema order, by type; an argument that has a default or is optional
 * (`T?`) is passed by pointer, and NULL means "use the default" (or None when the default
 * is None or there is none):
 *   Tensor -> opd_client_tensor (Tensor?: 0 is None)
 *   Tensor[] -> const opd_client_tensor *, size_t NAME_len
 *   int, SymInt, Layout, MemoryFormat -> int64_t (optional: const int64_t *)
 *   int[], SymInt[] -> const int64_t *, size_t NAME_len (optional: NULL is the default)
 *   float -> double, bool -> bool, ScalarType -> int (an opd_dtype), Device ->
 *   opd_client_device, Scalar -> opd_client_scalar (optional forms: pointers)
 *   str -> const char * (NULL: the default or None)
 * Results: `result` receives the new handle (an operator with k results: an array of k).
 * An operator with a result that is not a Tensor (split.Tensor's Tensor[]) has no typed call:
 * opd_client_call_async returns its results of any kind.
 * Arguments left to their defaults at the end are not sent (the protocol fills them in);
 * ones before an explicit argument are sent with the schema's default.
 */
#include "opd/client_ops.h"

#ifdef __cplusplus
}
#endif
#endif
