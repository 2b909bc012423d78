/* Runs two packages in one program through their C APIs: the MLP (x: f32[s0, 784], here 3 rows)
   and the attention block (x: f32[2, 8, 32]), on inputs x[i] = sin(0.37 * i) / 2, and prints
   every output as "name rank sizes... : values..." (the tests compare them with Kiln's
   interpreter). Usage: two_models_c MLP_WEIGHTS ATTENTION_WEIGHTS */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "attention.h"
#include "mlp.h"

static float* sample_input(size_t count) {
  float* values = malloc(count * sizeof(float));
  for (size_t i = 0; i < count && values != NULL; ++i) values[i] = (float)(sin(0.37 * (double)i) / 2);
  return values;
}

static void print(const char* model, const char* name, const KilnTensor* tensor) {
  size_t count = 1;
  printf("%s.%s %d", model, name, tensor->rank);
  for (int d = 0; d < tensor->rank; ++d) {
    printf(" %lld", (long long)tensor->sizes[d]);
    count *= (size_t)tensor->sizes[d];
  }
  printf(" :");
  for (size_t i = 0; i < count; ++i) printf(" %.9g", (double)((const float*)tensor->data)[i]);
  printf("\n");
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MLP_WEIGHTS ATTENTION_WEIGHTS\n", argv[0]);
    return 2;
  }
  mlp_model* classifier = NULL;
  attention_model* block = NULL;
  if (mlp_create(argv[1], &classifier) != KILN_OK) {
    fprintf(stderr, "error: %s\n", mlp_last_error());
    return 1;
  }
  if (attention_create(argv[2], &block) != KILN_OK) {
    fprintf(stderr, "error: %s\n", attention_last_error());
    mlp_destroy(classifier);
    return 1;
  }
  int status = 0;
  float* x = sample_input(3 * 784);
  float* y = sample_input(2 * 8 * 32);
  const int64_t x_sizes[] = {3, 784};
  const int64_t y_sizes[] = {2, 8, 32};
  KilnTensor mlp_in = {x, x_sizes, NULL, 2, KILN_F32};
  KilnTensor attention_in = {y, y_sizes, NULL, 3, KILN_F32};
  KilnTensor out[1];
  if (mlp_run(classifier, &mlp_in, 1, out, 1) == KILN_OK) {
    print("mlp", mlp_output(0)->name, &out[0]);
  } else {
    fprintf(stderr, "error: %s\n", mlp_last_error());
    status = 1;
  }
  if (status == 0 && attention_run(block, &attention_in, 1, out, 1) == KILN_OK) {
    print("attention", attention_output(0)->name, &out[0]);
  } else if (status == 0) {
    fprintf(stderr, "error: %s\n", attention_last_error());
    status = 1;
  }
  free(x);
  free(y);
  mlp_destroy(classifier);
  attention_destroy(block);
  return status;
}
