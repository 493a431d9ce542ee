/* client_internal.h: the client library's private structures: the connection, its request
 * list and reader state (connection.c), and the request builders and result decoding
 * (requests.c). */
#ifndef OPD_CLIENT_INTERNAL_H
#define OPD_CLIENT_INTERNAL_H

#include <pthread.h>
#include <sys/socket.h>
#include <stdatomic.h>
#include <stdint.h>

#include "opd.pb-c.h"
#include "opd/client.h"
#include "opd_wire.h"

#define OPD__CLIENT_MSG_MAX        1024 /* bytes kept of an error message */
#define OPD__CLIENT_DEFAULT_FRAME  (1u << 20)
#define OPD__CLIENT_MAX_ARGS       1024
#define OPD__CLIENT_DEFAULT_INFL   256
#define OPD__CLIENT_DEFAULT_RFRAME (64u << 20)

/* One daemon of an address ([Note: Placement] in placement.c), by its numeric address. */
#define OPD__CLIENT_ENDPOINT_NAME 128
#define OPD__CLIENT_MAX_ENDPOINTS 64

typedef struct opd__endpoint {
  struct sockaddr_storage addr; /* AF_INET, AF_INET6 or AF_UNIX */
  socklen_t addrlen;
  char name[OPD__CLIENT_ENDPOINT_NAME]; /* "tcp://10.0.0.3:7470", "unix:///run/opd.sock" */
} opd__endpoint;

typedef enum opd__req_kind {
  OPD__REQ_HELLO,
  OPD__REQ_CALL,
  OPD__REQ_UPLOAD,
  OPD__REQ_DOWNLOAD,
  OPD__REQ_RELEASE,
  OPD__REQ_DISPATCH_STATE,
  OPD__REQ_SYNCHRONIZE,
  OPD__REQ_PING,
  OPD__REQ_DEFINE_GRAPH,
  OPD__REQ_RUN_GRAPH,
  OPD__REQ_RELEASE_GRAPH,
  OPD__REQ_DESCRIBE_GRAPH,
} opd__req_kind;

/* What a future holds in itself ([Note: Reused futures]): a frame of up to this many
 * bytes (a tiny call's, a ping's), an operator name shorter than this, up to this many
 * result values, a ping payload of up to this many bytes. */
#define OPD__FUTURE_FRAME   96
#define OPD__FUTURE_OP      48
#define OPD__FUTURE_RESULTS 2
#define OPD__FUTURE_PONG    32

/* A request, from submission to completion; the user's handle on it is the future. */
struct opd_future {
  opd_client *client;
  struct opd_future *next; /* the client's list of pending requests, in submission order */
  uint64_t id;
  opd__req_kind kind;
  /* outgoing: the frame (length prefix + packed Request), then the caller's raw bytes */
  uint8_t *frame;
  size_t frame_len;
  const uint8_t *raw;
  size_t raw_len;
  size_t sent;
  /* completion */
  opd_future_cb cb;
  void *user;
  bool user_owned;      /* else the library frees it after completion */
  bool responded;       /* an early error response arrived before it was fully sent */
  bool finished;        /* results are in (read by callbacks) */
  bool done;            /* published: waiters may return, the user may free */
  int64_t submitted_ms; /* when it was queued, with a call deadline ([Note: Never hang]) */
  int rc;
  char *message;  /* error message, or NULL */
  char *error_op; /* operator named by the server's error, or NULL */
  char *op;       /* a call's operator (for messages), or NULL */
  /* results */
  opd_client_value *results;
  size_t num_results;
  uint64_t handle;              /* upload */
  opd_client_tensor_info *info; /* download: NULL until the DownloadReply */
  uint8_t *buf;                 /* download destination */
  size_t capacity;
  bool alloc;    /* download: the library allocates buf */
  uint8_t *pong; /* ping: the payload sent, compared with the reply */
  size_t pong_len;
  opd_client_graph_info *graph_info; /* define, describe: the reply's (malloc'd) */
  char *introspection;               /* describe: the document (malloc'd), or NULL */
  /* storage for the small cases (the pointers above point here, or to the heap); not
   * cleared when the future is reused: the fields above all are */
  uint8_t frame_inline[OPD__FUTURE_FRAME];
  char op_inline[OPD__FUTURE_OP];
  opd_client_value results_inline[OPD__FUTURE_RESULTS];
  uint8_t pong_inline[OPD__FUTURE_PONG];
};

struct opd_client {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int fd;
  int wake[2]; /* self-pipe: a submission wakes the thread blocked in poll() */
  int refs;    /* the user's reference + one per user-owned future not yet freed */
  bool closing;
  bool io_busy; /* a thread runs the I/O (see pump()) */
  /* broken connection: every request fails with this */
  int broken_rc;
  char broken_msg[OPD__CLIENT_MSG_MAX];
  /* requests: head..tail in submission order; send: the first not fully written */
  opd_future *head, *tail, *send;
  size_t pending;
  /* [Note: Batched writes]: the bytes from c->send on not yet written (0 when c->send is
   * NULL), when the first of them was submitted, and the options that hold them */
  size_t unsent_bytes;
  int64_t unsent_since_ns;
  size_t batch_bytes;
  int64_t batch_ns;
  /* requests taken off the list so far (polls count completions by it) */
  uint64_t completions;
  /* requests taken off the list whose callbacks have not returned yet ([Note: Replies taken
   * in a batch]): still pending for opd_client_pending and opd_client_wait_all. Written by
   * the pump only, so a relaxed store is enough; read under mu. */
  _Atomic size_t completing;
  uint64_t next_id;
  uint64_t next_graph; /* the last graph id this client chose */
  uint32_t max_in_flight;
  uint64_t max_frame_out; /* the server's max_frame_bytes */
  uint64_t max_frame_in;
  opd_client_server_info server;
  /* reader (only the I/O thread touches these) */
  uint8_t *rbuf;
  size_t rcap, rlen, rpos;
  opd_future *raw_f; /* a download whose raw bytes are being read; NULL: discard */
  uint64_t raw_left;
  uint8_t *raw_dst;
  uint8_t *raw_end;    /* the end of the room at raw_dst ([Note: Download buffers grow]) */
  size_t raw_read_max; /* the most one raw read takes ([Note: Raw reads over TCP]) */
  bool raw_active;
  bool greeted;    /* the hello reply was read */
  bool not_opd;    /* the first bytes back were not a frame ([Note: Not an opd daemon]) */
  const char *url; /* while opd_client_connect connects: its URL, for the messages */
  /* the daemon, for the messages and opd_client_endpoint ([Note: A lost session is final]) */
  char endpoint[OPD__CLIENT_ENDPOINT_NAME];
  int call_timeout_ms;  /* opd_client_options.call_timeout_ms; 0: none */
  bool deadline_passed; /* a wait outlived call_timeout_ms: the session is being ended */
  /* futures kept for reuse ([Note: Reused futures]) */
  opd_future *spare;
  unsigned nspare;
  /* where a response is decoded (connection.c, [Note: Decoding responses]) */
  _Alignas(max_align_t) uint8_t decode_buf[16384];
};

/* Connects to one daemon and says hello within timeout_ms (negative: no limit), with the
 * TCP options of [Note: Never hang]: 0 with *out, or the failure with the thread's message
 * (which names e). */
int opd__client_connect_endpoint(const opd__endpoint *e, const opd_client_options *o,
                                 int timeout_ms, opd_client **out);
/* Milliseconds of the monotonic clock. */
int64_t opd__client_now_ms(void);

/* Records the thread's last error: returns err. */
int opd__client_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Frees what the values of results own (strings, lists), not the array itself. */
void opd__client_free_values(opd_client_value *v, size_t n);

/* Makes a future for a request of `kind` (the frame is packed at submission). */
opd_future *opd__future_new(opd_client *c, opd__req_kind kind, opd_future_cb cb, void *user,
                            bool user_owned);
/* Frees a future that was never submitted. */
void opd__future_discard(opd_future *f);
/* Packs req, assigns the id and queues f for sending (it owns raw's lifetime contract).
 * On failure f is discarded and the thread's message set. After success, f may already be
 * complete (and, if not user-owned, freed). */
int opd__client_submit(opd_client *c, opd_future *f, Opd__V1__Request *req);
/* A call of plain arguments, packed straight into its frame ([Note: Typed calls packed
 * directly], requests.c). */
typedef struct opd__client_plain_call {
  const char *op;
  size_t oplen;
  const opd__wire_arg *args;
  size_t nargs;
  size_t call_size; /* opd__wire_call_size(oplen, args, nargs), by the caller: not under mu */
} opd__client_plain_call;
/* opd__client_submit for such a call. */
int opd__client_submit_call(opd_client *c, opd_future *f, const opd__client_plain_call *call);
/* 0, or OPD_EBUSY (with the message) on a thread running c's callbacks, which cannot wait. */
int opd__client_may_block(opd_client *c);
/* Waits for a user-owned f: the request's result code, with its message copied to the
 * thread's last error. The caller still frees f. */
int opd__future_wait_sync(opd_future *f);

/* Deep-copies a reply's values into f's results (its own storage for a few, else
 * malloc'd): 0 or OPD_ENOMEM / OPD_EINTERNAL (unknown kind), with no results then. */
int opd__client_results_copy(Opd__V1__IValue **in, size_t n, opd_future *f);
/* The same for a reply of n tensor handles: 0 or OPD_ENOMEM. */
int opd__client_results_handles(const uint64_t *handles, size_t n, opd_future *f);

typedef union opd__client_sub_message {
  Opd__V1__IntList ints;
  Opd__V1__DoubleList doubles;
  Opd__V1__BoolList bools;
  Opd__V1__HandleList handles;
  Opd__V1__OptionalHandleList optional_handles;
  Opd__V1__Device device;
  Opd__V1__TensorLiteral literal;
  Opd__V1__ValueRef ref;
  Opd__V1__ValueRefList refs;
} opd__client_sub_message;

/* The protobuf form of a call's or a graph node's arguments (requests.c): in the struct
 * itself (on the caller's stack) for up to OPD__CLIENT_ARGS_INLINE arguments, else in one
 * allocation. */
#define OPD__CLIENT_ARGS_INLINE 4

typedef struct opd__client_args {
  size_t n;
  Opd__V1__IValue *values;
  Opd__V1__IValue **pointers;
  opd__client_sub_message *subs;
  void **owned; /* per argument: a converted bool list or a list of references, or NULL */
  void *heap;   /* the arrays, when they are not the ones below */
  opd__client_sub_message own_subs[OPD__CLIENT_ARGS_INLINE];
  Opd__V1__IValue own_values[OPD__CLIENT_ARGS_INLINE];
  Opd__V1__IValue *own_pointers[OPD__CLIENT_ARGS_INLINE];
  void *own_owned[OPD__CLIENT_ARGS_INLINE];
  bool graph; /* a graph node's: tensors are graph values ([Note: Graph values]) */
} opd__client_args;

/* Converts arguments into protobuf IValues in `a` (freed with opd__client_args_free after
 * success): a call's (tensors are handles) or, with `graph`, a graph node's (tensors are
 * graph values, sent as references). 0 or OPD_EINVAL / OPD_ENOMEM with the message. */
int opd__client_args_build(const opd_client_value *args, size_t nargs, bool graph,
                           opd__client_args *a);
void opd__client_args_free(opd__client_args *a);

/* Graphs (graph.c): the GraphInfo (and a describe's document) of a reply into f: 0 or
 * OPD_ENOMEM. And the capture: true when this thread captures calls of c ([Note: Graphs in
 * the client]); then opd__client_capture_call records one. */
int opd__client_graph_reply(const Opd__V1__GraphInfo *info, const char *introspection,
                            opd_future *f);
bool opd__client_capturing(const opd_client *c);
int opd__client_capture_call(const char *op, const opd_client_value *args, size_t nargs,
                             opd_client_tensor *results, size_t nresults);

/* Makes a future of `kind` (op: a call's operator, for messages, or NULL; raw: bytes that
 * follow the frame) and submits req: 0 with *out (if asked) or an error, nothing sent. */
int opd__client_submit_request(opd_client *c, opd__req_kind kind, Opd__V1__Request *req,
                               const char *op, const void *raw, size_t raw_len, opd_future_cb cb,
                               void *user, opd_future **out);
/* A completed call's (or run's) tensor results into outs: up to max, or exactly max; else
 * the tensors are released and an error returned. */
int opd__client_take_tensors(opd_client *c, const opd_future *f, opd_client_tensor *outs,
                             size_t max, size_t *num, bool exact);
/* Waits for the user-owned f (when rc is 0: a submission that succeeded) and frees it. */
int opd__client_wait_and_free(int rc, opd_future *f);

/* The typed calls' synchronous path (client_ops.c): a call whose `nresults` results are
 * all Tensors, written to result. (Their asynchronous form is opd_client_call_async.) */
int opd__client_call_typed(opd_client *c, const char *op, const opd_client_value *args,
                           size_t nargs, opd_client_tensor *result, size_t nresults);
/* The message for a required-argument violation in a typed call. */
int opd__client_bad_arg(const char *op, const char *arg, const char *why);

#endif
