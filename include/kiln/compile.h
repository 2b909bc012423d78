// kiln::compile(fn): TorchDynamo's half of Kiln. Wraps a C++ function of kiln::Vars (or a
// module) into a callable over kiln::Tensors that traces and compiles on first use, and again
// when its inputs stop matching what it was compiled for:
//
//   kiln::CompiledFunction f = kiln::compile([](const std::vector<kiln::Var>& in) {
//     return std::vector<kiln::Var>{(in[0] * 2).relu().sum({1})};
//   });
//   std::vector<kiln::Tensor> out = f(x);           // traces, compiles (compile cache included), runs
//   out = f(other_x_of_the_same_type);              // checks the guards, runs: no trace, no compile
//
// Each compiled variant is its guards (compiler/function/guards.h: dtype, device, rank, each
// static size or the range and relations of symbolic sizes, scalar values, the module's
// training mode) and a compiled model; a call runs the first variant whose guards pass. When
// none does, the function is traced again and the new variant is kept (a recompile), up to
// options.recompile_limit; past it, calls no variant accepts run in the interpreter (or throw,
// with RecompileFallback::error), with one warning naming the guard that kept failing.
//
// Dynamic shapes, like Dynamo's automatic_dynamic_shapes: the first compile is static; a dim
// whose size differs from the first call's becomes a symbol in the recompile, so every later
// size shares that variant. Sizes 0 and 1 are never made symbolic (a call with such a size gets
// a static variant of its own). Dynamic dims of equal size share a symbol (duck sizing), which
// is guarded as an equality. options.dynamic: automatic (the above), always (every dim of size
// >= 2 is symbolic from the first call), never (every variant is static). mark_dynamic makes a
// dim symbolic from the first call, within a range.
//
// Graph breaks: code that needs a traced value (Var::item(), a Var used as a bool) ends the graph
// there: the graph so far is compiled, run, and its value handed to fn, which goes on tracing.
// Such a function is traced on every call (its C++ control flow runs natively, so another
// outcome takes another path) and each graph it records is compiled once per structure, up to
// recompile_limit graphs before a break and as many after; past that they run in the
// interpreter (one warning). The graph after a break starts from the values that live Vars
// hold (they are the graph before it's outputs too), not from fn's inputs: nothing is computed
// twice, except while a view or an in-place result is live across the break (a copy would not
// alias its base), when the graph after it computes everything again.
// options.fullgraph makes a break an error naming its line; kiln::cond (kiln/var.h) keeps both
// branches of a data-dependent choice in one graph.
//
// What C++ cannot see: a lambda's captured values (and any other state fn reads) are frozen
// into the graph when it is traced; nothing guards them. Pass a number that may change as a
// scalar argument instead (the ScalarFunction form): scalars are guarded by value, so a new
// value recompiles, as Dynamo does for Python numbers. KILN_LOG=recompiles,guards,dynamic,cache
// says what happened (runtime/log.h).
//
// Thread safety: one CompiledFunction may be called from several threads; a recompile waits for
// the calls running, and calls wait for a recompile.
#pragma once

#include <concepts>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/compile_options.h"
#include "kiln/tensor.h"
#include "kiln/var.h"

namespace kiln {

namespace nn {
class Module;
}

// Dim `dim` of input `input` is symbolic from the first compile on, for sizes in [min, max].
struct DynamicDim {
  size_t input = 0;
  int64_t dim = 0;
  int64_t min = 2;
  int64_t max = std::numeric_limits<int64_t>::max();
};
enum class RecompileFallback { interpreter, error };

struct FunctionCompileOptions {
  std::string name = "function";  // in messages and logs
  std::string target = "cpu";     // a row of the target registry (compiler/target_registry.h)
  bool use_cache = true;
  std::optional<std::filesystem::path> cache_dir{};  // default: the compile cache's
  int recompile_limit = 8;                         // variants at most, the first included
  DynamicShapes dynamic = DynamicShapes::automatic;
  RecompileFallback fallback = RecompileFallback::interpreter;
  std::vector<DynamicDim> dynamic_dims{};  // as mark_dynamic, up front
  // A graph break (Var::item(), a Var used as a bool) is an error naming its line.
  bool fullgraph = false;
  std::vector<std::string> input_names{};  // default "x" for one input, else "x0", "x1", ...
};

// A function of Vars that also takes scalar arguments; each call's scalars are guarded by value.
using ScalarFunction = std::function<std::vector<Var>(const std::vector<Var>& inputs, const std::vector<double>& scalars)>;
using TensorFunction = std::function<std::vector<Var>(const std::vector<Var>& inputs)>;

// What kiln::compile would make of fn on these inputs, without compiling: each graph (its op
// count, what ended it: a graph break with its line, or fn's return), the guards of a variant,
// every specialization (a dim kept static, with the line that needed its size; a size 0 or 1;
// a scalar guarded by value), and for each declared dynamic dim how many variants its range
// needs. fn runs once, natively; the graphs before each break run in the interpreter to give fn
// the values it asks for.
struct Explanation {
  struct Graph {
    size_t op_count = 0;
    std::string ended_by;  // "graph break at model.cpp:12", or "the function's return"
    std::string text;      // the graph, as ir::print_graph prints it
  };
  std::vector<Graph> graphs;
  std::vector<std::string> breaks;           // "model.cpp:12", in order
  std::vector<std::string> guards;           // of the final graph's variant (none with breaks)
  std::vector<std::string> specializations;  // one line each, with its reason
  std::vector<std::string> range_variants;   // per declared dynamic dim: the variants its range needs
  // The report for people: graphs (without their text), breaks, guards, specializations.
  std::string to_string() const;
};

Explanation explain(ScalarFunction fn, const std::vector<Tensor>& inputs, const std::vector<double>& scalars,
                    FunctionCompileOptions options = {});
Explanation explain(TensorFunction fn, const std::vector<Tensor>& inputs, FunctionCompileOptions options = {});

struct CompiledFunctionStats {
  size_t calls = 0;
  size_t traces = 0;          // traces of fn (variants; with graph breaks, every call)
  size_t variants = 0;
  size_t fallback_calls = 0;  // calls run by the fallback past the recompile limit
  size_t graph_breaks = 0;    // in the latest trace of a function with graph breaks
  size_t break_graphs = 0;    // graphs compiled for a function with graph breaks (segments and finals)
};

class CompiledFunction {
 public:
  // Runs on `inputs` (and the scalar arguments of a ScalarFunction; none otherwise): the first
  // variant whose guards pass, else a recompile, else the fallback. Outputs in fn's order.
  // Throws kiln::Error for a wrong number of inputs or scalars, and for whatever tracing or
  // compiling fn throws.
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs, const std::vector<double>& scalars = {}) const;
  template <typename... Tensors>
    requires(sizeof...(Tensors) > 0 && (std::same_as<Tensors, Tensor> && ...))
  std::vector<Tensor> operator()(const Tensors&... inputs) const {
    return (*this)(std::vector<Tensor>{inputs...});
  }

  // Makes dim `dim` of input `input` symbolic from the next compile on, for sizes in [min, max]
  // (a size outside the range gets a static variant). Like torch._dynamo.mark_dynamic, but on
  // the compiled function, since a kiln::Tensor carries no such marks.
  void mark_dynamic(size_t input, int64_t dim, int64_t min = 2, int64_t max = std::numeric_limits<int64_t>::max());

  CompiledFunctionStats stats() const;
  // Every variant: its graph's op count and its guards, one per line.
  std::string guards_report() const;

  struct State;  // compiler/function/compiled_function.cpp

 private:
  friend CompiledFunction compile(ScalarFunction, FunctionCompileOptions);
  friend CompiledFunction compile(nn::Module&, FunctionCompileOptions);
  friend Explanation explain(ScalarFunction, const std::vector<Tensor>&, const std::vector<double>&,
                             FunctionCompileOptions);
  std::shared_ptr<State> state_;
};


CompiledFunction compile(ScalarFunction fn, FunctionCompileOptions options = {});
CompiledFunction compile(TensorFunction fn, FunctionCompileOptions options = {});
// A module: its forward over the inputs; its training mode is guarded, its parameters and
// buffers are read in place (an optimizer's updates are seen without recompiling). The module
// must outlive the compiled function.
CompiledFunction compile(nn::Module& module, FunctionCompileOptions options = {});

}  // namespace kiln
