// `kiln kernel` (compiler/standalone_kernel.h): each header is compiled standalone with g++ in a
// small generated driver (scalar without OpenMP, AVX2 with OpenMP, AVX-512 where the CPU has it),
// run on random inputs and compared with the reference interpreter on the same graph (the
// expression's, or the model's cut at the kernel's node); two headers link into one program from
// two translation units; and every bad input is one error line with exit status 1.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "sample_models.h"
#include "compiler/model_files.h"
#include "compiler/standalone_kernel.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "kiln/tensor.h"
#include "tests/support/test_paths.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using cli_test::CliResult;
using cli_test::expect_user_error;
using cli_test::read_file;
using ::testing::HasSubstr;

// One parameter of a header's entry function, as its signature spells it.
struct EntryParameter {
  std::string type;  // "const float*", "float*", "int64_t", "void*"
  std::string name;
};

std::vector<EntryParameter> entry_parameters(const std::string& header, const std::string& name) {
  const std::string start = "static inline int32_t " + name + "(";
  size_t at = header.find(start);
  EXPECT_NE(at, std::string::npos) << "no entry function " << name;
  if (at == std::string::npos) return {};
  size_t end = header.find(')', at);
  std::string list = header.substr(at + start.size(), end - at - start.size());
  std::vector<EntryParameter> parameters;
  std::stringstream items(list);
  for (std::string item; std::getline(items, item, ',');) {
    item = std::regex_replace(item, std::regex("^\\s+|\\s+$"), "");
    size_t space = item.rfind(' ');
    parameters.push_back({item.substr(0, space), item.substr(space + 1)});
  }
  return parameters;
}

Tensor random_f32(const Sizes& sizes, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  int64_t n = 1;
  for (int64_t d : sizes) n *= d;
  std::vector<float> values(static_cast<size_t>(n));
  for (float& v : values) v = uniform(generator);
  return Tensor::from_vector(sizes, values, DType::f32);
}

void write_bytes(const fs::path& path, const Tensor& tensor) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(tensor.data_ptr()), std::streamsize(tensor.nbytes()));
}

// Every element of `got` (raw f32 bytes) against `expected` within 1e-5 + 1e-5 |expected|.
void expect_close(const std::string& got_bytes, const Tensor& expected, const std::string& what) {
  ASSERT_EQ(got_bytes.size(), expected.nbytes()) << what;
  std::vector<float> got(expected.nbytes() / sizeof(float));
  std::memcpy(got.data(), got_bytes.data(), got_bytes.size());
  const float* want = expected.data<float>();
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double tolerance = 1e-5 + 1e-5 * std::fabs(double(want[i]));
    if (!(std::fabs(double(got[i]) - double(want[i])) <= tolerance) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", the interpreter says " << want[i];
  }
  EXPECT_EQ(bad, 0) << what;
}

// The flag sets each header is compiled with: scalar without OpenMP, then AVX2 and AVX-512 with
// OpenMP where this CPU runs them.
std::vector<std::string> isa_flag_sets() {
  std::vector<std::string> sets = {"-Wno-unknown-pragmas"};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) sets.push_back("-fopenmp -mavx2 -mfma");
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    sets.push_back("-fopenmp -mavx512f -mavx512dq -mavx512bw -mavx512vl -mavx2 -mfma");
  return sets;
}

class KernelCli : public cli_test::KilnCliTest {
 protected:
  // `kiln kernel ARGUMENTS --name NAME -o DIR/NAME.h`, which must succeed; returns the file.
  fs::path emit(const std::string& arguments, const std::string& name) {
    fs::path header = dir_ / (name + ".h");
    CliResult result = kiln("kernel " + arguments + " --name " + name + " -o " + header.string());
    EXPECT_EQ(result.status, 0) << result.err;
    return header;
  }

  // Compiles a driver of `header`'s entry function `name` with g++ -O2 `flags` -Wall -Wextra
  // -Werror, runs it on `inputs` (by parameter name) with `symbols`, and returns each output
  // parameter's bytes. `output_bytes` gives each output's size.
  std::map<std::string, std::string> run_header(const fs::path& header, const std::string& name,
                                                const std::map<std::string, Tensor>& inputs,
                                                const std::map<std::string, int64_t>& symbols,
                                                const std::map<std::string, size_t>& output_bytes,
                                                const std::string& flags, const std::string& libraries = "") {
    std::string text = read_file(header);
    std::vector<EntryParameter> parameters = entry_parameters(text, name);
    std::ostringstream driver;
    driver << "#include \"" << header.string() << "\"\n#include <cstdio>\n#include <cstdlib>\n#include <vector>\n"
           << "int main() {\n";
    std::string call, workspace_symbols;
    for (const EntryParameter& p : parameters) {
      if (p.type == "int64_t") workspace_symbols += (workspace_symbols.empty() ? "" : ", ") + std::to_string(symbols.at(p.name));
    }
    for (const EntryParameter& p : parameters) {
      std::string argument;
      if (p.type == "int64_t") {
        argument = std::to_string(symbols.at(p.name)) + "LL";
      } else if (p.type == "void*") {
        driver << "  void* workspace = std::aligned_alloc(64, size_t(" << name << "_workspace_bytes(" << workspace_symbols
               << ") + 64) / 64 * 64);\n";
        argument = "workspace";
      } else {
        bool input = p.type.rfind("const ", 0) == 0;
        size_t bytes = input ? inputs.at(p.name).nbytes() : output_bytes.at(p.name);
        fs::path file = dir_ / (p.name + (input ? ".in" : ".out"));
        if (input) write_bytes(file, inputs.at(p.name));
        driver << "  std::vector<char> " << p.name << "_bytes(" << bytes << " + 1);\n";
        if (input) {
          driver << "  { FILE* f = std::fopen(\"" << file.string() << "\", \"rb\"); if (!f || std::fread(" << p.name
                 << "_bytes.data(), 1, " << bytes << ", f) != " << bytes << ") return 90; std::fclose(f); }\n";
        }
        std::string type = p.type;
        argument = "(" + type + ")" + p.name + "_bytes.data()";
      }
      call += (call.empty() ? "" : ", ") + argument;
    }
    driver << "  int rc = " << name << "(" << call << ");\n  if (rc != 0) return 100 + rc;\n";
    for (const EntryParameter& p : parameters) {
      if (p.type == "int64_t" || p.type == "void*" || p.type.rfind("const ", 0) == 0) continue;
      fs::path file = dir_ / (p.name + ".out");
      driver << "  { FILE* f = std::fopen(\"" << file.string() << "\", \"wb\"); std::fwrite(" << p.name << "_bytes.data(), 1, "
             << output_bytes.at(p.name) << ", f); std::fclose(f); }\n";
    }
    driver << "  std::printf(\"isa %s\\n\", " << name << "_isa);\n  return 0;\n}\n";
    fs::path source = dir_ / (name + "_driver.cpp"), program = dir_ / (name + "_driver");
    std::ofstream(source) << driver.str();
    std::string compile = "g++ -std=c++17 -O2 -Wall -Wextra -Werror " + flags + " " + source.string() + " -o " +
                          program.string() + " " + libraries + " 2>" + (dir_ / "compile.log").string();
    std::map<std::string, std::string> outputs;
    if (std::system(compile.c_str()) != 0) {
      ADD_FAILURE() << "g++ " << flags << " failed on the driver of " << header << ":\n" << read_file(dir_ / "compile.log");
      return outputs;
    }
    int status = std::system((program.string() + " > " + (dir_ / "run.log").string()).c_str());
    EXPECT_EQ(status, 0) << flags << ": the driver failed: " << read_file(dir_ / "run.log");
    for (const auto& [output, bytes] : output_bytes) outputs[output] = read_file(dir_ / (output + ".out"));
    return outputs;
  }

  // An expression's header, run with every ISA flag set, against the interpreter.
  void check_expression(const std::string& expression, const std::vector<std::string>& specs,
                        const std::map<std::string, int64_t>& symbols, const std::string& name) {
    std::string arguments = "--expr '" + expression + "'";
    for (const std::string& spec : specs) arguments += " --input '" + spec + "'";
    fs::path header = emit(arguments, name);
    ir::Graph graph = compiler::expression_graph(expression, specs);
    std::map<std::string, Tensor> inputs;
    uint32_t seed = 1;
    for (ir::Node* placeholder : graph.placeholders()) {
      Sizes sizes = placeholder->meta.values.at(0).evaluate_shape(symbols);
      inputs[placeholder->target()] = random_f32(sizes, seed++);
    }
    Tensor expected = ir::interpret(graph, inputs).at(0);
    for (const std::string& flags : isa_flag_sets()) {
      std::map<std::string, std::string> got = run_header(header, name, inputs, symbols, {{"out", expected.nbytes()}}, flags);
      if (!got.count("out")) continue;
      if (expected.dtype() == DType::f32) {
        expect_close(got["out"], expected, expression + " with " + flags);
      } else {  // integers and bools: exactly the interpreter's bytes
        EXPECT_EQ(got["out"], std::string(static_cast<const char*>(expected.data_ptr()), expected.nbytes()))
            << expression << " with " << flags;
      }
    }
  }
};

TEST_F(KernelCli, PointwiseChainWithASymbolicDimIsOneKernel) {
  check_expression("gelu(x * w + b) * sigmoid(x)", {"x=f32[s0,96]", "w=f32[96]", "b=f32[96]"}, {{"s0", 5}}, "fused_gelu");
  std::string header = read_file(dir_ / "fused_gelu.h");
  EXPECT_THAT(header, HasSubstr("// Kernels: kernel0_out.\n"));
  EXPECT_THAT(header, HasSubstr("//   x: input, f32[s0, 96]\n"));
  EXPECT_THAT(header, HasSubstr("//   s0: the size of the symbolic dim s0"));
  EXPECT_THAT(header, HasSubstr("static inline int32_t fused_gelu(const float* x, const float* w, const float* b, float* out, int64_t s0)"));
  EXPECT_THAT(header, ::testing::Not(HasSubstr("#include \"")));
}

TEST_F(KernelCli, BroadcastWithScalarArithmetic) {
  check_expression("-x - y / (z + 2) * 0.5", {"x=f32[4,1,6]", "y=f32[5,1]", "z=f32[6]"}, {}, "broadcast");
}

TEST_F(KernelCli, ReductionOverASymbolicDim) {
  check_expression("sum(x * x, 1)", {"x=f32[7,s1]"}, {{"s1", 33}}, "sum_of_squares");
  check_expression("mean(x, [0, 1], keepdim=True) - x", {"x=f32[3,s1]"}, {{"s1", 9}}, "centered");
}

TEST_F(KernelCli, SoftmaxIsOneKernel) {
  check_expression("softmax(x, -1)", {"x=f32[s0,50]"}, {{"s0", 6}}, "row_softmax");
  EXPECT_THAT(read_file(dir_ / "row_softmax.h"), HasSubstr("// Kernels: kernel0_out_max.\n"));
  // Over a symbolic row too (which may be empty: the max starts from -inf rather than reading a
  // row padded with it, which took three kernels).
  check_expression("softmax(x, -1)", {"x=f32[4,s1]"}, {{"s1", 37}}, "symbolic_row_softmax");
  EXPECT_THAT(read_file(dir_ / "symbolic_row_softmax.h"), HasSubstr("// Kernels: kernel0_out_max.\n"));
}

TEST_F(KernelCli, SeveralKernelsShareAWorkspace) {
  check_expression("softmax(x, 0) * sum(x, 1, keepdim=True)", {"x=f32[s0,40]"}, {{"s0", 11}}, "two_kernels");
  std::string header = read_file(dir_ / "two_kernels.h");
  EXPECT_THAT(header, HasSubstr("The computation needs 2 kernels"));
  EXPECT_THAT(header, HasSubstr("static inline int64_t two_kernels_workspace_bytes(int64_t s0)"));
}

TEST_F(KernelCli, IntegerAndBoolResults) {
  check_expression("argmax(x, 1)", {"x=f32[s0,7]"}, {{"s0", 9}}, "row_argmax");
  check_expression("gt(x, 0.5)", {"x=f32[3,s1]"}, {{"s1", 21}}, "above_half");
  check_expression("cast(x * 3, i32)", {"x=f32[40]"}, {}, "truncated");
}

// An integer division by zero is result 1 (the interpreter raises ZeroDivisionError there).
TEST_F(KernelCli, IntegerDivisionByZeroIsResultOne) {
  fs::path header = emit("--expr \"div(cast(x, i64), cast(y, i64), rounding_mode='trunc')\" --input x=f32[3] --input y=f32[3]",
                         "int_div");
  std::ofstream(dir_ / "int_div.cpp") << "#include \"" << header.string() << "\"\n"
                                      << "int main() {\n"
                                         "  const float x[3] = {7, -7, 9}, ok[3] = {2, 2, -4}, zero[3] = {2, 0, 1};\n"
                                         "  int64_t q[3];\n"
                                         "  if (int_div(x, ok, q) != 0 || q[0] != 3 || q[1] != -3 || q[2] != -2) return 1;\n"
                                         "  return int_div(x, zero, q) == 1 ? 0 : 2;\n}\n";
  std::string command = "g++ -std=c++17 -O2 -Wall -Wextra -Werror -fopenmp " + (dir_ / "int_div.cpp").string() + " -o " +
                        (dir_ / "int_div").string() + " 2>" + (dir_ / "compile.log").string();
  ASSERT_EQ(std::system(command.c_str()), 0) << read_file(dir_ / "compile.log");
  EXPECT_EQ(std::system((dir_ / "int_div").c_str()), 0);
}

// attention.kiln's first kernel (layer_norm over x with the ln1 parameters) against the
// interpreter on the model cut at layer_norm.
TEST_F(KernelCli, KernelOfAModel) {
  const std::string model = std::string(KILN_SOURCE_DIR) + "/samples/models/attention.kiln";
  fs::path header = emit(model + " --kernel kernel0_layer_norm_var_mean", "model_layer_norm");
  ir::Graph full = compiler::load_model(model);
  std::string text = std::regex_replace(read_file(model), std::regex(" \\[num_users=\\d+\\]"), "");
  text = std::regex_replace(text, std::regex("return \\(out,\\)"), "return (layer_norm,)");
  ir::Graph cut = ir::parse_graph(text, "attention_cut.kiln", full.parameters());
  std::map<std::string, Tensor> inputs = {{"x", random_f32({2, 8, 32}, 7)}};
  Tensor expected = ir::interpret(cut, inputs).at(0);
  std::map<std::string, Tensor> pointers = {{"x", inputs["x"]},
                                            {"ln1_weight", *full.parameter("ln1.weight")},
                                            {"ln1_bias", *full.parameter("ln1.bias")}};
  for (const std::string& flags : isa_flag_sets()) {
    std::map<std::string, std::string> got =
        run_header(header, "model_layer_norm", pointers, {}, {{"layer_norm", expected.nbytes()}}, flags);
    if (got.count("layer_norm")) expect_close(got["layer_norm"], expected, "layer_norm with " + flags);
  }
  // --node picks the same kernel.
  CliResult by_node = kiln("kernel " + model + " --node layer_norm --name by_node");
  ASSERT_EQ(by_node.status, 0) << by_node.err;
  EXPECT_THAT(by_node.out, HasSubstr("// Kernels: kernel0_layer_norm_var_mean.\n"));
}

// A GEMM kernel with its fused epilogue (attention.kiln's first feed-forward layer: linear then
// GELU) calls CBLAS: linked with OpenBLAS, against the interpreter on the same computation
// written as an expression over the kernel's inputs.
TEST_F(KernelCli, GemmKernelOfAModelCallsCblas) {
  if (!fs::exists("/usr/lib/x86_64-linux-gnu/libopenblas.so")) GTEST_SKIP() << "no OpenBLAS to link";
  const std::string model = std::string(KILN_SOURCE_DIR) + "/samples/models/attention.kiln";
  fs::path header = emit(model + " --kernel kernel8_linear_2_matmul", "feed_forward");
  EXPECT_THAT(read_file(header), HasSubstr("link a CBLAS library (-lopenblas)"));
  ir::Graph graph = compiler::expression_graph("gelu(linear(h, w, b))", {"h=f32[2,8,32]", "w=f32[64,32]", "b=f32[64]"});
  std::map<std::string, Tensor> inputs = {
      {"h", random_f32({2, 8, 32}, 11)}, {"w", random_f32({64, 32}, 12)}, {"b", random_f32({64}, 13)}};
  Tensor expected = ir::interpret(graph, inputs).at(0);
  std::map<std::string, Tensor> pointers = {{"layer_norm_1", inputs["h"]}, {"fc1_weight", inputs["w"]}, {"fc1_bias", inputs["b"]}};
  std::map<std::string, std::string> got =
      run_header(header, "feed_forward", pointers, {}, {{"gelu", expected.nbytes()}}, "-fopenmp", "-lopenblas");
  if (got.count("gelu")) expect_close(got["gelu"], expected, "the feed-forward GEMM with its GELU epilogue");
}

// Two different headers, each included in two translation units, link into one program.
TEST_F(KernelCli, TwoKernelsLinkIntoOneProgram) {
  fs::path gelu = emit("--expr 'gelu(x) * 2' --input 'x=f32[s0]'", "twice_gelu");
  fs::path softmax = emit("--expr 'softmax(x, -1)' --input 'x=f32[s0,4]'", "row_softmax");
  const std::string includes = "#include \"" + gelu.string() + "\"\n#include \"" + softmax.string() + "\"\n";
  std::ofstream(dir_ / "other.cpp") << includes
                                    << "int other(const float* x, float* a, float* b) {\n"
                                       "  return twice_gelu(x, a, 8) + row_softmax(x, b, 2);\n}\n";
  std::ofstream(dir_ / "main.cpp") << includes
                                   << "#include <cstring>\n"
                                      "int other(const float* x, float* a, float* b);\n"
                                      "int main() {\n"
                                      "  float x[8] = {-2, -1, -0.5f, 0, 0.25f, 1, 2, 3}, a[8], b[8], c[8], d[8];\n"
                                      "  if (other(x, a, b) != 0 || twice_gelu(x, c, 8) != 0 || row_softmax(x, d, 2) != 0) return 1;\n"
                                      "  if (std::memcmp(a, c, sizeof a) != 0 || std::memcmp(b, d, sizeof b) != 0) return 2;\n"
                                      "  const float row = d[0] + d[1] + d[2] + d[3];\n"
                                      "  return row > 0.99f && row < 1.01f ? 0 : 3;\n}\n";
  std::string command = "g++ -std=c++17 -O2 -Wall -Wextra -Werror -fopenmp " + (dir_ / "main.cpp").string() + " " +
                        (dir_ / "other.cpp").string() + " -o " + (dir_ / "linked").string() + " 2>" +
                        (dir_ / "link.log").string();
  ASSERT_EQ(std::system(command.c_str()), 0) << read_file(dir_ / "link.log");
  EXPECT_EQ(std::system((dir_ / "linked").c_str()), 0);
}

// ---------------------------------------------------------------- bad input

TEST_F(KernelCli, ParseErrorNamesTheColumnAndTheExpectedToken) {
  expect_user_error(kiln("kernel --expr 'gelu(x * w' --input x=f32[4] --input w=f32[4]"),
                    "expression:1:11: expected ')' after the arguments of 'gelu', found end of expression");
  expect_user_error(kiln("kernel --expr 'x + * w' --input x=f32[4] --input w=f32[4]"),
                    "expression:1:5: expected a number, an input, an op call or '(', found '*'");
}

TEST_F(KernelCli, UnknownOpIsAnErrorAtItsColumn) {
  expect_user_error(kiln("kernel --expr 'x + gelo(x)' --input x=f32[4]"), "expression:1:5: unknown op 'gelo'");
}

TEST_F(KernelCli, UnknownInputIsAnErrorAtItsColumn) {
  expect_user_error(kiln("kernel --expr 'x * y' --input x=f32[4]"),
                    "expression:1:5: unknown input 'y' (the inputs are x; give each with --input NAME=DTYPE[DIMS])");
}

TEST_F(KernelCli, ShapeMismatchIsAnErrorAtTheOperator) {
  expect_user_error(kiln("kernel --expr 'x + y' --input x=f32[4] --input y=f32[5]"),
                    "expression:1:3: node %add (add): The size of tensor a (4) must match the size of tensor b (5)");
}

TEST_F(KernelCli, DtypeErrorIsAnErrorAtTheOp) {
  expect_user_error(kiln("kernel --expr 'x + softmax(i, -1)' --input x=f32[4] --input i=i64[4]"),
                    "expression:1:5: node %softmax (softmax): softmax expects a floating-point input");
}

TEST_F(KernelCli, BadInputSpec) {
  expect_user_error(kiln("kernel --expr 'x * 2' --input 'x=f32[4'"), "--input 'x=f32[4': the type 'f32[4' has no [DIMS]");
  expect_user_error(kiln("kernel --expr 'x * 2' --input 'x=f99[4]'"), "--input 'x=f99[4]': unknown dtype 'f99'");
  expect_user_error(kiln("kernel --expr 'x * 2' --input 'x'"), "--input 'x': no '='");
  expect_user_error(kiln("kernel --expr 'x * 2' --input 'x=f32[4, +]'"), "--input 'x=f32[4, +]': the dim '+' is not a size");
}

TEST_F(KernelCli, UnknownKernelNameListsTheKernels) {
  expect_user_error(kiln("kernel " + cli_test::sample_model("attention") + " --kernel kernel99"),
                    "unknown kernel 'kernel99' (the kernels: kernel0_layer_norm_var_mean, kernel1_linear_matmul,");
  expect_user_error(kiln("kernel " + cli_test::sample_model("attention") + " --node nowhere"),
                    "no kernel computes node 'nowhere'");
}

TEST_F(KernelCli, KernelAndExprTogetherIsAnError) {
  expect_user_error(kiln("kernel --expr 'x * 2' --input x=f32[4] --kernel kernel0_out"),
                    "--kernel and --expr cannot be used together");
  expect_user_error(kiln("kernel " + cli_test::sample_model("mlp")), "which kernel of");
  expect_user_error(kiln("kernel " + cli_test::sample_model("mlp") + " --kernel a --node b"),
                    "--kernel and --node cannot be used together");
  expect_user_error(kiln("kernel " + cli_test::sample_model("mlp") + " --expr 'x * 2'"),
                    "give either MODEL (with --kernel or --node) or --expr, not both");
  expect_user_error(kiln("kernel " + cli_test::sample_model("mlp") + " --node relu --input x=f32[4]"),
                    "--input applies only to --expr");
  expect_user_error(kiln("kernel"), "nothing to generate: give --expr EXPRESSION, or MODEL with --kernel NAME or --node NODE");
  expect_user_error(kiln("kernel --expr 'x * 2' --input x=f32[4] -o " + dir_.string()), "is a directory");
}

TEST_F(KernelCli, UnknownTargetAndLibraryCallsInCuda) {
  expect_user_error(kiln("kernel --expr 'x * 2' --input x=f32[4] --target tpu"),
                    "unknown target 'tpu' (known: cpu, cuda, interp, eager)");
  expect_user_error(kiln("kernel --expr 'x * 2' --input x=f32[4] --target interp"),
                    "--target interp has no standalone kernels (kiln kernel writes the code of cpu and cuda)");
  expect_user_error(kiln("kernel " + cli_test::sample_model("attention") + " --kernel kernel8_linear_2_matmul --target cuda"),
                    "kernel kernel8_linear_2_matmul is a library call on the host (cuBLAS or a reference kernel)");
}

TEST_F(KernelCli, BadNameAndExistingOutputFile) {
  expect_user_error(kiln("kernel --expr 'x * 2' --input x=f32[4] --name 2fast"), "--name '2fast' is not a C identifier");
  expect_user_error(kiln("kernel --expr 'x * 2' --input x=f32[4] --name int"), "--name 'int' is a word of C++");
  fs::path file = dir_ / "mine.h";
  std::ofstream(file) << "mine";
  expect_user_error(kiln("kernel --expr 'x * 2' --input x=f32[4] -o " + file.string()), "exists (pass --force to overwrite it)");
  EXPECT_EQ(read_file(file), "mine");
  EXPECT_EQ(kiln("kernel --expr 'x * 2' --input x=f32[4] --force -o " + file.string()).status, 0);
  EXPECT_THAT(read_file(file), HasSubstr("static inline int32_t kernel("));
}

}  // namespace
}  // namespace kiln
