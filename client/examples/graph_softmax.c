/* graph_softmax.c: a graph with the opd client ([Note: Graphs in the client] in opd/client.h).
 * Captures y = softmax(x @ w) written as exp / sum(exp, -1, keepdim) with the typed calls
 * (nothing is sent while capturing), defines it once (the daemon validates it, replaces the
 * softmax pattern and compiles it), then runs it three times on new inputs, each run one
 * request, the last one asynchronously; prints what the daemon made of the graph and checks
 * every output against the same program computed here.
 *
 *   graph_softmax [URL]    URL: tcp://HOST:PORT or unix:///PATH (default tcp://127.0.0.1:7470)
 *
 * The exit status is 0 when every output matched.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "opd/client.h"
#include "opd/client_ops.h"

enum { ROWS = 4, IN = 8, OUT = 16 };

/* The program here: y = softmax(x @ w, -1). */
static void expected(const float *x, const float *w, float *y) {
  for (int i = 0; i < ROWS; i++) {
    double row[OUT], sum = 0;
    for (int j = 0; j < OUT; j++) {
      double acc = 0;
      for (int k = 0; k < IN; k++) acc += (double)x[i * IN + k] * w[k * OUT + j];
      sum += row[j] = exp(acc);
    }
    for (int j = 0; j < OUT; j++) y[i * OUT + j] = (float)(row[j] / sum);
  }
}

static int fail(opd_client *c, const char *what, int rc) {
  fprintf(stderr, "graph_softmax: %s: %s (%s)\n", what, opd_client_last_error(),
          opd_client_err_name(rc));
  opd_client_close(c);
  return EXIT_FAILURE;
}

/* Downloads y and compares it with the program's result: 0, or 1 when they differ. */
static int check(opd_client *c, opd_client_tensor y, const float *x, const float *w) {
  float got[ROWS * OUT], want[ROWS * OUT];
  if (opd_client_download(c, y, got, sizeof got, NULL) != 0) return 1;
  expected(x, w, want);
  for (int i = 0; i < ROWS * OUT; i++)
    if (fabsf(got[i] - want[i]) > 1e-5f + 1e-4f * want[i]) {
      fprintf(stderr, "graph_softmax: element %d is %g, expected %g\n", i, got[i], want[i]);
      return 1;
    }
  return 0;
}

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : OPD_CLIENT_DEFAULT_URL;
  opd_client *c;
  if (opd_client_connect(url, NULL, &c) != 0) {
    fprintf(stderr, "graph_softmax: %s\n", opd_client_last_error());
    return EXIT_FAILURE;
  }

  /* capture: the typed calls record nodes and return graph values */
  opd_graph_builder *b;
  int rc = opd_graph_capture_begin(c, &b);
  if (rc) return fail(c, "capture", rc);
  opd_client_tensor x, w, logits, e, s, y;
  rc = opd_graph_input(b, OPD_FLOAT32, (const int64_t[]){ROWS, IN}, 2, NULL, false, &x);
  if (rc == 0) rc = opd_graph_input(b, OPD_FLOAT32, (const int64_t[]){IN, OUT}, 2, NULL, true, &w);
  if (rc == 0) rc = opd_mm(c, x, w, &logits);
  if (rc == 0) rc = opd_exp(c, logits, &e);
  if (rc == 0) rc = opd_sum_dim_intlist(c, e, (const int64_t[]){-1}, 1, &(bool){true}, NULL, &s);
  if (rc == 0) rc = opd_div(c, e, s, &y);
  opd_graph_capture_end(b);
  opd_client_graph g = 0;
  opd_client_graph_info info;
  if (rc == 0) rc = opd_graph_define(b, &y, 1, &g, &info);
  opd_graph_builder_free(b);
  if (rc) return fail(c, "define", rc);
  printf("graph %llu: %u nodes defined, %u after the passes, %u softmax pattern(s), %u "
         "kernel(s), compiled in %llu us%s\n",
         (unsigned long long)g, info.nodes_before, info.nodes_after, info.softmax_patterns,
         info.kernels, (unsigned long long)info.compile_us, info.cache_hit ? " (cached)" : "");

  /* the weight is uploaded once and passed to every run */
  float xv[ROWS * IN], wv[IN * OUT];
  for (int i = 0; i < IN * OUT; i++) wv[i] = (float)((i * 7) % 17) / 17.0f - 0.5f;
  opd_client_tensor wt, xt;
  rc = opd_client_upload(c, OPD_FLOAT32, (const int64_t[]){IN, OUT}, 2, wv, sizeof wv, NULL, &wt);
  if (rc) return fail(c, "upload", rc);
  int bad = 0;
  for (int run = 0; run < 3 && rc == 0; run++) {
    for (int i = 0; i < ROWS * IN; i++) xv[i] = (float)((i * 5 + run) % 11) / 11.0f - 0.5f;
    rc =
        opd_client_upload(c, OPD_FLOAT32, (const int64_t[]){ROWS, IN}, 2, xv, sizeof xv, NULL, &xt);
    opd_client_tensor out = 0;
    if (rc == 0 && run < 2) {
      rc = opd_graph_run(c, g, (const opd_client_tensor[]){xt, wt}, 2, &out, 1, NULL);
    } else if (rc == 0) { /* asynchronous: the future's results are the output handles */
      opd_future *f;
      rc = opd_graph_run_async(c, g, (const opd_client_tensor[]){xt, wt}, 2, NULL, NULL, &f);
      if (rc == 0) {
        if ((rc = opd_future_wait(f)) == 0) out = opd_future_tensor(f, 0); /* the handle stays */
        opd_future_free(f);
      }
    }
    if (rc) return fail(c, "run", rc);
    bad += check(c, out, xv, wv);
    opd_client_release(c, (const opd_client_tensor[]){xt, out}, 2);
  }
  printf("3 runs: %s\n", bad ? "outputs differ" : "outputs match");
  rc = opd_graph_release(c, g);
  if (rc) return fail(c, "release", rc);
  opd_client_close(c);
  return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
