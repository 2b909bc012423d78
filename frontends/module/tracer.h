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
#include <vector>

#include "ir/graph.h"
#include "kiln/var.h"
#include "kiln/tensor.h"

namespace kiln::frontends {

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

  ir::Graph& graph_;
  uint64_t id_;
  Tracer* previous_;
  std::vector<ModuleCall> module_calls_;
  std::map<std::string, ir::Node*> attributes_;
  const std::function<double(const ir::Graph&, const ir::Node&, const std::string&)>* value_provider_ = nullptr;
};

// The id of the thread's active trace; 0 when none runs. Every trace gets a new id.
uint64_t active_trace_id();

// Records a call of `op` in the active trace and returns its value (Tracer::call).
Var record(const std::string& op, std::vector<ir::Argument> args, ir::Kwargs kwargs, const std::source_location& loc);

// Whether `loc` lies in Kiln's own front-end code (frontends/module/ or include/kiln/).
bool is_kiln_location(const std::source_location& loc);

}  // namespace kiln::frontends
