// Kiln's public API in one include: the module API and tracing (kiln::nn, kiln::Var,
// kiln::trace), the runtime tensor, and the compile driver that compiles traced graphs for a
// target (cpu by default; CompileOptions::target).
//
//   kiln::manual_seed(0);
//   kiln::nn::Sequential model(kiln::nn::Linear(784, 128), kiln::nn::ReLU(), kiln::nn::Linear(128, 10));
//   model.eval();
//   kiln::ir::Graph graph = kiln::trace(model, {kiln::Tensor::zeros({32, 784}, kiln::DType::f32)});
//   kiln::compiler::CompiledModel compiled = kiln::compiler::compile(graph);
//   std::vector<kiln::Tensor> outputs = compiled.run({{"x", input}});
#pragma once

#include "compiler/compile_driver.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
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
#include "kiln/random.h"
#include "kiln/trace.h"
#include "kiln/compile.h"
#include "kiln/training.h"
#include "kiln/var.h"
#include "runtime/error.h"
#include "runtime/safetensors.h"
#include "runtime/tensor.h"
