/* conn_upload.c: an Upload request on the loop: its header checked, its tensor
 * allocated and reserved, its raw bytes then read into the tensor by conn_read.c ([Note:
 * Reading frames and raw payloads] there), and the job handed to a worker once they are in;
 * a refused upload's bytes are skipped.
 */
#include "conn.h"

#include <inttypes.h>

#include "gpu.h"
#include "opd/error.h"

/* Refuses an upload; its declared bytes are skipped. */
static void refuse_upload(opd__conn *c, opd__job *j, int err, uint64_t nbytes) {
  opd__conn_refuse(c, j, opd__error_code(err), NULL, opd_last_error());
  if (nbytes) {
    c->mode = OPD__READ_SKIP;
    c->raw_left = nbytes;
  }
}

void opd__conn_upload_received(opd__conn *c) {
  opd__job *j = c->upload;
  c->upload = NULL;
  c->mode = OPD__READ_FRAME;
  opd__conn_to_worker(c, j);
}

int opd__upload_check(const Opd__V1__Upload *u, uint64_t *nbytes, opd_device *dev) {
  int rc;
  *nbytes = 0;
  *dev = (opd_device){OPD_DEVICE_CPU, -1};
  if (u->device && u->device->type == OPD_DEVICE_CUDA &&
      (rc = opd__gpu_upload_device(u->device->index, dev)) < 0)
    return rc;
  if (u->device && u->device->type != OPD_DEVICE_CUDA &&
      (u->device->type != OPD_DEVICE_CPU || u->device->index < -1 || u->device->index > 0))
    return opd_error(OPD_EINVAL,
                     "upload: tensors are uploaded to the CPU (device type 0, index -1 or 0) or "
                     "a CUDA device (type 1), not to device type %d index %d",
                     (int)u->device->type, (int)u->device->index);
  if ((rc = opd__checked_nbytes((opd_dtype)u->dtype, u->shape, u->n_shape, nbytes, "upload")) < 0)
    return rc;
  if (*nbytes != u->nbytes)
    return opd_error(OPD_EINVAL,
                     "upload: dtype %s and a shape of %" PRIu64 " elements need %" PRIu64
                     " bytes, but nbytes is %" PRIu64,
                     opd_dtype_name((opd_dtype)u->dtype),
                     *nbytes / opd_dtype_size((opd_dtype)u->dtype), *nbytes, u->nbytes);
  return 0;
}

/* Starts an upload; false when it must wait for the session's requests in flight (the frame
 * is then decoded again later). */
bool opd__conn_begin_upload(opd__conn *c, opd__job *j) {
  const Opd__V1__Upload *u = j->req->upload;
  uint64_t declared = u->nbytes, nbytes;
  opd_device dev;
  int rc;
  if (opd__conn_unanswered(c) >= opd__conn_cfg(c)->max_in_flight) {
    opd__conn_over_in_flight(c, j);
    if (declared) {
      c->mode = OPD__READ_SKIP;
      c->raw_left = declared;
    }
    return true;
  }
  if ((rc = opd__upload_check(u, &nbytes, &dev)) < 0) {
    refuse_upload(c, j, rc, declared);
    return true;
  }
  if ((rc = opd__session_reserve(&c->session, nbytes)) < 0) {
    if (c->in_flight > 0) { /* earlier requests may release: decide after them */
      c->wait_idle = true;
      return false;
    }
    refuse_upload(c, j, rc, declared);
    return true;
  }
  j->reserved = nbytes;
  if ((rc = opd_tensor_empty(u->shape, (int)u->n_shape, (opd_dtype)u->dtype,
                             (opd_device){OPD_DEVICE_CPU, -1}, &j->tensor)) < 0) {
    opd__session_unreserve(&c->session, nbytes);
    j->reserved = 0;
    refuse_upload(c, j, rc, declared);
    return true;
  }
  j->kind = OPD__JOB_UPLOAD;
  j->device = dev; /* the bytes arrive in host memory; a GPU worker copies them over */
  j->counted = true;
  c->in_flight++;
  opd__conn_append(c, j);
  c->upload = j;
  if (nbytes == 0) {
    opd__conn_upload_received(c);
  } else {
    c->mode = OPD__READ_RAW;
    c->raw_dst = opd_tensor_data(j->tensor);
    c->raw_left = nbytes;
  }
  return true;
}
