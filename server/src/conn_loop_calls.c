/* conn_loop_calls.c: the calls and releases the loop runs itself instead of handing
 * them to a worker: the policy that decides, and the run.
 *
 * [Note: Tiny calls on the loop]
 * Handing a job to a worker costs more than a tiny call: the job is queued under the
 * scheduler's lock, a worker is woken (on a shared CPU, a switch to it and back) and the
 * job comes back through the completion list, all for about 100 ns of kernel in a 1-element
 * add. So the loop runs such a call itself, as redis runs every command, when
 *  - loop_call_ns is not 0 and the session has nothing queued or running on workers
 *    (`outstanding` and `npending` are 0: every worker's write to the session came before
 *    the loop took its last job back), so the loop is the session's running job, which
 *    alone reads its handle table ([Note: Sessions and handles] in session.h); once a
 *    request of the session goes to a worker, those after it follow in order until the
 *    session has nothing there again. Before it processes what it read, the loop takes
 *    back the jobs done quietly ([Note: Quiet completions] in connection.c), so that a session
 * calling one operator after another finds its last job back (`taking_back`: the bytes just read
 *    wait, and the connection's own processing is left to on_read);
 *  - the session is not held by a download whose bytes are still being written from its
 *    tensor ([Note: Sessions on workers] in worker.h): a later in-place write must wait;
 *  - the call was decoded into at most LOOP_PREPARE_BYTES, and its operator fits the loop
 *    (below; checked first, by the operator's name alone): the loop prepares it ([Note:
 *    Prepared calls] in prepared.h: its operator found, its handles looked up, once) to
 *    judge it, and a call that goes to a worker after all is unprepared again, so a large
 *    literal is not copied on the loop only to be thrown away. A call that fails to
 *    prepare (an unknown operator or handle, a bad argument) is answered by the loop;
 *  - the session has no GPU state, and the call's tensors and Device arguments are on the
 *    CPU (or Meta): a CUDA call goes to its device's workers, as it would have;
 *  - the call's estimate ([Note: The cost of a job] in cost.h), read from its prepared
 *    stack, is at most loop_call_ns;
 *  - its operator has shown itself to be as fast as its estimates: a call of it estimated
 *    within loop_call_ns ran on a worker within LOOP_FIT_FACTOR (execute.c) times that.
 *    OPD__LOOP_STRIKES (3) of its calls in a row on the loop that take longer than
 *    short_job_us send it to the workers for good (one alone may have been preempted;
 *    metrics.h keeps these facts beside the operator's counters). The estimate is a scale
 *    for the built-in operators; a plugin's kernel slower than its shapes say stalls the
 *    loop three times at most. Both facts hold for the operator's registrations as they
 *    were: a hot registration or removal that touches it ([Note: Operator generations])
 *    voids them, and its calls go to workers until one shows again that it fits;
 *  - this read's calls on the loop have taken less than LOOP_TURN_NS of kernel time
 *    (`loop_ns`): the rest of a long pipeline goes to the workers, and other connections
 *    are read in between.
 * Releases of such a session run on the loop as well: they only drop handles. A call that
 * goes to a worker after all keeps the estimate the loop made (nothing of its session ran
 * in between), so the worker does not estimate it again. The loop thread is a dispatcher
 * reader (dispatcher/src/rcu.c), online from its first such call until it next goes to
 * sleep (loop.c), so a registration's grace period never waits for an
 * idle loop. The scheduler does not see these requests: they cost less than its own
 * bookkeeping, and the loop shares itself among connections read by read.
 */
#include "conn.h"

#include "cost.h"
#include "decode.h"
#include "execute.h"
#include "metrics.h"

/* kernel time one read's calls may take on the loop ([Note: Tiny calls on the loop]) */
#define LOOP_TURN_NS       100000
/* calls decoded into more bytes are not prepared on the loop (same Note) */
#define LOOP_PREPARE_BYTES 4096

/* run_on_loop's judgement of a call by its operator and estimate, and the run: false when
 * the job goes to a worker after all. */
static bool run_here(opd__conn *c, opd__job *j) {
  const opd_server_config *k = opd__conn_cfg(c);
  if (j->kind == OPD__JOB_CALL) {
    if (j->arena.total > LOOP_PREPARE_BYTES) return false;
    opd__server_loop_online(c->server); /* preparing reads the operator's schema */
    /* an operator not (yet) fit for the loop: not prepared here only to be unprepared (the
     * prepare takes the operator found; an unknown one fails it, answered here) */
    if ((j->call.op = opd_find_op(j->req->call->op)) && !opd__metrics_loop_fits(j->call.op))
      return false;
    if (opd__call_prepare(j) == 0) { /* failed: its error is answered here */
      if (j->call.device.type == OPD_DEVICE_CUDA || j->call.cuda_devices) {
        opd__call_unprepare(j);
        return false;
      }
      /* a call that goes to a worker keeps its estimate: the session has nothing before it */
      j->cost_ns = opd__job_estimate(j);
      j->costed = true;
      if (j->cost_ns > k->loop_call_ns || j->waits) {
        opd__call_unprepare(j);
        return false;
      }
    }
  }
  j->on_loop = true;
  bool hold = opd__execute(j); /* a prepared call's error was packed when it was decoded */
  assert(!hold);
  (void)hold;
  c->loop_ns += j->kernel_ns;
  c->in_flight--;
  j->counted = false;
  j->done = true;
  c->ndone++;
  opd__count(&c->server->loop_calls, 1); /* [Note: Counters with one writer at a time] */
  return true;
}

/* The kinds the loop may run itself: the ON_LOOP column of requests.def. */
static const bool may_run_on_loop[OPD__NUM_JOB_KINDS] = {
#define OPD__REQUEST(kind, body, session, accept, on_loop, ...) [OPD__JOB_##kind] = on_loop,
#include "requests.def"
#undef OPD__REQUEST
};

/* Runs a counted call or release of the response order on the loop if [Note: Tiny calls on
 * the loop] allows, answering it; false when it must go to a worker. */
bool opd__conn_run_on_loop(opd__conn *c, opd__job *j) {
  const opd_server_config *k = opd__conn_cfg(c);
  /* with nothing on workers, only the loop writes the state: it is IDLE, or HELD */
  if (!k->loop_call_ns || c->outstanding || c->npending || c->loop_ns >= LOOP_TURN_NS ||
      c->session.sched.state != OPD__SESSION_IDLE || c->session.gpu || !may_run_on_loop[j->kind])
    return false;
  /* so the loop alone changes the session's bytes held ([Note: A budget with one writer] in
   * opd/allocator.h) until it hands a job to a worker */
  c->session.budget.one_writer = true;
  bool ran = run_here(c, j);
  c->session.budget.one_writer = false;
  return ran;
}
