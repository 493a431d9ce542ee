/* graph_print.h: the printer's entry points inside the graph library (printer.c; the
 * format is [Note: Canonical graph text]). */
#ifndef OPD_GRAPH_PRINT_H
#define OPD_GRAPH_PRINT_H

#include <stdbool.h>

#include "ir/graph_internal.h"
#include "ir/sbuf.h"

/* Appends the graph's text: with `annotate`, the comments passes add (views, groups); with
 * `with_data`, the elements of constant tensors (the cache key's form). */
int opd__graph_print_to(const opd_graph *g, bool annotate, bool with_data, opd__sbuf *sb);
/* One constant as the printer writes it. */
void opd__print_ivalue(opd__sbuf *sb, const opd_ivalue *v, bool with_data);

#endif
