/* boxed_call.h: calling an operator boxed in tests, as the daemon calls it (shared by the
 * kernel suites). */
#ifndef OPD_TESTS_BOXED_CALL_H
#define OPD_TESTS_BOXED_CALL_H

#include <check.h>

#include "opd/dispatcher.h"
#include "opd/ivalue.h"
#include "opd/tensor.h"

/* Calls operator `name` boxed with every argument of its schema (taken over); its one Tensor
 * result in *out, or NULL when the call fails (which leaves the stack empty). */
static inline int opd_test_call(const char *name, opd_ivalue *args, int n, opd_tensor **out) {
  const opd_operator *op = opd_find_schema(name);
  ck_assert_msg(op != NULL, "no operator %s", name);
  opd_stack st;
  opd_stack_init(&st);
  for (int i = 0; i < n; i++) ck_assert_int_eq(opd_stack_push(&st, args[i]), 0);
  *out = NULL;
  int rc = opd_call_boxed(op, &st);
  if (rc == 0) {
    ck_assert_uint_eq(st.size, 1);
    ck_assert_uint_eq(st.items[0].tag, OPD_IV_TENSOR);
    *out = opd_stack_pop(&st).u.t; /* results are owned */
  } else {
    ck_assert_uint_eq(st.size, 0);
  }
  opd_stack_destroy(&st);
  return rc;
}

#endif
