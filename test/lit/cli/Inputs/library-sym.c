/* emit-library.test: the library of run/Inputs/symbolic-shape.json (--name sym: 3 outputs from 30 inputs and
 * its variable i in [1, 10]) through both entry points, a variable out of its range and null pointers. */
#include "sym.h"

#include <stdio.h>
#include <stdlib.h>

int main(void) {
  float x[30], y[3] = {0};
  for (int k = 0; k < 30; ++k) x[k] = (float)k;
  void *ws = malloc(sym_workspace_bytes() + 1);
  printf("params %d vars %d %s [%lld, %lld] workspace %s\n", sym_num_params, sym_num_vars, sym_variables[0].name,
         (long long)sym_variables[0].min, (long long)sym_variables[0].max, sym_workspace_bytes() ? "some" : "none");
  for (int i = 0; i < sym_num_params; ++i)
    printf("param %s %s %lld %lld %s %d slot %lld\n", sym_params[i].name, sym_params[i].dtype, (long long)sym_params[i].numel,
           (long long)sym_params[i].bytes, sym_params[i].role, sym_params[i].devices, (long long)sym_param_slots[i]);
  sym_inputs in = {.slot1 = x};
  sym_outputs out = {.slot0 = y};
  sym_vars v = {.i = 4};
  int rc = sym_run(&in, &out, &v, ws);
  printf("run i=4: %d -> %g %g %g\n", rc, y[0], y[1], y[2]);
  void *params[2] = {y, x};
  int64_t vars[1] = {2};
  rc = sym_run_params(params, vars, ws);
  printf("run_params i=2: %d -> %g %g %g\n", rc, y[0], y[1], y[2]);
  v.i = 11;
  printf("i=11: %d\n", sym_run(&in, &out, &v, ws));
  v.i = 0;
  printf("i=0: %d\n", sym_run(&in, &out, &v, ws));
  printf("no vars: %d\n", sym_run(&in, &out, NULL, ws));
  params[1] = NULL;
  printf("null param: %d\n", sym_run_params(params, vars, ws));
  printf("null params: %d\n", sym_run_params(NULL, vars, ws));
  free(ws);
  return 0;
}
