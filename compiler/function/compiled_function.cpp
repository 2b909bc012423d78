// kiln::compile(fn) (include/kiln/compile.h): the variants of a compiled function, the trace of
// a new variant (automatic dynamic shapes, duck sizing, 0/1 specialization), recompiles and the
// fallback past the recompile limit, and what KILN_LOG says about them.
#include "kiln/compile.h"

#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <sstream>

#include "compiler/compile_driver.h"
#include "compiler/function/dynamic_dims.h"
#include "compiler/function/guards.h"
#include "compiler/function/segment_cache.h"
#include "frontends/module/trace_graph.h"
#include "frontends/module/tracer.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "kiln/nn/module.h"
#include "kiln/trace.h"
#include "kiln/error.h"
#include "runtime/log.h"
#include "runtime/strides.h"

namespace kiln {

// Named, not anonymous: CompiledFunction::State (external linkage) holds them, which GCC flags
// for internal-linkage types once the file is part of a unity batch (-Wsubobject-linkage).
namespace compiled_function_parts {

struct Variant {
  std::vector<compiler::Guard> guards;
  compiler::CompiledModel model;
  size_t op_count = 0;
};

}  // namespace compiled_function_parts

using compiled_function_parts::Variant;
using compiler::DimRange;

namespace {

using compiler::Guard;

std::vector<std::string> default_input_names(size_t count) {
  if (count == 1) return {"x"};
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) names.push_back("x" + std::to_string(i));
  return names;
}

size_t op_count(const ir::Graph& graph) {
  size_t count = 0;
  for (const ir::Node* node : graph.nodes())
    if (node->op() == ir::OpKind::call_function) ++count;
  return count;
}

}  // namespace

struct CompiledFunction::State {
  ScalarFunction fn;
  nn::Module* module = nullptr;
  FunctionCompileOptions options;
  // Set once, by the first call that gets past its checks (under `mutex`, before any trace can
  // set has_breaks): read without the lock by calls of a function with breaks.
  bool signature_known = false;
  size_t input_count = 0;
  size_t scalar_count = 0;
  std::vector<std::string> names;

  mutable std::shared_mutex mutex;              // variants and what recompiles read and write
  std::vector<std::unique_ptr<Variant>> variants;
  compiler::DynamicDims dynamic_dims;           // made or marked dynamic
  std::atomic<size_t> calls{0};
  size_t traces = 0;
  std::atomic<size_t> fallback_calls{0};
  bool warned_limit = false;
  std::atomic<bool> has_breaks{false};  // fn has graph breaks: traced on every call
  std::atomic<size_t> last_breaks{0};   // graph breaks in the latest trace
  // The graphs of a function with breaks: those ending at a break, and the final ones (one per
  // path and shape); each holds recompile_limit graphs, past which graphs run in the interpreter.
  std::unique_ptr<compiler::SegmentCache> break_segments, final_graphs;
  bool warned_graph_limit = false;
  std::mutex warning_mutex;
  // kiln::explain only: the specializations of a trace, and the graphs up to each break, which
  // run in the interpreter instead of being compiled.
  bool explaining = false;
  mutable std::vector<std::string> specializations;
  std::vector<Explanation::Graph> explained_graphs;
  bool symbolic_trace_failed = false;

  std::vector<Tensor> run(Variant& variant, const std::vector<Tensor>& inputs) const {
    return variant.model.run(named(inputs));
  }

  // The first variant whose guards pass, or nullptr; `failure` gets the last variant's failing
  // guard, described, when none passes.
  Variant* find_variant(const std::vector<Tensor>& inputs, const std::vector<double>& scalars,
                        std::string* failure) const {
    for (const auto& variant : variants)
      if (compiler::first_failing_guard(variant->guards, inputs, scalars) < 0) return variant.get();
    if (failure != nullptr && !variants.empty()) {
      const Variant& last = *variants.back();
      const Guard& guard = last.guards[size_t(compiler::first_failing_guard(last.guards, inputs, scalars))];
      *failure = compiler::describe_guard(guard, names) + " failed: " + compiler::describe_actual(guard, inputs, scalars);
    }
    return nullptr;
  }

  // Automatic dynamic: dims whose size differs from the first trace's become dynamic.
  void update_dynamic_dims(const std::vector<Tensor>& inputs) {
    if (options.dynamic != DynamicShapes::automatic) return;
    for (const std::string& note : dynamic_dims.note_sizes(inputs, names)) log("dynamic", options.name + ": " + note);
  }

  // The placeholder types of a trace for these inputs (compiler/function/dynamic_dims.h).
  std::vector<ir::TensorMeta> input_types(const std::vector<Tensor>& inputs, bool dynamic,
                                          compiler::SymbolRanges& ranges) const {
    dynamic_dims.check_marked(inputs, "kiln::compile: " + options.name);
    std::vector<std::string> notes;
    std::vector<ir::TensorMeta> types = dynamic_dims.input_types(inputs, names, options.dynamic, dynamic, ranges, notes);
    for (const std::string& note : notes) {
      log("dynamic", options.name + ": " + note);
      if (explaining) specializations.push_back(note);
    }
    return types;
  }

  CompileOptions compile_options() const {
    CompileOptions result;
    result.target = options.target;
    result.use_cache = options.use_cache;
    result.cache_dir = options.cache_dir;
    return result;
  }

  std::map<std::string, Tensor> named(const std::vector<Tensor>& inputs) const {
    std::map<std::string, Tensor> result;
    for (size_t i = 0; i < inputs.size(); ++i) result.emplace(names[i], inputs[i]);
    return result;
  }

  // What a graph of a trace on these inputs is fed: the inputs by name, then the values
  // carried across the breaks so far.
  std::map<std::string, Tensor> feeds(const std::vector<Tensor>& inputs, const frontends::BreakCarrier& carrier) const {
    std::map<std::string, Tensor> result = named(inputs);
    for (const auto& [name, value] : carrier.carried) result.emplace(name, value);
    return result;
  }

  // Sets `carrier` up for a trace on these inputs: each needed value ends a graph there (a graph
  // break), which is compiled (once per structure) and run; its first output is handed to fn,
  // the others (the values live Vars hold) carry on into the next graph as its inputs
  // (frontends/module/tracer.h: BreakCarrier). With options.fullgraph a break is an error
  // naming its line.
  void set_up_breaks(frontends::BreakCarrier& carrier, const std::vector<Tensor>& inputs,
                     std::vector<std::string>& breaks) {
    carrier.carried.clear();
    carrier.run = [this, &inputs, &breaks, &carrier](const ir::Graph& segment, const std::string& where,
                                                     bool recomputed) {
      if (options.fullgraph)
        fail("kiln::compile: ", options.name, ": graph break at ", where,
             ": the code needs the value of a traced tensor (options.fullgraph is set; use kiln::cond for a "
             "data-dependent branch)");
      breaks.push_back(where);
      std::map<std::string, Tensor> fed = feeds(inputs, carrier);
      if (recomputed)  // the graph after the break does the segment's input mutations again
        for (auto& [name, value] : fed) value = value.clone();
      if (explaining) {
        explained_graphs.push_back({op_count(segment), "graph break at " + where, ir::print_graph(segment)});
        return ir::interpret(segment, fed);
      }
      std::vector<Tensor> values = run_cached(*break_segments, segment, fed);
      if (log_enabled("graph_breaks")) {
        const Tensor& value = values.at(0);
        std::string gave = value.numel() == 1 ? compiler::number_text(value.item())
                                              : "a tensor of " + std::string(dtype_name(value.dtype())) + "[" +
                                                    std::to_string(value.numel()) + " elements]";
        log("graph_breaks", options.name + ": graph break at " + where + ": a graph of " +
                                std::to_string(op_count(segment)) + " ops ran and gave " + gave + "; " +
                                std::to_string(values.size() - 1) + " more values carried into the next graph");
      }
      return values;
    };
  }

  // Traces fn for these inputs (the dynamic dims as symbols where fn allows it); `types` and
  // `ranges` get the placeholders' types and the symbols' ranges.
  // `carrier` gets the values carried across the trace's breaks (the graph's extra inputs).
  ir::Graph trace_for(const std::vector<Tensor>& inputs, const std::vector<double>& scalars,
                      std::vector<ir::TensorMeta>& types, std::map<std::string, std::pair<int64_t, int64_t>>& ranges,
                      std::vector<std::string>& breaks, frontends::BreakCarrier& carrier) {
    types = input_types(inputs, options.dynamic != DynamicShapes::never, ranges);
    bool symbolic = false;
    for (const ir::TensorMeta& type : types) symbolic = symbolic || !type.is_static();
    set_up_breaks(carrier, inputs, breaks);
    TraceOptions trace_options{.input_names = names, .on_value = {}};
    auto traced = [&](const std::vector<Var>& vars) { return fn(vars, scalars); };
    if (module != nullptr) module->assign_paths();
    try {
      return trace_graph(traced, types, trace_options, &carrier);
    } catch (const Error& error) {
      if (!symbolic || options.fullgraph) throw;
      // fn needs a static size somewhere (Var::size() of a symbolic dim, a reshape to constants):
      // this trace is static.
      std::string note = std::string("every dim static: tracing with symbolic sizes failed: ") + error.what();
      log("dynamic", options.name + ": " + note);
      if (explaining) specializations.push_back(note);
      symbolic_trace_failed = true;
    }
    ranges.clear();
    breaks.clear();
    explained_graphs.clear();
    carrier.carried.clear();
    types = input_types(inputs, false, ranges);
    return trace_graph(traced, types, trace_options, &carrier);
  }

  // The first call, or a recompile (the caller holds the lock exclusively): traces fn and keeps
  // a variant; a trace with graph breaks keeps none (such a function is traced on every call).
  std::vector<Tensor> add_variant(const std::vector<Tensor>& inputs, const std::vector<double>& scalars) {
    update_dynamic_dims(inputs);
    std::map<std::string, std::pair<int64_t, int64_t>> ranges;
    std::vector<ir::TensorMeta> types;
    std::vector<std::string> breaks;
    frontends::BreakCarrier carrier;
    ir::Graph graph = trace_for(inputs, scalars, types, ranges, breaks, carrier);
    ++traces;
    if (!breaks.empty()) {
      has_breaks = true;
      last_breaks = breaks.size();
      return run_final(graph, feeds(inputs, carrier));
    }
    size_t ops = op_count(graph);
    auto variant = std::make_unique<Variant>(
        Variant{compiler::make_guards(types, ranges, scalars, module), compiler::compile(graph, compile_options()), ops});
    if (log_enabled("guards")) {
      std::string text = options.name + ": variant " + std::to_string(variants.size()) + " (" + std::to_string(ops) +
                         " ops) guards:";
      for (const Guard& guard : variant->guards) text += "\n  " + compiler::describe_guard(guard, names);
      log("guards", text);
    }
    variants.push_back(std::move(variant));
    return run(*variants.back(), inputs);
  }

  // The graph after a function's last break: compiled once per structure, run.
  std::vector<Tensor> run_final(const ir::Graph& graph, const std::map<std::string, Tensor>& feeds) {
    return run_cached(*final_graphs, graph, feeds);
  }

  // Runs a graph of a function with breaks: compiled once per structure; past the cache's
  // capacity, in the interpreter (with one warning).
  std::vector<Tensor> run_cached(compiler::SegmentCache& cache, const ir::Graph& graph,
                                 const std::map<std::string, Tensor>& feeds) {
    compiler::SegmentCache::Lookup lookup = cache.get(graph, compile_options());
    if (lookup.compiled && cache.size() > 1)
      log("recompiles", options.name + ": a new graph " + (&cache == final_graphs.get() ? "after" : "before") +
                            " a break (another path or another shape), compiled");
    if (lookup.model != nullptr) return lookup.model->run(feeds);
    ++fallback_calls;
    {
      std::lock_guard<std::mutex> lock(warning_mutex);  // not `mutex`: a trace may hold it
      if (!warned_graph_limit) {
        warned_graph_limit = true;
        std::cerr << "kiln: warning: " << options.name << " has graph breaks and reached its recompile limit ("
                  << options.recompile_limit << " graphs " << (&cache == final_graphs.get() ? "after" : "before")
                  << " a break); new graphs now run in the interpreter\n";
      }
    }
    return ir::interpret(graph, feeds);
  }

  // A call of a function with graph breaks: trace it again (its control flow runs natively;
  // each graph is compiled once per structure).
  std::vector<Tensor> lazy_call(const std::vector<Tensor>& inputs, const std::vector<double>& scalars) {
    {
      std::unique_lock lock(mutex);
      update_dynamic_dims(inputs);
      ++traces;
    }
    std::map<std::string, std::pair<int64_t, int64_t>> ranges;
    std::vector<ir::TensorMeta> types;
    std::vector<std::string> breaks;
    frontends::BreakCarrier carrier;
    ir::Graph graph;
    {
      std::shared_lock lock(mutex);  // the dynamic dims, read by the trace
      graph = trace_for(inputs, scalars, types, ranges, breaks, carrier);
    }
    last_breaks = breaks.size();
    return run_final(graph, feeds(inputs, carrier));
  }

  // Past the recompile limit: the interpreter on a static trace of this call, or an error.
  std::vector<Tensor> fall_back(const std::vector<Tensor>& inputs, const std::vector<double>& scalars,
                                const std::string& failure) {
    std::string what = options.name + " reached its recompile limit (" + std::to_string(options.recompile_limit) +
                       " variants); the guard that kept failing: " + failure;
    if (options.fallback == RecompileFallback::error) fail("kiln::compile: ", what);
    if (!warned_limit) {
      warned_limit = true;
      std::cerr << "kiln: warning: " << what
                << "; calls that no variant accepts now run in the interpreter (raise "
                   "FunctionCompileOptions::recompile_limit, or mark the changing dim dynamic)\n";
    }
    ++fallback_calls;
    std::map<std::string, std::pair<int64_t, int64_t>> ranges;
    TraceOptions trace_options{.input_names = names, .on_value = {}};
    if (module != nullptr) module->assign_paths();
    ir::Graph graph = trace_graph([&](const std::vector<Var>& vars) { return fn(vars, scalars); },
                            input_types(inputs, false, ranges), trace_options);
    return ir::interpret(graph, named(inputs));
  }
};

std::vector<Tensor> CompiledFunction::operator()(const std::vector<Tensor>& inputs,
                                                 const std::vector<double>& scalars) const {
  State& state = *state_;
  ++state.calls;
  if (state.has_breaks) {
    if (inputs.size() != state.input_count || scalars.size() != state.scalar_count)
      fail("kiln::compile: ", state.options.name, " takes ", state.input_count, " inputs and ", state.scalar_count,
           " scalars; got ", inputs.size(), " and ", scalars.size());
    return state.lazy_call(inputs, scalars);
  }
  {
    std::shared_lock lock(state.mutex);
    if (!state.variants.empty()) {
      if (inputs.size() != state.input_count)
        fail("kiln::compile: ", state.options.name, " takes ", state.input_count, " inputs; got ", inputs.size());
      if (scalars.size() != state.scalar_count)
        fail("kiln::compile: ", state.options.name, " takes ", state.scalar_count, " scalars; got ", scalars.size());
      if (Variant* variant = state.find_variant(inputs, scalars, nullptr)) return state.run(*variant, inputs);
    }
  }
  std::unique_lock lock(state.mutex);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined()) fail("kiln::compile: ", state.options.name, ": input ", i, " is an undefined tensor");
  if (!state.signature_known) {
    if (!state.options.input_names.empty() && state.options.input_names.size() != inputs.size())
      fail("kiln::compile: ", state.options.name, " has ", state.options.input_names.size(), " input names for ",
           inputs.size(), " inputs");
    state.input_count = inputs.size();
    state.scalar_count = scalars.size();
    state.names = state.options.input_names.empty() ? default_input_names(inputs.size()) : state.options.input_names;
    state.signature_known = true;
  } else if (inputs.size() != state.input_count || scalars.size() != state.scalar_count) {
    fail("kiln::compile: ", state.options.name, " takes ", state.input_count, " inputs and ", state.scalar_count,
         " scalars; got ", inputs.size(), " and ", scalars.size());
  }
  // No variant yet (also a function with breaks, for calls that raced the one that found them).
  if (state.variants.empty()) return state.add_variant(inputs, scalars);
  std::string failure;
  if (Variant* variant = state.find_variant(inputs, scalars, &failure)) return state.run(*variant, inputs);
  if (int(state.variants.size()) >= state.options.recompile_limit) {
    return state.fall_back(inputs, scalars, failure);
  }
  log("recompiles", state.options.name + ": recompiling (variant " + std::to_string(state.variants.size()) +
                        "): " + failure);
  return state.add_variant(inputs, scalars);
}

void CompiledFunction::mark_dynamic(size_t input, int64_t dim, int64_t min, int64_t max) {
  if (min > max) fail("kiln::mark_dynamic: the range [", min, ", ", max, "] is empty");
  if (dim < 0) fail("kiln::mark_dynamic: dim ", dim, " is negative");
  std::unique_lock lock(state_->mutex);
  state_->dynamic_dims.mark(input, dim, DimRange{min, max});
}

CompiledFunctionStats CompiledFunction::stats() const {
  std::shared_lock lock(state_->mutex);
  return {state_->calls.load(), state_->traces,           state_->variants.size(), state_->fallback_calls.load(),
          state_->last_breaks.load(), state_->break_segments->size() + state_->final_graphs->size()};
}

std::string CompiledFunction::guards_report() const {
  std::shared_lock lock(state_->mutex);
  std::ostringstream out;
  for (size_t v = 0; v < state_->variants.size(); ++v) {
    const Variant& variant = *state_->variants[v];
    out << "variant " << v << " (" << variant.op_count << " ops):\n";
    for (const Guard& guard : variant.guards) out << "  " << compiler::describe_guard(guard, state_->names) << "\n";
  }
  return out.str();
}

CompiledFunction compile(ScalarFunction fn, FunctionCompileOptions options) {
  if (!fn) fail("kiln::compile: the function is empty");
  if (options.recompile_limit < 1) fail("kiln::compile: recompile_limit is ", options.recompile_limit, "; it must be >= 1");
  CompiledFunction compiled;
  compiled.state_ = std::make_shared<CompiledFunction::State>();
  compiled.state_->fn = std::move(fn);
  compiled.state_->break_segments = std::make_unique<compiler::SegmentCache>(size_t(options.recompile_limit));
  compiled.state_->final_graphs = std::make_unique<compiler::SegmentCache>(size_t(options.recompile_limit));
  for (const DynamicDim& dim : options.dynamic_dims) compiled.mark_dynamic(dim.input, dim.dim, dim.min, dim.max);
  compiled.state_->options = std::move(options);
  return compiled;
}

CompiledFunction compile(TensorFunction fn, FunctionCompileOptions options) {
  if (!fn) fail("kiln::compile: the function is empty");
  return compile(ScalarFunction([fn = std::move(fn)](const std::vector<Var>& inputs, const std::vector<double>&) {
                   return fn(inputs);
                 }),
                 std::move(options));
}

CompiledFunction compile(nn::Module& module, FunctionCompileOptions options) {
  if (options.name == "function") options.name = module.type_name();
  CompiledFunction compiled = compile(
      ScalarFunction([&module](const std::vector<Var>& inputs, const std::vector<double>&) { return module(inputs); }),
      std::move(options));
  compiled.state_->module = &module;
  return compiled;
}

namespace {

// How many variants a declared dynamic dim's range needs: one symbolic variant for its sizes >= 2,
// plus one static variant for each of 0 and 1 in the range; every size its own when fn needs the
// size static.
std::string range_variants(const DynamicDim& dim, const std::vector<std::string>& names, bool static_trace) {
  std::string where = (dim.input < names.size() ? names[dim.input] : "input " + std::to_string(dim.input)) +
                      ".size(" + std::to_string(dim.dim) + ") in [" + std::to_string(dim.min) + ", " +
                      (dim.max == std::numeric_limits<int64_t>::max() ? std::string("inf") : std::to_string(dim.max)) +
                      "]";
  if (static_trace) {
    if (dim.max == std::numeric_limits<int64_t>::max()) return where + ": a static variant per size (fn needs it static)";
    return where + ": " + std::to_string(dim.max - dim.min + 1) + " static variants (fn needs the size static)";
  }
  size_t count = (dim.max >= 2 ? 1 : 0) + (dim.min <= 0 && dim.max >= 0 ? 1 : 0) + (dim.min <= 1 && dim.max >= 1 ? 1 : 0);
  std::string text = where + ": " + std::to_string(count) + (count == 1 ? " variant" : " variants");
  if (count > 1) text += " (sizes 0 and 1 are specialized)";
  return text;
}

}  // namespace

Explanation explain(ScalarFunction fn, const std::vector<Tensor>& inputs, const std::vector<double>& scalars,
                    FunctionCompileOptions options) {
  CompiledFunction compiled = compile(std::move(fn), std::move(options));
  CompiledFunction::State& state = *compiled.state_;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined()) fail("kiln::explain: input ", i, " is an undefined tensor");
  if (!state.options.input_names.empty() && state.options.input_names.size() != inputs.size())
    fail("kiln::explain: ", state.options.input_names.size(), " input names for ", inputs.size(), " inputs");
  state.names = state.options.input_names.empty() ? default_input_names(inputs.size()) : state.options.input_names;
  state.explaining = true;
  std::map<std::string, std::pair<int64_t, int64_t>> ranges;
  std::vector<ir::TensorMeta> types;
  Explanation explanation;
  frontends::BreakCarrier carrier;
  ir::Graph graph = state.trace_for(inputs, scalars, types, ranges, explanation.breaks, carrier);
  explanation.graphs = std::move(state.explained_graphs);
  explanation.graphs.push_back({op_count(graph), "the function's return", ir::print_graph(graph)});
  explanation.specializations = std::move(state.specializations);
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (int64_t d = 0; d < types[i].rank(); ++d) {
      if (!types[i].shape[size_t(d)].is_constant() || state.dynamic_dims.contains(i, d)) continue;
      if (state.options.dynamic == DynamicShapes::automatic)
        explanation.specializations.push_back(state.names[i] + ".size(" + std::to_string(d) + ") == " +
                                              std::to_string(inputs[i].size(d)) +
                                              ": static until a call changes it (options.dynamic = automatic)");
    }
  }
  for (size_t s = 0; s < scalars.size(); ++s)
    explanation.specializations.push_back("scalar " + std::to_string(s) + " == " + compiler::number_text(scalars[s]) +
                                          ": guarded by value (a new value recompiles)");
  if (explanation.breaks.empty())
    for (const Guard& guard : compiler::make_guards(types, ranges, scalars, state.module))
      explanation.guards.push_back(compiler::describe_guard(guard, state.names));
  for (const DynamicDim& dim : state.options.dynamic_dims) {
    bool symbolic = dim.input < types.size() && dim.dim < types[dim.input].rank() &&
                    !types[dim.input].shape[size_t(dim.dim)].is_constant();
    explanation.range_variants.push_back(range_variants(dim, state.names, !symbolic && state.symbolic_trace_failed));
  }
  return explanation;
}

Explanation explain(TensorFunction fn, const std::vector<Tensor>& inputs, FunctionCompileOptions options) {
  if (!fn) fail("kiln::explain: the function is empty");
  return explain(ScalarFunction([fn = std::move(fn)](const std::vector<Var>& in, const std::vector<double>&) { return fn(in); }),
                 inputs, {}, std::move(options));
}

std::string Explanation::to_string() const {
  std::ostringstream out;
  out << graphs.size() << (graphs.size() == 1 ? " graph" : " graphs") << ", " << breaks.size()
      << (breaks.size() == 1 ? " graph break" : " graph breaks") << "\n";
  for (size_t g = 0; g < graphs.size(); ++g)
    out << "  graph " << g << ": " << graphs[g].op_count << " ops, ended by " << graphs[g].ended_by << "\n";
  if (!guards.empty()) {
    out << "guards:\n";
    for (const std::string& guard : guards) out << "  " << guard << "\n";
  }
  if (!specializations.empty()) {
    out << "specializations:\n";
    for (const std::string& note : specializations) out << "  " << note << "\n";
  }
  if (!range_variants.empty()) {
    out << "declared dynamic dims:\n";
    for (const std::string& note : range_variants) out << "  " << note << "\n";
  }
  return out.str();
}

}  // namespace kiln
