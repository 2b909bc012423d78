// Kiln's public API in one include: the runtime tensor and its files (kiln/tensor.h,
// kiln/npy.h, kiln/safetensors.h), the module API and tracing (kiln::nn, kiln::Var,
// kiln::trace), graphs (kiln::Graph: load a model file, print, save, interpret), compiling a
// graph for a target (kiln::compile -> kiln::Model), compiling a function with guards
// (kiln::compile(fn)), compiled training (kiln::compile_training, data-parallel across
// processes with kiln::distributed), and loading a package of
// `kiln compile -o` (kiln::Package). Every header under
// include/kiln/ includes only <kiln/...> and standard headers.
//
//   kiln::manual_seed(0);
//   kiln::nn::Sequential model(kiln::nn::Linear(784, 128), kiln::nn::ReLU(), kiln::nn::Linear(128, 10));
//   model.eval();
//   kiln::Graph graph = kiln::trace(model, {kiln::Tensor::zeros({32, 784}, kiln::DType::f32)});
//   kiln::Model compiled = kiln::compile(graph);
//   std::vector<kiln::Tensor> outputs = compiled.run({{"x", input}});
#pragma once

#include "kiln/compile.h"
#include "kiln/compile_options.h"
#include "kiln/device.h"
#include "kiln/distributed.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/graph.h"
#include "kiln/isa.h"
#include "kiln/model.h"
#include "kiln/nn/activation.h"
#include "kiln/nn/attention.h"
#include "kiln/nn/container.h"
#include "kiln/nn/conv.h"
#include "kiln/nn/dropout.h"
#include "kiln/nn/embedding.h"
#include "kiln/nn/flatten.h"
#include "kiln/nn/functional.h"
#include "kiln/nn/init.h"
#include "kiln/nn/linear.h"
#include "kiln/nn/module.h"
#include "kiln/nn/normalization.h"
#include "kiln/npy.h"
#include "kiln/optimizer_options.h"
#include "kiln/package.h"
#include "kiln/random.h"
#include "kiln/safetensors.h"
#include "kiln/shape.h"
#include "kiln/tensor.h"
#include "kiln/tensor_type.h"
#include "kiln/trace.h"
#include "kiln/training.h"
#include "kiln/var.h"
