// Tests of the library-call convolution lowering (codegen/lowering_convolution.cpp with
// LoweringOptions::library_convolution) and of the channels-last layout it brings
// (codegen/lowering_layout.cpp): differential checks against the interpreter through the loop
// evaluator's reference convolution (2-d f32 with groups, stride, asymmetric padding, dilation,
// bias, depthwise, 1x1), the layout flowing from one convolution through pointwise nodes and
// pools into the next without another transposing copy, graph outputs written back in the
// graph's NCHW layout, values read through views (flatten into a matmul), 1-d convolutions as
// the library's over [N, W, C] (the layout flowing through a 1-d pool and a transpose), 3-d ones
// over [N, D, H, W, C] (through a 3-d pool and a concatenation), what stays on im2col + GEMM
// (f64), fully connected layers written as
// convolutions (1x1 kernel, 1x1 output) lowered as one GEMM, inputs of one channel read
// without a copy, and transposed convolutions as GEMM + col2im (1-3 spatial dims, strides,
// padding, dilation, output padding, groups, f64, channels-last inputs read in place).
#include <gtest/gtest.h>

#include "tests/codegen/lowering_test_support.h"

namespace kiln::codegen::testing {
namespace {

LoweringOptions library() {
  LoweringOptions options;
  options.library_convolution = true;
  return options;
}

// The Pointwise nodes that copy a value into channels-last order for a convolution.
int transposing_copies(const LoopProgram& program) {
  int count = 0;
  for (const LoopNode& node : program.nodes) {
    const std::string suffix = "_input";
    if (node.kind == NodeKind::Pointwise && node.name.size() > suffix.size() &&
        node.name.compare(node.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      ++count;
  }
  return count;
}

// The name of the buffer library convolution `name` reads its input from ("" when there is none).
std::string convolution_input(const LoopProgram& program, const std::string& name) {
  for (const LoopNode& node : program.nodes) {
    if (node.kind == NodeKind::Extern && node.name == name) return program.buffer(node.extern_call.inputs[0].buffer).name;
  }
  return "";
}

TEST(LoweringLibraryConvolution, GeometriesMatchTheInterpreter) {
  struct Case {
    std::string input, weight, bias, stride, padding, dilation;
    int groups;
  };
  const Case cases[] = {
      {"[1, 3, 7, 6]", "[5, 3, 3, 2]", "[5]", "[1, 1]", "[1, 0]", "[1, 1]", 1},
      {"[2, 4, 7, 7]", "[4, 1, 3, 3]", "[4]", "[2, 1]", "[1, 2]", "[1, 2]", 4},  // depthwise
      {"[2, 6, 5, 5]", "[4, 3, 1, 1]", "", "[1]", "[0]", "[1]", 2},
      {"[2, 3, 5, 5]", "[4, 3, 1, 1]", "[4]", "[2]", "[0]", "[1]", 1},
      {"[1, 2, 9, 8]", "[6, 2, 3, 3]", "", "[3, 2]", "[2]", "[2, 1]", 1},
      // 1-d (an audio encoder's), channels-last [N, W, C]; the loop evaluator's reference runs
      // them as the 2-d ones of height 1.
      {"[2, 1, 40]", "[6, 1, 10]", "[6]", "[5]", "[0]", "[1]", 1},  // wav2vec's stem: one channel in
      {"[1, 4, 17]", "[6, 2, 3]", "", "[2]", "[1]", "[1]", 2},
      {"[2, 6, 11]", "[6, 1, 5]", "[6]", "[1]", "[4]", "[2]", 6},  // depthwise, dilated
      {"[3, 5, 9]", "[4, 5, 3]", "[4]", "[1]", "[1]", "[1]", 1},
      // 3-d (video, volumes), channels-last [N, D, H, W, C]; the evaluator's reference walks the
      // depth too.
      {"[1, 3, 5, 6, 7]", "[4, 3, 3, 3, 3]", "[4]", "[1, 1, 1]", "[1, 1, 1]", "[1, 1, 1]", 1},
      {"[2, 4, 6, 7, 5]", "[6, 2, 3, 1, 1]", "", "[2, 1, 1]", "[1, 0, 0]", "[1]", 2},  // (2+1)-d's temporal, grouped
      {"[1, 2, 4, 9, 8]", "[5, 2, 1, 3, 3]", "[5]", "[1, 2, 2]", "[0, 2, 1]", "[1, 2, 1]", 1},
  };
  for (const Case& c : cases) {
    std::vector<std::string> inputs = {"x: f32" + c.input, "w: f32" + c.weight};
    if (!c.bias.empty()) inputs.push_back("b: f32" + c.bias);
    std::string args = "%x, %w, " + std::string(c.bias.empty() ? "None" : "%b") + ", " + c.stride + ", " + c.padding +
                       ", " + c.dilation + ", False, [0], " + std::to_string(c.groups);
    ir::Graph graph = parse(graph_text(inputs, {op_line("y", "convolution", args)}, "y"));
    EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 4), library()), "") << args;
    std::map<std::string, int> kinds = node_kinds(lower(graph, library()));
    EXPECT_EQ(kinds["Convolution"], 1) << args;
    EXPECT_EQ(kinds["Gemm"], 0) << args;
  }
}

TEST(LoweringLibraryConvolution, LayoutFlowsThroughPointwiseNodesAndPools) {
  // conv -> relu -> max pool -> conv -> add (a residual of the pool) -> avg pool: one copy of
  // the input into channels-last order, none between the convolutions (16 output channels: 8
  // would make the first Kiln's direct loop).
  ir::Graph graph = parse(graph_text(
      {"x: f32[2, 3, 12, 12]", "w1: f32[16, 3, 3, 3]", "b1: f32[16]", "w2: f32[16, 16, 3, 3]"},
      {op_line("c1", "convolution", "%x, %w1, %b1, [1, 1], [1, 1], [1, 1], False, [0], 1"),
       op_line("r", "relu", "%c1"), op_line("p", "max_pool", "%r, [3, 3], [2, 2], [1, 1]"),
       op_line("c2", "convolution", "%p, %w2, None, [1, 1], [1, 1], [1, 1], False, [0], 1"),
       op_line("s", "add", "%c2, %p"), op_line("y", "avg_pool", "%s, [2, 2], [2, 2], [0, 0]")},
      "y"));
  EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 3), library()), "");
  LoopProgram program = lower(graph, library());
  EXPECT_EQ(node_kinds(program)["Convolution"], 2);
  EXPECT_EQ(transposing_copies(program), 1);
  EXPECT_EQ(convolution_input(program, "c2"), "p") << "the second convolution reads the pool's own buffer";
}

// An input of one channel (a grayscale image) already is in channels-last order, and so is an
// image of 1x1: the convolution reads the input's own buffer, no copy. Three channels need one.
TEST(LoweringLibraryConvolution, OneChannelOrAOneByOneImageIsReadWithoutACopy) {
  struct Case {
    std::string input, weight;
    int copies;
  };
  const Case cases[] = {{"[4, 1, 9, 9]", "[6, 1, 5, 5]", 0}, {"[4, 8, 1, 1]", "[6, 8, 1, 1]", 0},
                        {"[4, 3, 9, 9]", "[6, 3, 5, 5]", 1}};
  for (const Case& c : cases) {
    ir::Graph graph = parse(graph_text(
        {"x: f32" + c.input, "w: f32" + c.weight},
        {op_line("c", "convolution", "%x, %w, None, [1, 1], [0, 0], [1, 1], False, [0], 1"), op_line("y", "relu", "%c")},
        "y"));
    EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 6), library()), "") << c.input;
    LoopProgram program = lower(graph, library());
    EXPECT_EQ(transposing_copies(program), c.copies) << c.input;
    for (const LoopNode& node : program.nodes) {
      if (node.kind == NodeKind::Extern && c.copies == 0) {
        EXPECT_EQ(program.buffer(node.extern_call.inputs[0].buffer).kind, BufferKind::Input) << c.input;
      }
    }
  }
}

TEST(LoweringLibraryConvolution, OutputsAndViewsSeeTheGraphsLayout) {
  // Two outputs: the convolution itself (stored channels-last, written back as NCHW) and a
  // flatten of its global average pool into a matmul (a view of a channels-last value).
  ir::Graph graph = parse(graph_text(
      {"x: f32[2, 3, 6, 5]", "w: f32[4, 3, 3, 3]", "m: f32[4, 7]"},
      {op_line("c", "convolution", "%x, %w, None, [1, 1], [1, 1], [1, 1], False, [0], 1"),
       op_line("g", "adaptive_avg_pool", "%c, [1, 1]"), op_line("f", "reshape", "%g, [2, 4]"),
       op_line("y", "matmul", "%f, %m")},
      "c, y"));
  EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 5), library()), "");
}

// Two 1-d convolutions with a relu and a 1-d max pool between them, then a transpose to
// [N, W, C] (a sequence model's input): one copy of the input into channels-last order, the pool
// iterating channels-last, the second convolution reading the pool's own buffer.
TEST(LoweringLibraryConvolution, OneDimensionalLayoutFlowsThroughPoolsIntoTheNextConvolution) {
  ir::Graph graph = parse(graph_text(
      {"x: f32[2, 3, 30]", "w1: f32[16, 3, 3]", "w2: f32[8, 16, 3]"},
      {op_line("c1", "convolution", "%x, %w1, None, [1], [1], [1], False, [0], 1"), op_line("r", "relu", "%c1"),
       op_line("p", "max_pool", "%r, [2], [2], [0]"),
       op_line("c2", "convolution", "%p, %w2, None, [1], [1], [1], False, [0], 1"),
       op_line("y", "transpose", "%c2, 1, 2")},
      "y"));
  EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 3), library()), "");
  LoopProgram program = lower(graph, library());
  EXPECT_EQ(node_kinds(program)["Convolution"], 2);
  EXPECT_EQ(transposing_copies(program), 1);
  EXPECT_EQ(convolution_input(program, "c2"), "p");
  for (const LoopNode& node : program.nodes) {
    if (node.name == "p") {
      EXPECT_EQ(node.ranges.back(), SymInt(16)) << "the pool iterates [N, W, C]";
    }
  }
}

// 3-d convolutions: a relu after the first, a 3-d max pool of it concatenated with a strided
// convolution of it, then a third: one copy of the input into channels-last order, the pool and the
// concatenation iterating [N, D, H, W, C], the last convolution reading the concatenation's own
// buffer.
TEST(LoweringLibraryConvolution, ThreeDimensionalLayoutFlowsThroughPoolsAndConcatenations) {
  ir::Graph graph = parse(graph_text(
      {"x: f32[1, 3, 4, 8, 8]", "w1: f32[16, 3, 3, 3, 3]", "w2: f32[8, 16, 1, 2, 2]", "w3: f32[8, 24, 3, 3, 3]"},
      {op_line("c1", "convolution", "%x, %w1, None, [1, 1, 1], [1, 1, 1], [1, 1, 1], False, [0], 1"),
       op_line("r", "relu", "%c1"), op_line("p", "max_pool", "%r, [2, 2, 2], [2, 2, 2], [0, 0, 0]"),
       op_line("c2", "convolution", "%r, %w2, None, [2, 2, 2], [0, 0, 0], [1, 1, 1], False, [0], 1"),
       op_line("both", "cat", "[%p, %c2], 1"),
       op_line("y", "convolution", "%both, %w3, None, [1, 1, 1], [1, 1, 1], [1, 1, 1], False, [0], 1")},
      "y"));
  EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 7), library()), "");
  LoopProgram program = lower(graph, library());
  EXPECT_EQ(node_kinds(program)["Convolution"], 3);
  EXPECT_EQ(transposing_copies(program), 1);
  EXPECT_EQ(convolution_input(program, "y"), "both");
  for (const LoopNode& node : program.nodes) {
    if (node.name == "p" || node.name == "both") {
      EXPECT_EQ(node.ranges.back(), SymInt(node.name == "p" ? 16 : 24)) << node.name << " iterates [N, D, H, W, C]";
    }
  }
}

TEST(LoweringLibraryConvolution, OtherDtypesStayOnIm2col) {
  for (const std::string& declaration :
       {std::string("x: f64[1, 2, 5, 5]|w: f64[3, 2, 3, 3]"), std::string("x: f64[1, 2, 9]|w: f64[3, 2, 3]"),
        std::string("x: f64[1, 2, 4, 4, 4]|w: f64[3, 2, 2, 2, 2]")}) {
    size_t bar = declaration.find('|');
    std::string pads = declaration.find("5, 5]") != std::string::npos ? "[1, 1]" : "[0]";
    ir::Graph graph = parse(graph_text({declaration.substr(0, bar), declaration.substr(bar + 1)},
                                       {op_line("y", "convolution", "%x, %w, None, [1], " + pads + ", [1], False, [0], 1")},
                                       "y"));
    std::map<std::string, int> kinds = node_kinds(lower(graph, library()));
    EXPECT_EQ(kinds["Convolution"], 0) << declaration;
    EXPECT_EQ(kinds["Gemm"], 1) << declaration;
    EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 6), library()), "") << declaration;
  }
}

TEST(LoweringLibraryConvolution, FullyConnectedLayersAreOneGemm) {
  // 1x1 kernel, no padding, one group, a 1x1 output: one GEMM [N, C] @ [C, O] reading the input
  // in place, whatever its layout where it has one; in f32 and f64, 2-d and 1-d.
  struct Case {
    std::string input, weight, bias, stride;
    bool gemm;
  };
  const Case cases[] = {
      {"f32[3, 6, 1, 1]", "f32[5, 6, 1, 1]", "f32[5]", "[1, 1]", true},
      {"f32[1, 6, 1, 1]", "f32[5, 6, 1, 1]", "", "[1, 1]", true},
      {"f64[2, 6, 1, 1]", "f64[5, 6, 1, 1]", "f64[5]", "[1, 1]", true},
      {"f32[2, 4, 1]", "f32[3, 4, 1]", "f32[3]", "[1]", true},
      {"f32[2, 4, 1]", "f32[3, 4, 1]", "f32[3]", "[2]", true},
      // Stride 3 over 3x3: the output is 1x1 but an NCHW image's channels are 9 apart, which no
      // BLAS matrix reads: a library convolution as before.
      {"f32[2, 4, 3, 3]", "f32[5, 4, 1, 1]", "", "[3, 3]", false},
  };
  for (const Case& c : cases) {
    std::vector<std::string> inputs = {"x: " + c.input, "w: " + c.weight};
    if (!c.bias.empty()) inputs.push_back("b: " + c.bias);
    std::string args = "%x, %w, " + std::string(c.bias.empty() ? "None" : "%b") + ", " + c.stride + ", [0], [1], False, [0], 1";
    ir::Graph graph = parse(graph_text(inputs, {op_line("y", "convolution", args)}, "y"));
    EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 7), library()), "") << c.input << " " << args;
    EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 7), LoweringOptions{}), "") << c.input << " " << args;
    std::map<std::string, int> kinds = node_kinds(lower(graph, library()));
    EXPECT_EQ(kinds["Gemm"], c.gemm ? 1 : 0) << c.input << " " << args;
    EXPECT_EQ(kinds["Convolution"], c.gemm ? 0 : 1) << c.input << " " << args;
  }
  // Two groups or padding: convolutions.
  for (const std::string& args : {std::string("%x, %w2, None, [1, 1], [0], [1], False, [0], 2"),
                                  std::string("%x, %w, None, [1, 1], [1, 1], [1], False, [0], 1")}) {
    ir::Graph graph = parse(graph_text({"x: f32[2, 6, 1, 1]", "w: f32[4, 6, 1, 1]", "w2: f32[4, 3, 1, 1]"},
                                       {op_line("y", "convolution", args)}, "y"));
    EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 8), library()), "") << args;
    EXPECT_EQ(node_kinds(lower(graph, library()))["Convolution"], 1) << args;
  }
}

TEST(LoweringLibraryConvolution, SqueezeAndExcitationReadsChannelsLastValuesInPlace) {
  // conv -> global average pool -> fc1 (a 1x1 convolution) -> silu -> fc2 -> sigmoid -> scale
  // the conv's output; and a 3x3 convolution of a 3x3 image (a 1x1 output, channels-last) into a
  // 1x1 one. The layers read the channels-last buffers of the pool and the convolution, no copy.
  ir::Graph graph = parse(graph_text(
      {"x: f32[2, 3, 5, 5]", "w: f32[8, 3, 3, 3]", "w1: f32[4, 8, 1, 1]", "b1: f32[4]", "w2: f32[8, 4, 1, 1]",
       "b2: f32[8]", "u: f32[2, 3, 3, 3]", "wu: f32[6, 3, 3, 3]", "wv: f32[5, 6, 1, 1]"},
      {op_line("c", "convolution", "%x, %w, None, [1, 1], [1, 1], [1, 1], False, [0], 1"),
       op_line("g", "adaptive_avg_pool", "%c, [1, 1]"),
       op_line("f1", "convolution", "%g, %w1, %b1, [1, 1], [0, 0], [1, 1], False, [0], 1"),
       op_line("s1", "silu", "%f1"),
       op_line("f2", "convolution", "%s1, %w2, %b2, [1, 1], [0, 0], [1, 1], False, [0], 1"),
       op_line("s2", "sigmoid", "%f2"), op_line("y", "mul", "%c, %s2"),
       op_line("cu", "convolution", "%u, %wu, None, [1, 1], [0, 0], [1, 1], False, [0], 1"),
       op_line("z", "convolution", "%cu, %wv, None, [1, 1], [0, 0], [1, 1], False, [0], 1")},
      "y, z"));
  EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 9), library()), "");
  LoopProgram program = lower(graph, library());
  std::map<std::string, int> kinds = node_kinds(program);
  EXPECT_EQ(kinds["Convolution"], 2);
  EXPECT_EQ(kinds["Gemm"], 3);
  EXPECT_EQ(transposing_copies(program), 2);  // x and u, into the two 3x3 convolutions
  for (const LoopNode& node : program.nodes) {
    if (node.kind == NodeKind::Extern && node.name == "z") {
      EXPECT_EQ(program.buffer(node.extern_call.inputs[0].buffer).name, "cu");
    }
  }
}

// A convolution of few output channels, each of few taps, is Kiln's own loop (the header of
// codegen/lowering_convolution.cpp): the input framed by a Pointwise copy, the output computed
// over padded rows, no library call and no GEMM; in f32 and f64, with and without the library.
TEST(LoweringDirectConvolution, GeometriesMatchTheInterpreter) {
  struct Case {
    std::string dtype, input, weight, bias, padding, dilation;
    int groups;
  };
  const Case cases[] = {
      {"f32", "[3, 1, 12, 12]", "[6, 1, 5, 5]", "[6]", "[2, 2]", "[1, 1]", 1},  // LeNet's first layer
      {"f32", "[2, 3, 10, 11]", "[8, 3, 3, 3]", "", "[1, 0]", "[1, 1]", 1},
      {"f32", "[2, 2, 13, 14]", "[4, 2, 3, 3]", "[4]", "[0, 2]", "[2, 1]", 1},
      {"f32", "[1, 4, 9, 12]", "[6, 2, 3, 3]", "[6]", "[1, 1]", "[1, 2]", 2},
      {"f32", "[2, 4, 9, 10]", "[4, 1, 3, 3]", "[4]", "[1, 1]", "[1, 1]", 4},  // depthwise
      {"f64", "[2, 1, 8, 9]", "[3, 1, 3, 3]", "[3]", "[1, 1]", "[1, 1]", 1},
  };
  for (const Case& c : cases) {
    std::vector<std::string> inputs = {"x: " + c.dtype + c.input, "w: " + c.dtype + c.weight};
    if (!c.bias.empty()) inputs.push_back("b: " + c.dtype + c.bias);
    std::string args = "%x, %w, " + std::string(c.bias.empty() ? "None" : "%b") + ", [1, 1], " + c.padding + ", " +
                       c.dilation + ", False, [0], " + std::to_string(c.groups);
    // The convolution alone (an output read through its padded rows), and under a relu and a
    // max pool (which read it in place).
    ir::Graph alone = parse(graph_text(inputs, {op_line("y", "convolution", args)}, "y"));
    ir::Graph pooled = parse(graph_text(
        inputs, {op_line("c", "convolution", args), op_line("r", "relu", "%c"), op_line("y", "max_pool", "%r, [2, 2], [2, 2]")},
        "y"));
    for (const ir::Graph* graph : {&alone, &pooled}) {
      for (const LoweringOptions& options : {LoweringOptions{}, library()}) {
        EXPECT_EQ(check_lowering(*graph, test_support::random_inputs(*graph, 7), options), "") << args;
        std::map<std::string, int> kinds = node_kinds(lower(*graph, options));
        EXPECT_EQ(kinds["Convolution"], 0) << args;
        EXPECT_EQ(kinds["Gemm"], 0) << args;
      }
    }
  }
}

// Past the bounds (more than 8 output channels, more than 32 taps, a stride, a row narrower than
// 8, a 1x1 kernel) the convolution stays the library's.
TEST(LoweringDirectConvolution, WiderOrStridedConvolutionsStayTheLibrarys) {
  const std::string cases[][3] = {
      {"[2, 1, 12, 12]", "[9, 1, 5, 5]", "[1, 1]"},  // 9 output channels
      {"[2, 4, 12, 12]", "[4, 4, 3, 3]", "[1, 1]"},  // 36 taps
      {"[2, 1, 12, 12]", "[6, 1, 3, 3]", "[2, 2]"},  // stride 2
      {"[2, 1, 12, 7]", "[6, 1, 3, 3]", "[1, 1]"},   // rows of 7
      {"[2, 8, 12, 12]", "[8, 8, 1, 1]", "[1, 1]"},  // a 1x1 kernel
  };
  for (const auto& [input, weight, stride] : cases) {
    ir::Graph graph = parse(graph_text(
        {"x: f32" + input, "w: f32" + weight},
        {op_line("y", "convolution", "%x, %w, None, " + stride + ", [1, 1], [1, 1], False, [0], 1")}, "y"));
    EXPECT_EQ(node_kinds(lower(graph, library()))["Convolution"], 1) << weight << " stride " << stride;
  }
}

TEST(LoweringTransposedConvolution, GeometriesMatchTheInterpreter) {
  struct Case {
    std::string input, weight, bias, stride, padding, dilation, output_padding;
    int groups;
  };
  const Case cases[] = {
      {"f32[1, 8, 5, 6]", "f32[8, 4, 4, 4]", "f32[4]", "[2, 2]", "[1, 1]", "[1, 1]", "[0, 0]", 1},  // a UNet's upsampling
      {"f32[2, 3, 4, 5]", "f32[3, 5, 3, 2]", "", "[1, 1]", "[0, 0]", "[1, 1]", "[0, 0]", 1},
      {"f32[2, 4, 5, 4]", "f32[4, 3, 3, 3]", "f32[6]", "[3, 2]", "[1, 2]", "[2, 1]", "[2, 1]", 2},
      {"f32[1, 6, 7]", "f32[6, 1, 5]", "f32[6]", "[2]", "[2]", "[1]", "[1]", 6},  // depthwise 1-d
      {"f64[1, 2, 3, 4, 3]", "f64[2, 3, 2, 3, 2]", "f64[3]", "[2, 1, 2]", "[0, 1, 1]", "[1, 2, 1]", "[1, 0, 0]", 1},
      {"f32[3, 5, 1, 1]", "f32[5, 7, 4, 4]", "", "[1, 1]", "[0, 0]", "[1, 1]", "[0, 0]", 1},  // a DCGAN's first layer
  };
  for (const Case& c : cases) {
    std::vector<std::string> inputs = {"x: " + c.input, "w: " + c.weight};
    if (!c.bias.empty()) inputs.push_back("b: " + c.bias);
    std::string args = "%x, %w, " + std::string(c.bias.empty() ? "None" : "%b") + ", " + c.stride + ", " + c.padding +
                       ", " + c.dilation + ", True, " + c.output_padding + ", " + std::to_string(c.groups);
    ir::Graph graph = parse(graph_text(inputs, {op_line("y", "convolution", args)}, "y"));
    for (const LoweringOptions& options : {LoweringOptions{}, library()}) {
      EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 7), options), "") << args;
      std::map<std::string, int> kinds = node_kinds(lower(graph, options));
      EXPECT_EQ(kinds["Gemm"], 1) << args;
      EXPECT_EQ(kinds["Fallback"], 0) << args;
    }
  }
}

TEST(LoweringTransposedConvolution, AChannelsLastInputIsReadInPlace) {
  // A library convolution's channels-last output is the GEMM's left operand as it is, and the
  // weight its right one, read in place: no copy between the two convolutions.
  ir::Graph graph = parse(graph_text(
      {"x: f32[2, 3, 8, 8]", "w1: f32[16, 3, 3, 3]", "w2: f32[16, 6, 2, 2]", "b2: f32[6]"},
      {op_line("c", "convolution", "%x, %w1, None, [1, 1], [1, 1], [1, 1], False, [0], 1"), op_line("r", "relu", "%c"),
       op_line("y", "convolution", "%r, %w2, %b2, [2, 2], [0, 0], [1, 1], True, [0, 0], 1")},
      "y"));
  EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 8), library()), "");
  LoopProgram program = lower(graph, library());
  EXPECT_EQ(transposing_copies(program), 1);  // the graph input's, into the first convolution
  for (const LoopNode& node : program.nodes) {
    if (node.kind == NodeKind::Extern && node.extern_call.kind == ExternKind::Gemm) {
      EXPECT_EQ(program.buffer(node.extern_call.inputs[0].buffer).name, "r");
      EXPECT_EQ(program.buffer(node.extern_call.inputs[1].buffer).name, "w2");
    }
  }
}

TEST(LoweringTransposedConvolution, LargeKernelsAndHalfPrecisionGoToTheFallback) {
  for (const std::string& declaration :
       {std::string("x: f32[1, 2, 9]|w: f32[2, 3, 65]"),
        std::string("x: f16[1, 2, 9]|w: f16[2, 3, 3]")}) {
    size_t bar = declaration.find('|');
    ir::Graph graph = parse(graph_text({declaration.substr(0, bar), declaration.substr(bar + 1)},
                                       {op_line("y", "convolution", "%x, %w, None, [2], [1], [1], True, [0], 1")}, "y"));
    std::map<std::string, int> kinds = node_kinds(lower(graph, library()));
    EXPECT_EQ(kinds["Fallback"], 1) << declaration;
    EXPECT_EQ(kinds["Gemm"], 0) << declaration;
    EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 9), library()), "") << declaration;
  }
}

}  // namespace
}  // namespace kiln::codegen::testing
