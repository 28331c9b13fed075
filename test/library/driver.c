/* The corpus test's driver of a library built with `uopc --emit library --name tlib` (run_library.py):
 * binds files to tlib_run_params's entries by position and writes the outputs back.
 *
 *   driver --describe                     prints "param NAME DTYPE NUMEL BYTES ROLE DEVICES SLOT" per entry
 *                                         of tlib_params and "var NAME MIN MAX" per variable
 *   driver [--params-file FILE | --skip-init] [--expect-rc N] VAR... -- ENTRY...
 *       FILE:  the library's params file (uopc --params-file), read into 64-byte aligned memory and given to
 *              tlib_init (without it, tlib_init gets NULL: every library takes that; --skip-init: no tlib_init)
 *       VAR:   a variable's value, in tlib_variables's order
 *       ENTRY: IN:OUT per entry of params[] (a multi-device parameter takes one per device): IN a file of its
 *              bytes (empty: zeros), OUT where to write its bytes after the run (empty: nowhere)
 * The graph runs twice on one workspace, the buffers loaded again from the files before the second run, whose
 * outputs are written: what a library keeps in its workspace between runs (weights it re-laid out in the
 * first) must give the same outputs. Exits 0 when both runs of tlib_run_params returned N (default 0), else 1
 * with a message (tlib_init's failure: its code and tlib_strerror's text). */
#include "tlib.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, const char *arg) {
  fprintf(stderr, "driver: %s%s%s\n", what, arg ? ": " : "", arg ? arg : "");
  return 1;
}

static void *zeroed(size_t bytes) {
  size_t n = (bytes + 63) / 64 * 64;
  void *p = aligned_alloc(64, n ? n : 64);
  if (p) memset(p, 0, n ? n : 64);
  return p;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--describe") == 0) {
    for (int i = 0; i < tlib_num_params; ++i) {
      const tlib_param *p = &tlib_params[i];
      printf("param %s %s %" PRId64 " %" PRId64 " %s %d %" PRId64 "\n", p->name, p->dtype, p->numel, p->bytes, p->role,
             p->devices, tlib_param_slots[i]);
    }
    for (int i = 0; i < tlib_num_vars; ++i)
      printf("var %s %" PRId64 " %" PRId64 "\n", tlib_variables[i].name, tlib_variables[i].min, tlib_variables[i].max);
    return tlib_params[tlib_num_params].name == NULL && tlib_variables[tlib_num_vars].name == NULL ? 0 : 1;
  }
  int a = 1, expect = 0;
  void *pf = NULL;
  size_t pfBytes = 0;
  if (a + 1 < argc && strcmp(argv[a], "--params-file") == 0) {
    FILE *f = fopen(argv[a + 1], "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0) return fail("cannot open", argv[a + 1]);
    long n = ftell(f);
    rewind(f);
    pfBytes = n > 0 ? (size_t)n : 0;
    if (!(pf = zeroed(pfBytes)) || fread(pf, 1, pfBytes, f) != pfBytes) return fail("cannot read", argv[a + 1]);
    fclose(f);
    a += 2;
  }
  int init = 1;
  if (a < argc && strcmp(argv[a], "--skip-init") == 0) init = 0, ++a;
  if (a + 1 < argc && strcmp(argv[a], "--expect-rc") == 0) expect = atoi(argv[a + 1]), a += 2;
  int64_t vars[64];
  int nvars = 0;
  for (; a < argc && strcmp(argv[a], "--") != 0; ++a) {
    if (nvars == 64) return fail("too many variables", NULL);
    vars[nvars++] = strtoll(argv[a], NULL, 10);
  }
  if (nvars != tlib_num_vars) return fail("wrong number of variables", NULL);
  if (a == argc) return fail("no --", NULL);
  ++a;
  int entries = 0;
  for (int i = 0; i < tlib_num_params; ++i) entries += tlib_params[i].devices;
  if (argc - a != entries) return fail("wrong number of entries", NULL);
  void **bufs = calloc((size_t)entries + 1, sizeof(void *));
  size_t *bytes = calloc((size_t)entries + 1, sizeof(size_t));
  if (!bufs || !bytes) return fail("out of memory", NULL);
  void *ws = zeroed(tlib_workspace_bytes());
  if (!ws) return fail("out of memory", NULL);
  int rc = init ? tlib_init(ws, pf, pfBytes) : 0;
  if (rc != 0) {
    fprintf(stderr, "driver: tlib_init returned %d: %s\n", rc, tlib_strerror(rc));
    return 1;
  }
  for (int run = 0; run < 2; ++run) {
    for (int i = 0, k = 0; i < tlib_num_params; ++i)
      for (int d = 0; d < tlib_params[i].devices; ++d, ++k) {
        bytes[k] = (size_t)tlib_params[i].bytes;
        if (!bufs[k] && !(bufs[k] = zeroed(bytes[k]))) return fail("out of memory", NULL);
        memset(bufs[k], 0, bytes[k]);
        const char *spec = argv[a + k], *colon = strchr(spec, ':');
        if (!colon) return fail("an entry without ':'", spec);
        if (colon != spec) {
          char path[4096];
          snprintf(path, sizeof path, "%.*s", (int)(colon - spec), spec);
          FILE *f = fopen(path, "rb");
          if (!f) return fail("cannot open", path);
          size_t got = fread(bufs[k], 1, bytes[k], f);
          int extra = fgetc(f);
          fclose(f);
          if (got != bytes[k] || extra != EOF) return fail("input of the wrong size", path);
        }
      }
    rc = tlib_run_params(bufs, vars, ws);
    if (rc != expect) {
      fprintf(stderr, "driver: tlib_run_params (run %d) returned %d, expected %d: %s\n", run + 1, rc, expect, tlib_strerror(rc));
      return 1;
    }
  }
  for (int k = 0; k < entries; ++k) {
    const char *out = strchr(argv[a + k], ':') + 1;
    if (!*out) continue;
    FILE *f = fopen(out, "wb");
    if (!f || fwrite(bufs[k], 1, bytes[k], f) != bytes[k] || fclose(f) != 0) return fail("cannot write", out);
  }
  for (int k = 0; k < entries; ++k) free(bufs[k]);
  free(bufs);
  free(bytes);
  free(ws);
  free(pf);
  return 0;
}
