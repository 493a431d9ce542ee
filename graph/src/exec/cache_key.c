/* cache_key.c: the key a compiled graph is cached under (opd__graph_key), with the code
 * generator's identity in it (opd_graph_codegen_id).
 *
 * [Note: The cache key]
 * Everything a compiled graph depends on, as text, compared whole (the hash only picks the
 * bucket, so two graphs never share an entry by accident):
 *   - the graph as defined, in its canonical text ([Note: Canonical graph text] in
 *     printer.c) with the data of constant tensors: the inputs' specs (dtype, sizes, device,
 *     input or parameter) are its first line;
 *   - every pass of the pipeline, built-in or plugin, with its version and whether it runs;
 *   - the registration generation of every operator the graph calls, read when the
 *     compilation starts ([Note:
 *     Operator generations] in opd/dispatcher.h): a hot registration or deregistration of
 *     one of them gives another key (torch.compile's cache hides new passes; this one does
 *     not), and the cache drops an entry it finds stale;
 *   - the code generator's identity (opd_graph_codegen_id) and the checks that decide a
 *     group's fate (numerics, benefit runs).
 * Nothing that varies between equal graphs enters it: no names the client chose, no
 * pointers, no debug options (verify, dumps).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "exec/compiled.h"
#include "ir/graph_print.h"
#include "opd/cuda_nvrtc.h"

/* The CPU interpreter's identity, the CUDA generator's, and the NVRTC that compiles the
 * latter's source (a newer NVRTC may compile the same source differently): written once,
 * since every define reads it for its key. */
static char codegen_id[192];
static pthread_once_t codegen_once = PTHREAD_ONCE_INIT;

static void codegen_id_init(void) {
  snprintf(codegen_id, sizeof codegen_id, "opd-fused-interpreter/1 tile=512 regs=24 f32; %s %s",
           opd_graph_cuda_codegen_id(), opd_nvrtc_version());
}

const char *opd_graph_codegen_id(void) {
  pthread_once(&codegen_once, codegen_id_init);
  return codegen_id;
}

/* FNV-1a, to pick the entries whose whole keys are compared. */
static uint64_t key_hash(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
  return h;
}

int opd__graph_key(const opd_graph *g, const opd__pipeline *p, const opd_graph_options *o,
                   char **key, uint64_t *hash) {
  opd__sbuf sb = {0};
  int rc = opd__graph_print_to(g, false, true, &sb);
  if (rc) {
    opd__sbuf_free(&sb);
    return rc;
  }
  opd__sbuf_printf(&sb, "passes:");
  for (uint32_t i = 0; i < p->n; i++)
    opd__sbuf_printf(&sb, " %s@%u%s", p->passes[i].name, p->passes[i].version,
                     p->passes[i].enabled ? "" : ":off");
  opd__sbuf_printf(&sb, "\noperators:");
  for (uint32_t i = 0; i < g->nops; i++)
    opd__sbuf_printf(&sb, " %s#%" PRIu64, g->ops[i].name, g->ops[i].generation);
  opd__sbuf_printf(&sb, "\ncodegen: %s\nchecks: numerics=%d benefit_runs=%u\n",
                   opd_graph_codegen_id(), (int)o->check_numerics, o->benefit_runs);
  if ((rc = opd__sbuf_take(&sb, key))) return rc;
  *hash = key_hash(*key, strlen(*key));
  return 0;
}
