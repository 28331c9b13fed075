/* A program that links a compiled model as a C library: the MLP of examples/tinygrad_mlp.py, exported with
 * uopc_tinygrad into mlp/ and compiled by
 *
 *   uopc mlp/graph.json -o OUT --emit library --embed-params mlp/inputs.safetensors
 *
 * into OUT/mlp.h, OUT/mlp.c and the weights (l1.weight, l1.bias, l2.weight, l2.bias): OUT/mlp_params.bin,
 * which OUT/mlp_params.S takes with .incbin (the library is named after the folder: the graph is graph.json).
 * The program passes only the model's input, input0, a 2x4 batch, and prints the 2x3 softmax it returns.
 * Build: cc -O2 -I OUT main.c OUT/mlp.c OUT/mlp_params.S -lm. */
#include "mlp.h"

#include <stdio.h>
#include <stdlib.h>

int main(void) {
  static const float x[2 * 4] = {1.0f, -0.5f, 0.25f, 2.0f, -1.5f, 0.75f, 0.0f, -0.25f};
  float y[2 * 3] = {0};
  void *workspace = malloc(mlp_workspace_bytes() ? mlp_workspace_bytes() : 1);
  if (!workspace) return 1;

  mlp_inputs in = {.input0 = x};
  mlp_outputs out = {.output0 = y};
  int rc = mlp_run(&in, &out, NULL, workspace);
  free(workspace);
  if (rc != 0) {
    fprintf(stderr, "mlp_run failed: %d\n", rc);
    return 1;
  }
  for (int i = 0; i < 2; ++i) printf("%.6f %.6f %.6f\n", y[3 * i], y[3 * i + 1], y[3 * i + 2]);
  return 0;
}
