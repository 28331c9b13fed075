/* The reference for sp_ew_fma_16m: a STREAM-style triad out[i] = a[i] * b[i] + c[i] over N float32s,
 * built with gcc -O3 -march=native and split across T threads as uopc-run splits a kernel (contiguous
 * parts). Prints the best time of REPS runs in milliseconds. Usage: triad N THREADS REPS */
#define _POSIX_C_SOURCE 199309L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static float *out, *a, *b, *c;
static long n;
static int threads;

static void *part(void *arg) {
  long t = (long)arg, lo = n * t / threads, hi = n * (t + 1) / threads;
  for (long i = lo; i < hi; i++) out[i] = a[i] * b[i] + c[i];
  return NULL;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

int main(int argc, char **argv) {
  if (argc != 4) return 2;
  n = atol(argv[1]), threads = atoi(argv[2]);
  int reps = atoi(argv[3]);
  if (n < 1 || threads < 1 || threads > 256 || reps < 1) return 2;
  out = malloc(n * sizeof *out), a = malloc(n * sizeof *a), b = malloc(n * sizeof *b), c = malloc(n * sizeof *c);
  if (!out || !a || !b || !c) return 1;
  for (long i = 0; i < n; i++) a[i] = (float)(i % 7), b[i] = (float)(i % 5), c[i] = 1.0f, out[i] = 0.0f;
  double best = 1e30;
  pthread_t th[256];
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    for (long t = 0; t < threads; t++) pthread_create(&th[t], NULL, part, (void *)t);
    for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
    double t1 = now();
    if (t1 - t0 < best) best = t1 - t0;
  }
  printf("%.4f\n", best);
  return out[n / 2] == -1.0f; /* (keeps the stores) */
}
