// Compiled graphs as VM instructions (compiler/vm_graph.h): ordered by their buffers against
// kernels on other streams and against each other, with the numbers of a direct call; a result
// that does not fit its VM buffer is an error at sync, and what reads it is skipped.
#include "compiler/vm_graph.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "compiler/compile_driver.h"
#include "ir/graph.h"
#include "runtime/vm/virtual_machine.h"
#include "tests/support/differential.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;

// relu(x @ w + 1) for x [4, 6], w [6, 5] (w a parameter).
std::shared_ptr<Executable> compiled_layer() {
  ir::Graph graph;
  ir::Node* x = graph.create_placeholder("x", ir::TensorMeta::contiguous(DType::f32, {4, 6}));
  graph.set_parameter("w", test_support::random_tensor({6, 5}, DType::f32, 7));
  ir::Node* w = graph.create_get_attr("w");
  ir::Node* y = graph.create_call("relu", {graph.create_call("add", {graph.create_call("matmul", {x, w}), 1.0})});
  graph.create_output({y});
  CompileOptions options;
  options.cache_dir = test_support::shared_compile_cache(fs::path(KILN_BINARY_DIR) / "test-compile-cache");
  return std::make_shared<CompiledModel>(compile(graph, options));
}

vm::VmOptions two_streams() {
  vm::VmOptions options;
  options.streams = {vm::StreamSpec{"compute"}, vm::StreamSpec{"copy"}};
  return options;
}

TEST(VmGraph, AGraphRunIsOrderedByItsBuffersAgainstKernelsOnOtherStreams) {
  std::shared_ptr<Executable> layer = compiled_layer();
  const Tensor x = test_support::random_tensor({4, 6}, DType::f32, 8);
  const Tensor expected = layer->run({{"x", x}}).at(0);
  for (bool single_thread : {false, true}) {
    SCOPED_TRACE(single_thread ? "single thread" : "threads");
    vm::VmOptions options = two_streams();
    options.single_thread = single_thread;
    vm::VirtualMachine machine(options);
    vm::BufferPtr in = machine.new_buffer(x.nbytes()), out = machine.new_buffer(expected.nbytes());
    Tensor copied = Tensor::empty({4, 5}, DType::f32);
    machine.physical_run([&](vm::InstructionsBuilder& b) {
      b.kernel(machine.stream("copy"), "write x", {}, {in},
               [&](vm::CallContext& call) { call.output_tensor(0, {4, 6}, DType::f32).copy_from(x); });
      submit_graph_run(b, machine.stream("compute"), "layer", layer, {{"x", {in, {4, 6}, DType::f32}}},
                       {{out, {4, 5}, DType::f32}});
      b.kernel(machine.stream("copy"), "read y", {out}, {},
               [&](vm::CallContext& call) { copied.copy_from(call.input_tensor(0, {4, 5}, DType::f32)); });
    });
    machine.sync();
    EXPECT_EQ(std::memcmp(copied.data_ptr(), expected.data_ptr(), expected.nbytes()), 0);
  }
}

TEST(VmGraph, GraphRunsChainThroughTheirBuffers) {
  // y = layer(x); then the first 4 x 5 values of y, padded with a column of zeros, as the next x.
  std::shared_ptr<Executable> layer = compiled_layer();
  const Tensor x = test_support::random_tensor({4, 6}, DType::f32, 9);
  Tensor next = Tensor::zeros({4, 6}, DType::f32);
  next.slice(1, 0, 5).copy_from(layer->run({{"x", x}}).at(0));
  const Tensor expected = layer->run({{"x", next}}).at(0);
  vm::VirtualMachine machine(two_streams());
  vm::BufferPtr in = machine.new_buffer(x.nbytes()), middle = machine.new_buffer(4 * 5 * 4),
                padded = machine.new_buffer(x.nbytes()), out = machine.new_buffer(expected.nbytes());
  machine.physical_run([&](vm::InstructionsBuilder& b) {
    b.kernel(machine.stream("copy"), "write x", {}, {in},
             [&](vm::CallContext& call) { call.output_tensor(0, {4, 6}, DType::f32).copy_from(x); });
    submit_graph_run(b, machine.stream("compute"), "first", layer, {{"x", {in, {4, 6}, DType::f32}}},
                     {{middle, {4, 5}, DType::f32}});
    b.kernel(machine.stream("copy"), "pad", {middle}, {padded}, [&](vm::CallContext& call) {
      Tensor target = call.output_tensor(0, {4, 6}, DType::f32);
      target.copy_from(Tensor::zeros({4, 6}, DType::f32));
      target.slice(1, 0, 5).copy_from(call.input_tensor(0, {4, 5}, DType::f32));
    });
    submit_graph_run(b, machine.stream("compute"), "second", layer, {{"x", {padded, {4, 6}, DType::f32}}},
                     {{out, {4, 5}, DType::f32}});
  });
  Tensor got = Tensor::empty({4, 5}, DType::f32);
  machine.sync_read(out, [&](const Storage& storage) { std::memcpy(got.data_ptr(), storage.data(), got.nbytes()); });
  EXPECT_EQ(std::memcmp(got.data_ptr(), expected.data_ptr(), expected.nbytes()), 0);
}

TEST(VmGraph, AResultThatDoesNotFitItsBufferIsAnErrorAtSync) {
  std::shared_ptr<Executable> layer = compiled_layer();
  const Tensor x = test_support::random_tensor({4, 6}, DType::f32, 10);
  vm::VirtualMachine machine(two_streams());
  vm::BufferPtr in = machine.new_buffer(x.nbytes()), out = machine.new_buffer(4 * 6 * 4);
  bool read = false;
  machine.physical_run([&](vm::InstructionsBuilder& b) {
    b.kernel(machine.stream("copy"), "write x", {}, {in},
             [&](vm::CallContext& call) { call.output_tensor(0, {4, 6}, DType::f32).copy_from(x); });
    submit_graph_run(b, machine.stream("compute"), "layer", layer, {{"x", {in, {4, 6}, DType::f32}}},
                     {{out, {4, 6}, DType::f32}});
    b.kernel(machine.stream("copy"), "read y", {out}, {}, [&](vm::CallContext&) { read = true; });
  });
  try {
    machine.sync();
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("graph run 'layer': output 0 is f32[4, 5], its VM buffer was given for f32[4, 6]"),
              std::string::npos)
        << error.what();
  }
  EXPECT_FALSE(read) << "an instruction reading the failed output ran";
}

}  // namespace
}  // namespace kiln::compiler
