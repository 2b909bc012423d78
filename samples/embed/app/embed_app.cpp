// samples/embed/app: a C++ app that loads a model file, compiles it at run time with Kiln
// (through Kiln's compile cache: the second run loads what the first built), runs it on an
// input read from a .npy file and writes each output as a .npy file, printing what it did.
//
//   embed_app [MODEL INPUT.npy [OUT_DIR]] [--target cpu|cuda|interp|eager]
//
// MODEL is any file Kiln reads (.kiln/.json with its .safetensors, .onnx, .pt2); its first
// input gets INPUT.npy. Without arguments it runs the MLP of samples/models. Errors (a missing
// file, a wrong input) are kiln::Errors: printed on one line, exit status 1.
#include <kiln/kiln.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

namespace {

#ifndef EMBED_DEFAULT_MODEL
#define EMBED_DEFAULT_MODEL "mlp.kiln"
#define EMBED_DEFAULT_INPUT "x.npy"
#endif

int run(const std::vector<std::string>& args) {
  std::vector<std::string> positional;
  kiln::CompileOptions options;  // target cpu, Kiln's compile cache (KILN_CACHE_DIR to move it)
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--target" && i + 1 < args.size()) {
      options.target = args[++i];
    } else {
      positional.push_back(args[i]);
    }
  }
  const std::string model_path = positional.size() > 0 ? positional[0] : EMBED_DEFAULT_MODEL;
  const std::string input_path = positional.size() > 1 ? positional[1] : EMBED_DEFAULT_INPUT;
  const std::filesystem::path out_dir = positional.size() > 2 ? positional[2] : ".";

  kiln::Graph graph = kiln::Graph::load(model_path);
  std::vector<std::string> inputs = graph.input_names();
  if (inputs.empty()) throw kiln::Error("the model " + model_path + " takes no input");
  std::printf("model %s: %zu nodes, input %s %s\n", model_path.c_str(), graph.node_count(), inputs[0].c_str(),
              graph.input_types()[0].to_string().c_str());

  kiln::Model model = kiln::compile(graph, options);
  if (const kiln::CompileResult* result = model.compile_result())
    std::printf("compiled for %s: %zu kernels (%s)\n", model.target().c_str(), result->kernel_count,
                result->cache_hit ? "from the compile cache" : "built");

  kiln::Tensor input = kiln::read_npy(input_path);
  std::vector<kiln::Tensor> outputs = model.run({{inputs[0], input}});
  std::vector<std::string> names = model.output_names();
  std::filesystem::create_directories(out_dir);
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::filesystem::path file = out_dir / (names[i] + ".npy");
    kiln::write_npy(file.string(), outputs[i]);
    std::printf("output %s %s -> %s: %s\n", names[i].c_str(), kiln::sizes_to_string(outputs[i].sizes()).c_str(),
                file.string().c_str(), outputs[i].to_string(4).c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "embed_app: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "embed_app: internal error: %s\n", e.what());
    return 2;
  }
}
