/* hello_add.c: the opd client's first program. Connects to a daemon, uploads two float32
 * tensors, adds them on the daemon (aten::add.Tensor through the typed call opd_add),
 * downloads and prints the sum, and releases the tensors.
 *
 *   hello_add [URL]        URL: tcp://HOST:PORT or unix:///PATH (default tcp://127.0.0.1:7470, the
 * daemon's)
 */
#include <stdio.h>
#include <stdlib.h>

#include "opd/client.h"

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : OPD_CLIENT_DEFAULT_URL;
  opd_client *c;
  if (opd_client_connect(url, NULL, &c) != 0) {
    fprintf(stderr, "hello_add: %s\n", opd_client_last_error());
    return EXIT_FAILURE;
  }
  printf("connected to %s (%s)\n", url, opd_client_server(c)->server);

  const int64_t shape[] = {2, 3};
  const float a_data[] = {1, 2, 3, 4, 5, 6};
  const float b_data[] = {10, 20, 30, 40, 50, 60};
  float sum[6];
  opd_client_tensor a = 0, b = 0, out = 0;
  int rc = opd_client_upload(c, OPD_FLOAT32, shape, 2, a_data, sizeof a_data, NULL, &a);
  if (rc == 0) rc = opd_client_upload(c, OPD_FLOAT32, shape, 2, b_data, sizeof b_data, NULL, &b);
  /* a + 1 * b: NULL leaves alpha at its default */
  if (rc == 0) rc = opd_add(c, a, b, NULL, &out);
  opd_client_tensor_info info;
  if (rc == 0) rc = opd_client_download(c, out, sum, sizeof sum, &info);
  if (rc != 0) {
    fprintf(stderr, "hello_add: %s (%s)\n", opd_client_last_error(), opd_client_err_name(rc));
    opd_client_close(c);
    return EXIT_FAILURE;
  }
  printf("a + b, shape [%lld, %lld]:\n", (long long)info.shape[0], (long long)info.shape[1]);
  for (int i = 0; i < 2; i++)
    printf("  %6.1f %6.1f %6.1f\n", sum[3 * i], sum[3 * i + 1], sum[3 * i + 2]);
  opd_client_tensor handles[] = {a, b, out};
  rc = opd_client_release(c, handles, 3);
  if (rc != 0) fprintf(stderr, "hello_add: release: %s\n", opd_client_last_error());
  opd_client_close(c);
  return rc == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
