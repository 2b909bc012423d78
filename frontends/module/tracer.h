// The state of one kiln::trace call: the graph being recorded, the get_attr node of every
// parameter and buffer read so far, and the stack of module calls running (each with its
// module path and the location it was called from). kiln::Var operations and modules reach
// it through Tracer::active(): one trace runs per thread at a time.
//
// Where a node came from: the module path of the innermost module call, and the innermost
// C++ location in the user's code. A location inside Kiln's own module and functional code
// (frontends/module/, include/kiln/) is replaced by the call site of the innermost module
// called from user code, so a Linear's node points at the user's `fc1(x)`, not at linear.cpp.
#pragma once

#include <functional>
#include <map>
#include <source_location>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "kiln/var.h"
#include "kiln/tensor.h"

namespace kiln::frontends {

// How kiln::compile(fn) breaks a graph where traced code needs a value (Var::item(), `if (var)`):
// `run` runs `segment`, the graph recorded so far whose outputs are the needed value and then
// every value a live Var still refers to, and returns their tensors. The trace then goes on
// with those values as new placeholders (named in `carried`, with their tensors), so the graph
// after the break starts from them rather than computing them again; everything recorded
// before the break leaves the graph (its input mutations were written back by the segment).
// While a live Var is a view or an in-place result (it aliases another value, which a copy would
// not), the segment's outputs are the needed value only and the graph keeps everything, to be
// computed again after the break: `recomputed` is then true, and `run` must leave the inputs
// unmutated (the graph after the break mutates them).
struct BreakCarrier {
  std::function<std::vector<Tensor>(const ir::Graph& segment, const std::string& where, bool recomputed)> run;
  std::vector<std::pair<std::string, Tensor>> carried;  // filled by the trace, in order
};

class Tracer {
 public:
  // Records into `graph` and becomes the thread's active tracer until destroyed.
  explicit Tracer(ir::Graph& graph);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // The active tracer; kiln::Error when no trace is running (naming `loc`).
  static Tracer& active(const std::source_location& loc);

  ir::Graph& graph() { return graph_; }
  uint64_t id() const { return id_; }

  // Records a call of registry op `op`. An undefined Var among the arguments is an error. A
  // user error from the op's shape rule is rethrown prefixed with where() of the call.
  ir::Node* call(const std::string& op, std::vector<ir::Argument> args, ir::Kwargs kwargs,
                 const std::source_location& loc);
  // The get_attr node reading parameter or buffer `path` (created on first use, with
  // graph.set_parameter(path, value), and `kind` in the graph signature: PARAMETER or BUFFER).
  ir::Node* attribute(const std::string& path, const Tensor& value, ir::InputKind kind, const std::source_location& loc);
  ir::Node* placeholder(const std::string& name, const ir::TensorMeta& meta);

  // Module calls: push on entry to a module's forward, pop on exit.
  void enter_module(const std::string& path, const std::source_location& call_site);
  void exit_module();
  const std::string& module_path() const;

  // The value of a one-element `node` for the traced code (Var::item), from the trace's value
  // provider; without one, a kiln::Error naming `what` and where() of `loc`.
  double value_of(ir::Node* node, const char* what, const std::source_location& loc);
  void set_value_provider(const std::function<double(const ir::Graph&, const ir::Node&, const std::string&)>* provider) {
    value_provider_ = provider;
  }
  // A value whose shape depends on the data (Var::nonzero), made by `compute` from the value of
  // `input`: through the break carrier, the graph breaks at `input` and the result enters the
  // graph that goes on as a placeholder (a value carried across, named after `what`); without
  // one, a kiln::Error naming `what` and where() of `loc`.
  ir::Node* data_dependent(ir::Node* input, const char* what, const std::function<Tensor(const Tensor&)>& compute,
                           const std::source_location& loc);
  // Set: value_of breaks the graph through `carrier` (above), instead of the value provider.
  void set_break_carrier(BreakCarrier* carrier) { carrier_ = carrier; }

  // With a break carrier: the values carried across earlier breaks that nothing uses any more
  // (no node, no live Var) leave the graph and the carrier (called at each break and at the end).
  void drop_unused_carried_values();

  // The live Vars of the running trace `trace_id` on this thread (Var's constructors and
  // destructor call these; a Var of a trace that ended is not tracked).
  static void track_var(Var* var, uint64_t trace_id);
  static void untrack_var(Var* var, uint64_t trace_id);

  // The source info of a node recorded now at `loc`.
  ir::SourceInfo source_info(const std::source_location& loc) const;
  // "model.cpp:12 (module 'fc1')", for messages.
  std::string where(const std::source_location& loc) const;

 private:
  struct ModuleCall {
    std::string path;
    std::source_location call_site;
  };
  void check_argument(const ir::Argument& argument, const std::source_location& loc) const;
  // A break through carrier_: runs the graph so far, carries the live values across, and
  // returns the value of `node`.
  Tensor break_and_carry(ir::Node* node, const std::string& where);
  static Tracer* running(uint64_t trace_id);

  ir::Graph& graph_;
  uint64_t id_;
  Tracer* previous_;
  std::vector<ModuleCall> module_calls_;
  std::map<std::string, ir::Node*> attributes_;
  const std::function<double(const ir::Graph&, const ir::Node&, const std::string&)>* value_provider_ = nullptr;
  BreakCarrier* carrier_ = nullptr;
  std::unordered_set<Var*> live_vars_;
  int breaks_ = 0;
};

// The id of the thread's active trace; 0 when none runs. Every trace gets a new id.
uint64_t active_trace_id();

// Records a call of `op` in the active trace and returns its value (Tracer::call).
Var record(const std::string& op, std::vector<ir::Argument> args, ir::Kwargs kwargs, const std::source_location& loc);

// Whether `loc` lies in Kiln's own front-end code (frontends/module/ or include/kiln/).
bool is_kiln_location(const std::source_location& loc);

}  // namespace kiln::frontends
