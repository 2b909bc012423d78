// The active trace: recording calls and parameter reads with their source info (tracer.h).
#include "frontends/module/tracer.h"

#include <atomic>
#include <set>

#include "ir/op_registry.h"
#include "kiln/error.h"

namespace kiln::frontends {

namespace {

thread_local Tracer* active_tracer = nullptr;
std::atomic<uint64_t> last_trace_id{0};

bool has_prefix(std::string_view text, const std::string& prefix) {
  return text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

bool is_kiln_location(const std::source_location& loc) {
  // By folder, not by absolute path: the public headers may be installed anywhere
  // (PREFIX/include/kiln/), and an object file may carry another checkout's paths (ccache, a
  // relocated build tree). The module API's code lives in frontends/module/.
  std::string_view file = loc.file_name();
  auto in = [&](std::string_view folder) {
    return has_prefix(file, std::string(folder)) || file.find("/" + std::string(folder)) != std::string_view::npos;
  };
  return in("include/kiln/") || in("frontends/module/");
}

Var record(const std::string& op, std::vector<ir::Argument> args, ir::Kwargs kwargs, const std::source_location& loc) {
  return Var(Tracer::active(loc).call(op, std::move(args), std::move(kwargs), loc));
}

uint64_t active_trace_id() { return active_tracer ? active_tracer->id() : 0; }

Tracer::Tracer(ir::Graph& graph) : graph_(graph), id_(++last_trace_id), previous_(active_tracer) {
  active_tracer = this;
}

Tracer::~Tracer() { active_tracer = previous_; }

Tracer* Tracer::running(uint64_t trace_id) {
  for (Tracer* tracer = active_tracer; tracer != nullptr; tracer = tracer->previous_)
    if (tracer->id_ == trace_id) return tracer;
  return nullptr;
}

void Tracer::track_var(Var* var, uint64_t trace_id) {
  if (Tracer* tracer = running(trace_id)) tracer->live_vars_.insert(var);
}

void Tracer::untrack_var(Var* var, uint64_t trace_id) {
  if (Tracer* tracer = running(trace_id)) tracer->live_vars_.erase(var);
}

Tracer& Tracer::active(const std::source_location& loc) {
  if (!active_tracer) {
    fail(loc.file_name(), ":", loc.line(),
         ": a kiln::Var operation or module call ran outside kiln::trace (modules record graphs; "
         "call them from the function or module passed to kiln::trace)");
  }
  return *active_tracer;
}

void Tracer::check_argument(const ir::Argument& argument, const std::source_location& loc) const {
  if (argument.is_node() && argument.node() == nullptr) {
    fail(where(loc), ": an undefined kiln::Var was used as an operand");
  }
  // Var::node() refuses Vars of other traces, so every node here is this trace's.
  KILN_CHECK(!argument.is_node() || &argument.node()->graph() == &graph_, "a node of another graph reached the tracer");
  if (argument.is_list()) {
    for (const ir::Argument& element : argument.list()) check_argument(element, loc);
  }
}

ir::Node* Tracer::call(const std::string& op, std::vector<ir::Argument> args, ir::Kwargs kwargs,
                       const std::source_location& loc) {
  for (const ir::Argument& argument : args) check_argument(argument, loc);
  for (const auto& [key, argument] : kwargs) check_argument(argument, loc);
  ir::Node* node = nullptr;
  try {
    node = graph_.create_call(op, std::move(args), std::move(kwargs));
  } catch (const Error& error) {
    fail(where(loc), ": ", error.what());
  }
  node->source = source_info(loc);
  return node;
}

ir::Node* Tracer::attribute(const std::string& path, const Tensor& value, ir::InputKind kind,
                            const std::source_location& loc) {
  auto found = attributes_.find(path);
  if (found != attributes_.end()) return found->second;
  graph_.set_parameter(path, value);
  graph_.signature().set_attribute_kind(path, kind);
  ir::Node* node = graph_.create_get_attr(path);
  node->source = source_info(loc);
  attributes_.emplace(path, node);
  return node;
}

ir::Node* Tracer::placeholder(const std::string& name, const ir::TensorMeta& meta) {
  return graph_.create_placeholder(name, meta);
}

void Tracer::enter_module(const std::string& path, const std::source_location& call_site) {
  module_calls_.push_back({path, call_site});
}

void Tracer::exit_module() { module_calls_.pop_back(); }

const std::string& Tracer::module_path() const {
  static const std::string root;
  return module_calls_.empty() ? root : module_calls_.back().path;
}

ir::SourceInfo Tracer::source_info(const std::source_location& loc) const {
  std::source_location user_loc = loc;
  for (auto call = module_calls_.rbegin(); call != module_calls_.rend() && is_kiln_location(user_loc); ++call) {
    user_loc = call->call_site;
  }
  ir::SourceInfo info;
  info.file = user_loc.file_name();
  info.line = int(user_loc.line());
  info.module_path = module_path();
  return info;
}

double Tracer::value_of(ir::Node* node, const char* what, const std::source_location& loc) {
  if (carrier_ == nullptr && (value_provider_ == nullptr || !*value_provider_)) {
    fail(where(loc), ": ", what, " needs the value of a traced tensor, which kiln::trace does not compute (",
         "kiln::compile(fn) breaks the graph there and runs it; kiln::cond keeps both branches in one graph)");
  }
  const ir::TensorMeta& meta = node->value();
  std::optional<Sizes> shape = meta.static_shape();
  if (!shape || numel_of(*shape) != 1)
    fail(where(loc), ": ", what, " of a tensor of type ", meta.type_string(), "; it needs exactly one element");
  if (carrier_ != nullptr) return break_and_carry(node, where(loc)).item();
  return (*value_provider_)(graph_, *node, where(loc));
}

ir::Node* Tracer::data_dependent(ir::Node* input, const char* what, const std::function<Tensor(const Tensor&)>& compute,
                                 const std::source_location& loc) {
  if (carrier_ == nullptr)
    fail(where(loc), ": ", what, "() gives a shape that depends on the data, which kiln::trace does not compute ",
         "(kiln::compile(fn) breaks the graph there and runs it)");
  Tensor result = compute(break_and_carry(input, where(loc)));
  std::string name = what;
  for (int k = 1; graph_.find(name) != nullptr; ++k) name = std::string(what) + "_" + std::to_string(k);
  ir::Node* placeholder =
      graph_.create_placeholder(name, ir::TensorMeta::contiguous(result.dtype(), ir::SymShape(result.sizes().begin(), result.sizes().end())));
  carrier_->carried.emplace_back(name, result);
  return placeholder;
}

void Tracer::drop_unused_carried_values() {
  if (carrier_ == nullptr) return;
  std::set<const ir::Node*> live;
  for (const Var* var : live_vars_) live.insert(var->node_);
  std::vector<std::pair<std::string, Tensor>> kept;
  for (auto& [name, value] : carrier_->carried) {
    ir::Node* placeholder = graph_.find(name);
    if (placeholder != nullptr && placeholder->users().empty() && live.count(placeholder) == 0) {
      graph_.erase(placeholder);
      continue;
    }
    kept.emplace_back(name, std::move(value));
  }
  carrier_->carried = std::move(kept);
}

Tensor Tracer::break_and_carry(ir::Node* node, const std::string& where) {
  drop_unused_carried_values();
  // The values the code after the break can still reach: those of live Vars; with a view or an
  // in-place result among them, only the needed value (BreakCarrier, tracer.h).
  std::set<const ir::Node*> live;
  bool aliasing = false;
  for (const Var* var : live_vars_) {
    if (var->node_->op() != ir::OpKind::call_function) continue;
    const ir::OpInfo* info = ir::OpRegistry::global().find(var->node_->target());
    aliasing = aliasing || info == nullptr || info->is_view || info->is_inplace();
    live.insert(var->node_);
  }
  std::vector<ir::Node*> carried = {node};
  if (!aliasing)
    for (ir::Node* candidate : graph_.nodes())
      if (candidate != node && live.count(candidate) > 0) carried.push_back(candidate);

  ir::Graph segment = graph_.clone();
  std::vector<ir::Argument> outputs;
  for (ir::Node* value : carried) outputs.emplace_back(segment.find(value->name()));
  segment.create_output(std::move(outputs));
  std::vector<Tensor> values = carrier_->run(segment, where, aliasing);
  KILN_CHECK(values.size() == carried.size(), "a graph break's segment gave ", values.size(), " values for ",
             carried.size());
  Tensor value = values[0];
  if (aliasing) return value;

  // The carried values become placeholders; every computed node before the break leaves.
  std::string prefix = "break" + std::to_string(breaks_++) + "_";
  std::map<const ir::Node*, ir::Node*> replacements;
  for (size_t i = 0; i < carried.size(); ++i) {
    if (carried[i]->op() != ir::OpKind::call_function) continue;  // an input or parameter stays itself
    const ir::TensorMeta& meta = carried[i]->value();
    std::string name = prefix + carried[i]->name();
    replacements[carried[i]] = graph_.create_placeholder(name, ir::TensorMeta::contiguous(meta.dtype, meta.shape));
    carrier_->carried.emplace_back(name, values[i]);
  }
  for (Var* var : live_vars_)
    if (auto found = replacements.find(var->node_); found != replacements.end()) var->node_ = found->second;
  std::vector<ir::Node*> computed;
  for (ir::Node* candidate : graph_.nodes())
    if (candidate->op() == ir::OpKind::call_function) computed.push_back(candidate);
  for (auto it = computed.rbegin(); it != computed.rend(); ++it) graph_.erase(*it);
  return value;
}

std::string Tracer::where(const std::source_location& loc) const {
  ir::SourceInfo info = source_info(loc);
  std::string text = info.file + ":" + std::to_string(info.line);
  if (!info.module_path.empty()) text += " (module '" + info.module_path + "')";
  return text;
}

}  // namespace kiln::frontends
