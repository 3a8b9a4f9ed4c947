/* The C API: load a shared-library artifact, look at its signature, run it
 * on an .npy input and compare with the expected output.
 *   embed_c model.so input.npy expected_output.npy */
#include "kiln/runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads the data of a little-endian f32 .npy (format 1.0) of `count` values. */
static int read_npy_f32(const char *path, float *out, size_t count) {
  FILE *f = fopen(path, "rb");
  unsigned char head[10];
  int ok = f && fread(head, 1, 10, f) == 10 && memcmp(head, "\x93NUMPY\x01", 7) == 0 &&
           fseek(f, head[8] | (head[9] << 8), SEEK_CUR) == 0 &&
           fread(out, sizeof(float), count, f) == count;
  if (f)
    fclose(f);
  return ok;
}

static int fail(kiln_status_t st) {
  fprintf(stderr, "error: %s\n", kiln_status_message(st));
  kiln_status_free(st);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s model.so input.npy expected_output.npy\n", argv[0]);
    return 2;
  }
  kiln_model_t *model = NULL;
  kiln_status_t st = kiln_model_load(argv[1], &model);
  if (st)
    return fail(st);
  kiln_tensor_desc_t in, out;
  if ((st = kiln_model_input(model, 0, &in)) || (st = kiln_model_output(model, 0, &out)))
    return fail(st);
  printf("embed_c: %s takes '%s' (%s, %zu bytes), returns '%s' (%zu bytes); arena %zu bytes\n",
         argv[1], in.name, kiln_dtype_name(in.dtype), in.size_bytes, out.name, out.size_bytes,
         kiln_model_arena_bytes(model));

  size_t nin = in.size_bytes / sizeof(float), nout = out.size_bytes / sizeof(float);
  float *x = malloc(in.size_bytes), *y = malloc(out.size_bytes), *want = malloc(out.size_bytes);
  if (!x || !y || !want || !read_npy_f32(argv[2], x, nin) || !read_npy_f32(argv[3], want, nout)) {
    fprintf(stderr, "error: cannot read the .npy files\n");
    return 1;
  }
  kiln_session_options_t options = {0};
  options.num_threads = 2;
  kiln_session_t *session = NULL;
  if ((st = kiln_session_create(model, &options, &session)))
    return fail(st);
  /* Descriptions carry name, dtype and shape; only the data pointer is ours.
   * The output is written straight into `y`: no copy. */
  kiln_tensor_t input = {in.name, in.dtype, in.rank, in.shape, x, in.size_bytes};
  kiln_tensor_t output = {out.name, out.dtype, out.rank, out.shape, y, out.size_bytes};
  if ((st = kiln_session_run(session, &input, 1, &output, 1)))
    return fail(st);
  double worst = 0;
  for (size_t i = 0; i < nout; ++i)
    worst = fmax(worst, fabs((double)y[i] - (double)want[i]));
  printf("embed_c: max |error| vs PyTorch %.3g\n", worst);
  kiln_session_release(session);
  kiln_model_release(model);
  free(x);
  free(y);
  free(want);
  return worst <= 1e-4 ? 0 : 1;
}
