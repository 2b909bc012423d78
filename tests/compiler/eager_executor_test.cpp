// Tests of eager mode (compiler/eager_executor.h) on small graphs with values worked out by
// hand: what becomes an instruction (computing nodes) and what does not (views), memory
// released after its last reader, in-place writes through views of intermediates and of the
// caller's inputs, a reshape that must copy, outputs that share memory or are inputs, tuple
// values, and every kind of error: input checks, a kernel's error naming its node (and the VM
// usable after it), an error in a node nobody reads, and out-of-memory.
#include "compiler/eager_executor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/interpreter.h"
#include "runtime/vm/errors.h"
#include "tests/compiler/eager_test_support.h"

namespace kiln::compiler {
namespace {

using ir::Graph;
using ir::Node;
using ir::SymInt;
using ir::TensorMeta;
using testing::difference;
using testing::eager_options;

Tensor tensor(const Sizes& sizes, const std::vector<double>& values, DType dtype = DType::f32) {
  return Tensor::from_doubles(sizes, values, dtype);
}

std::vector<double> values_of(const Tensor& tensor) {
  std::vector<double> values;
  for (int64_t i = 0; i < tensor.numel(); ++i) values.push_back(tensor.flat_double(i));
  return values;
}

Node* input(Graph& graph, const std::string& name, const Sizes& sizes, DType dtype = DType::f32) {
  ir::SymShape shape;
  for (int64_t size : sizes) shape.push_back(SymInt(size));
  return graph.create_placeholder(name, TensorMeta::contiguous(dtype, shape));
}

// The message of the kiln::Error `body` throws (a failure if it throws anything else).
template <typename Body>
std::string error_of(Body body) {
  try {
    body();
  } catch (const vm::InstructionFailed& error) {
    ADD_FAILURE() << "the VM's wrapper reached the caller: " << error.what();
  } catch (const Error& error) {
    return error.what();
  } catch (const std::exception& error) {
    ADD_FAILURE() << "not a kiln::Error: " << error.what();
  }
  return "(no error)";
}

class Eager : public ::testing::TestWithParam<bool> {
 protected:
  EagerExecutor eager{eager_options(GetParam())};
};

// relu(x @ w^T + b) with w = [[1, 0], [0, 1], [1, 1]], b = [0, -10, 1]: x [1, 2] gives
// [1, 0 (2 - 10 clamped), 4].
TEST_P(Eager, ViewsMakeNoInstructionAndBuffersAreReleasedAfterTheirLastReader) {
  Graph graph;
  graph.set_parameter("w", tensor({3, 2}, {1, 0, 0, 1, 1, 1}));
  graph.set_parameter("b", tensor({3}, {0, -10, 1}));
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {SymInt::symbol("s0"), SymInt(2)}));
  Node* t = graph.create_call("transpose", {graph.create_get_attr("w"), 0, 1});
  Node* mm = graph.create_call("matmul", {x, t});
  Node* add = graph.create_call("add", {mm, graph.create_get_attr("b")});
  graph.create_output({graph.create_call("relu", {add})});

  std::vector<Tensor> out = eager.run(graph, {{"x", tensor({2, 2}, {1, 2, -1, 0})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].sizes(), (Sizes{2, 3}));
  EXPECT_EQ(values_of(out[0]), (std::vector<double>{1, 0, 4, 0, 0, 0}));  // row 2: [-1, -10, 0] -> 0
  const EagerRunStats& stats = eager.last_run();
  EXPECT_EQ(stats.kernel_calls, 3u);  // matmul, add, relu
  EXPECT_EQ(stats.host_views, 1u);    // transpose
  EXPECT_EQ(stats.releases, 3u);      // matmul's and add's after their reader, relu's after the read-back
  EXPECT_EQ(stats.output_reads, 1u);
}

// c = x * 1; c[:, 0:2] += 10; c.T[2] -= 1 (column 2 of c); returns c.
TEST_P(Eager, InPlaceWritesThroughViewsOfAnIntermediate) {
  Graph graph;
  Node* x = input(graph, "x", {2, 3});
  Node* c = graph.create_call("mul", {x, 1.0});
  graph.create_call("add_", {graph.create_call("slice", {c, 1, 0, 2}), 10.0});
  Node* column = graph.create_call("select", {graph.create_call("transpose", {c, 0, 1}), 0, 2});
  graph.create_call("sub_", {column, 1.0});
  graph.create_output({c});

  Tensor x_value = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<Tensor> out = eager.run(graph, {{"x", x_value}});
  EXPECT_EQ(values_of(out.at(0)), (std::vector<double>{11, 12, 2, 14, 15, 5}));
  EXPECT_EQ(values_of(x_value), (std::vector<double>{1, 2, 3, 4, 5, 6}));  // untouched
  EXPECT_EQ(eager.last_run().kernel_calls, 3u);                             // mul, add_, sub_
  EXPECT_EQ(eager.last_run().host_views, 3u);                               // slice, transpose, select
}

// x.mul_(2) mutates the caller's tensor, and the output is that tensor, as in the interpreter.
TEST_P(Eager, InPlaceOnAnInputWritesTheCallersTensor) {
  Graph graph;
  Node* x = input(graph, "x", {3});
  Node* doubled = graph.create_call("mul_", {x, 2.0});
  graph.create_output({doubled, graph.create_call("add", {x, 1.0})});

  Tensor x_value = tensor({3}, {1, -2, 3});
  std::vector<Tensor> out = eager.run(graph, {{"x", x_value}});
  EXPECT_EQ(values_of(x_value), (std::vector<double>{2, -4, 6}));
  EXPECT_TRUE(out.at(0).shares_storage_with(x_value));
  EXPECT_EQ(values_of(out.at(1)), (std::vector<double>{3, -3, 7}));  // read after the write
  EXPECT_EQ(eager.last_run().output_reads, 1u);                      // only the fresh one is copied
}

// transpose(x) is not contiguous, so reshaping it to [6] copies: a kernel call of its own.
TEST_P(Eager, AReshapeThatMustCopyIsAKernelCall) {
  Graph graph;
  Node* x = input(graph, "x", {2, 3});
  Node* flat = graph.create_call("reshape", {graph.create_call("transpose", {x, 0, 1}), std::vector<ir::Argument>{6}});
  Node* again = graph.create_call("reshape", {flat, std::vector<ir::Argument>{3, 2}});  // a view of the copy
  graph.create_output({flat, again});

  Tensor x_value = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<Tensor> out = eager.run(graph, {{"x", x_value}});
  EXPECT_EQ(values_of(out.at(0)), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(out.at(1).sizes(), (Sizes{3, 2}));
  EXPECT_FALSE(out.at(0).shares_storage_with(x_value));
  EXPECT_TRUE(out.at(0).shares_storage_with(out.at(1)));  // views of one buffer stay views
  EXPECT_EQ(eager.last_run().kernel_calls, 1u);
  EXPECT_EQ(eager.last_run().host_views, 2u);  // transpose, the second reshape
}

// Outputs that are views of one intermediate come back as views of one copy of it, with the
// interpreter's layouts; an output that is a parameter is the parameter's tensor.
TEST_P(Eager, OutputsKeepTheirAliasingAndLayout) {
  Graph graph;
  graph.set_parameter("p", tensor({2}, {7, 8}));
  Node* x = input(graph, "x", {2, 2});
  Node* y = graph.create_call("add", {x, 1.0});
  graph.create_output({graph.create_call("transpose", {y, 0, 1}), graph.create_call("select", {y, 0, 1}),
                       graph.create_get_attr("p")});

  std::map<std::string, Tensor> inputs{{"x", tensor({2, 2}, {1, 2, 3, 4})}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  std::vector<Tensor> out = eager.run(graph, inputs);
  EXPECT_EQ(difference(expected, out), "");
  EXPECT_EQ(values_of(out.at(0)), (std::vector<double>{2, 4, 3, 5}));
  EXPECT_EQ(out.at(0).strides(), (Sizes{1, 2}));
  EXPECT_EQ(values_of(out.at(1)), (std::vector<double>{4, 5}));
  EXPECT_TRUE(out.at(0).shares_storage_with(out.at(1)));
  EXPECT_TRUE(out.at(2).shares_storage_with(*graph.parameter("p")));
  EXPECT_EQ(eager.last_run().output_reads, 1u);
}

// var_mean over rows of [[1, 3], [2, 2]] = ([2, 0], [2, 2]) with Bessel's correction.
TEST_P(Eager, TupleValuesAndGetitem) {
  Graph graph;
  Node* x = input(graph, "x", {2, 2});
  Node* both = graph.create_call("var_mean", {x, std::vector<ir::Argument>{1}});
  graph.create_output({graph.create_call("getitem", {both, 0}), graph.create_call("getitem", {both, 1})});
  std::vector<Tensor> out = eager.run(graph, {{"x", tensor({2, 2}, {1, 3, 2, 2})}});
  EXPECT_EQ(values_of(out.at(0)), (std::vector<double>{2, 0}));
  EXPECT_EQ(values_of(out.at(1)), (std::vector<double>{2, 2}));
  EXPECT_EQ(eager.last_run().kernel_calls, 1u);
  EXPECT_EQ(eager.last_run().host_views, 2u);
}

TEST_P(Eager, EmptyTensors) {
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {SymInt::symbol("s0"), SymInt(3)}));
  graph.create_output({graph.create_call("sum", {graph.create_call("exp", {x}), std::vector<ir::Argument>{1}})});
  std::vector<Tensor> out = eager.run(graph, {{"x", Tensor::zeros({0, 3}, DType::f32)}});
  EXPECT_EQ(out.at(0).sizes(), (Sizes{0}));
}

// ---------------------------------------------------------------- errors

Graph integer_division() {
  Graph graph;
  Node* x = input(graph, "x", {2}, DType::i64);
  Node* y = input(graph, "y", {2}, DType::i64);
  Node* ratio = graph.create_call("remainder", {x, y}, {}, "ratio");
  graph.create_output({graph.create_call("add", {ratio, int64_t(1)})});
  return graph;
}

TEST_P(Eager, AKernelErrorNamesItsNodeAsTheInterpretersDoes) {
  Graph graph = integer_division();
  std::map<std::string, Tensor> inputs{{"x", tensor({2}, {1, 2}, DType::i64)}, {"y", tensor({2}, {1, 0}, DType::i64)}};
  std::string expected = error_of([&] { ir::interpret(graph, inputs); });
  EXPECT_EQ(expected, "node %ratio (remainder): ZeroDivisionError: integer remainder by zero");
  EXPECT_EQ(error_of([&] { eager.run(graph, inputs); }), expected);

  // The VM stays usable: the next run succeeds. 7 % 3 + 1 = 2, 2 % 5 + 1 = 3.
  inputs["x"] = tensor({2}, {7, 2}, DType::i64);
  inputs["y"] = tensor({2}, {3, 5}, DType::i64);
  EXPECT_EQ(values_of(eager.run(graph, inputs).at(0)), (std::vector<double>{2, 3}));
}

TEST_P(Eager, AnErrorInANodeNobodyReadsStillFailsTheRun) {
  Graph graph;
  Node* x = input(graph, "x", {2}, DType::i64);
  graph.create_call("remainder", {x, int64_t(0)}, {}, "unused");
  graph.create_output({graph.create_call("neg", {x})});
  std::map<std::string, Tensor> inputs{{"x", tensor({2}, {1, 2}, DType::i64)}};
  EXPECT_EQ(error_of([&] { eager.run(graph, inputs); }), error_of([&] { ir::interpret(graph, inputs); }));
}

TEST_P(Eager, InputErrorsAreTheInterpreters) {
  Graph graph = integer_division();
  std::map<std::string, Tensor> missing{{"x", tensor({2}, {1, 2}, DType::i64)}};
  EXPECT_EQ(error_of([&] { eager.run(graph, missing); }), "missing input 'y' (expected i64[2])");
  std::map<std::string, Tensor> wrong{{"x", tensor({2}, {1, 2})}, {"y", tensor({2}, {1, 2}, DType::i64)}};
  EXPECT_EQ(error_of([&] { eager.run(graph, wrong); }), error_of([&] { ir::interpret(graph, wrong); }));
  EXPECT_EQ(eager.vm().stats().in_flight, 0u);
}

// An input of symbolic size: a view past a storage of constant size is refused when the graph
// is built (ir/ops/view_shapes.cpp), one past this one only when it runs.
Node* input_of_symbolic_size(Graph& graph, const std::string& name, DType dtype = DType::f32) {
  return graph.create_placeholder(name, TensorMeta::contiguous(dtype, {SymInt::symbol("s0")}));
}

TEST_P(Eager, AViewErrorNamesItsNode) {
  Graph graph;
  Node* x = input_of_symbolic_size(graph, "x");
  // A valid node by its shape rule, out of the storage's bounds at run time.
  Node* view = graph.create_call("as_strided", {x, std::vector<ir::Argument>{2}, std::vector<ir::Argument>{1},
                                                int64_t(3)}, {}, "window");
  graph.create_output({view});
  std::map<std::string, Tensor> inputs{{"x", tensor({4}, {1, 2, 3, 4})}};
  std::string expected = error_of([&] { ir::interpret(graph, inputs); });
  EXPECT_NE(expected.find("node %window (as_strided): "), std::string::npos) << expected;
  EXPECT_EQ(error_of([&] { eager.run(graph, inputs); }), expected);
}

// A kernel that fails before a view that cannot be built: the kernel's error, as the
// interpreter, which never reaches the view, reports it.
TEST_P(Eager, TheFirstFailingNodeIsReported) {
  Graph graph;
  Node* x = input_of_symbolic_size(graph, "x", DType::i64);
  Node* ratio = graph.create_call("remainder", {x, int64_t(0)}, {}, "ratio");
  Node* view = graph.create_call("as_strided", {ratio, std::vector<ir::Argument>{2}, std::vector<ir::Argument>{1},
                                                int64_t(3)}, {}, "window");
  graph.create_output({view});
  std::map<std::string, Tensor> inputs{{"x", tensor({4}, {1, 2, 3, 4}, DType::i64)}};
  std::string expected = error_of([&] { ir::interpret(graph, inputs); });
  EXPECT_EQ(expected, "node %ratio (remainder): ZeroDivisionError: integer remainder by zero");
  EXPECT_EQ(error_of([&] { eager.run(graph, inputs); }), expected);
}

// 4 KB do not fit a VM allowed 1 KB: kiln::OutOfMemory naming the kernel's node; the VM
// still runs what fits.
TEST_P(Eager, OutOfMemoryNamesTheKernel) {
  EagerOptions options = eager_options(GetParam());
  options.vm.memory_limit = 1024;
  options.vm.allocator.min_chunk_bytes = 512;
  EagerExecutor small(options);
  Graph big;
  big.create_output({big.create_call("full", {std::vector<ir::Argument>{1024}, 1.0}, {}, "ones")});
  try {
    small.run(big, {});
    ADD_FAILURE() << "no error";
  } catch (const OutOfMemory& error) {
    EXPECT_NE(std::string(error.what()).find("'%ones (full)'"), std::string::npos) << error.what();
    EXPECT_EQ(error.requested_bytes(), 4096u);
  }
  Graph tiny;
  tiny.create_output({tiny.create_call("full", {std::vector<ir::Argument>{4}, 1.0})});
  EXPECT_EQ(values_of(small.run(tiny, {}).at(0)), (std::vector<double>{1, 1, 1, 1}));
}

// An executor can borrow a VM and use the streams it names; a name the VM lacks is an error.
TEST(EagerOnABorrowedVm, RunsOnTheStreamsItIsGiven) {
  vm::VmOptions options;
  options.streams = {vm::StreamSpec{"compute"}, vm::StreamSpec{"side"}};
  vm::VirtualMachine machine(options);
  EXPECT_EQ(error_of([&] { EagerExecutor(machine, {"nope"}); }),
            "the VM has no stream named 'nope'; its streams are 'compute', 'side', 'host'");
  EagerExecutor eager(machine, {"side"});
  ASSERT_EQ(eager.streams().size(), 1u);
  EXPECT_EQ(eager.streams()[0]->name(), "side");
  Graph graph;
  graph.create_output({graph.create_call("neg", {input(graph, "x", {2})})});
  EXPECT_EQ(values_of(eager.run(graph, {{"x", tensor({2}, {1, -2})}}).at(0)), (std::vector<double>{-1, 2}));
  EXPECT_EQ(machine.stats().in_flight, 0u);
}

INSTANTIATE_TEST_SUITE_P(VmModes, Eager, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "SingleThread" : "MultiThread";
                         });

}  // namespace
}  // namespace kiln::compiler
