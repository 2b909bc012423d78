// kiln::nn::Module: registration, the module tree, calls with hooks (module.h). State dicts
// are in module_state.cpp.
#include "kiln/nn/module.h"

#include <algorithm>

#include "frontends/module/tracer.h"
#include "kiln/error.h"

namespace kiln::nn {

using frontends::Tracer;

Module::Module(std::string type_name) : type_name_(std::move(type_name)) {}

Module::~Module() = default;

Module::Module(Module&& other)
    : type_name_(std::move(other.type_name_)),
      path_(std::move(other.path_)),
      training_(other.training_),
      parameters_(std::move(other.parameters_)),
      buffers_(std::move(other.buffers_)),
      children_(std::move(other.children_)),
      hooks_(std::move(other.hooks_)),
      next_hook_(other.next_hook_) {
  for (const Child& child : children_) {
    if (!child.owned) {
      fail(type_name_, ": cannot move a module whose submodule '", child.name,
           "' was registered by reference (register it from a std::shared_ptr to make the module movable)");
    }
  }
}

// ---- calling ----

namespace {

// Pops the module call when forward ends, normally or by an exception.
class ModuleCallScope {
 public:
  ModuleCallScope(Tracer& tracer, const std::string& path, const SourceLocation& loc) : tracer_(tracer) {
    tracer_.enter_module(path, loc);
  }
  ~ModuleCallScope() { tracer_.exit_module(); }
  ModuleCallScope(const ModuleCallScope&) = delete;
  ModuleCallScope& operator=(const ModuleCallScope&) = delete;

 private:
  Tracer& tracer_;
};

}  // namespace

Var Module::operator()(const Var& input, SourceLocation loc) {
  std::vector<Var> outputs = (*this)(std::vector<Var>{input}, loc);
  if (outputs.size() != 1) {
    fail(Tracer::active(loc).where(loc), ": ", describe(), " returned ", outputs.size(),
         " outputs; call it with a vector of inputs to receive them all");
  }
  return outputs[0];
}

std::vector<Var> Module::operator()(const std::vector<Var>& inputs, SourceLocation loc) {
  Tracer& tracer = Tracer::active(loc);
  ModuleCallScope scope(tracer, path_, loc);
  std::vector<Var> outputs = forward_all(inputs);
  // A copy: a hook may remove itself.
  std::map<size_t, ForwardHook> hooks = hooks_;
  for (auto& [handle, hook] : hooks) hook(*this, inputs, outputs);
  return outputs;
}

Var Module::forward(const Var& input) {
  fail(describe(), " does not take a single input: call it with the inputs its forward_all expects");
}

std::vector<Var> Module::forward_all(const std::vector<Var>& inputs) {
  if (inputs.size() != 1) fail(describe(), " takes 1 input, got ", inputs.size());
  return {forward(inputs[0])};
}

// ---- registration ----

void Module::check_new_name(const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos) {
    fail(type_name_, ": invalid attribute name '", name, "' (it must be non-empty and contain no '.')");
  }
  bool taken = find_entry(name) != nullptr;
  for (const Child& child : children_) taken = taken || child.name == name;
  if (taken) fail(type_name_, ": attribute '", name, "' is already registered");
}

void Module::register_parameter(const std::string& name, Tensor value) {
  check_new_name(name);
  parameters_.push_back({name, std::move(value)});
}

void Module::register_buffer(const std::string& name, Tensor value) {
  check_new_name(name);
  buffers_.push_back({name, std::move(value)});
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module, bool owned) {
  check_new_name(name);
  KILN_CHECK(module != nullptr, "registering a null submodule");
  children_.push_back({name, std::move(module), owned});
}

// ---- access ----

const Tensor* Module::find_entry(const std::string& name) const {
  for (const Entry& entry : parameters_) {
    if (entry.name == name) return &entry.value;
  }
  for (const Entry& entry : buffers_) {
    if (entry.name == name) return &entry.value;
  }
  return nullptr;
}

const Tensor& Module::parameter(const std::string& name) const {
  for (const Entry& entry : parameters_) {
    if (entry.name == name) return entry.value;
  }
  fail(describe(), " has no parameter '", name, "'");
}

const Tensor& Module::buffer(const std::string& name) const {
  for (const Entry& entry : buffers_) {
    if (entry.name == name) return entry.value;
  }
  fail(describe(), " has no buffer '", name, "'");
}

bool Module::has_attribute(const std::string& name) const { return find_entry(name) != nullptr; }

void Module::collect(const std::string& prefix, bool parameters, bool recurse,
                     std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const Entry& entry : parameters ? parameters_ : buffers_) out.emplace_back(prefix + entry.name, entry.value);
  if (!recurse) return;
  for (const Child& child : children_) child.module->collect(prefix + child.name + ".", parameters, true, out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", true, recurse, out);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, value] : named_parameters(recurse)) out.push_back(value);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", false, recurse, out);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_children() const {
  std::vector<std::pair<std::string, Module*>> out;
  for (const Child& child : children_) out.emplace_back(child.name, child.module.get());
  return out;
}

std::vector<Module*> Module::children() const {
  std::vector<Module*> out;
  for (const Child& child : children_) out.push_back(child.module.get());
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, Module*>> out{{"", const_cast<Module*>(this)}};
  for (const Child& child : children_) {
    for (auto& [path, module] : child.module->named_modules()) {
      out.emplace_back(path.empty() ? child.name : child.name + "." + path, module);
    }
  }
  return out;
}

// ---- mode, hooks, paths ----

void Module::train(bool mode) {
  training_ = mode;
  for (const Child& child : children_) child.module->train(mode);
}

size_t Module::register_forward_hook(ForwardHook hook) {
  hooks_.emplace(next_hook_, std::move(hook));
  return next_hook_++;
}

void Module::remove_forward_hook(size_t handle) { hooks_.erase(handle); }

void Module::assign_paths(const std::string& path) {
  path_ = path;
  for (const Child& child : children_) child.module->assign_paths(path.empty() ? child.name : path + "." + child.name);
}

std::string Module::describe() const {
  return type_name_ + (path_.empty() ? std::string(" (root)") : " '" + path_ + "'");
}

Var Module::attribute(const std::string& name, SourceLocation loc) const {
  const Tensor* value = find_entry(name);
  if (!value) fail(describe(), " has no parameter or buffer '", name, "'");
  bool is_buffer = std::any_of(buffers_.begin(), buffers_.end(), [&](const Entry& entry) { return entry.name == name; });
  return Var(Tracer::active(loc).attribute(path_.empty() ? name : path_ + "." + name, *value,
                                           is_buffer ? ir::InputKind::buffer : ir::InputKind::parameter, loc));
}

Var Module::optional_attribute(const std::string& name, SourceLocation loc) const {
  return has_attribute(name) ? attribute(name, loc) : Var();
}

void Module::fail_in_forward(const std::string& message, const SourceLocation& loc) const {
  fail(Tracer::active(loc).where(loc), ": ", describe(), ": ", message);
}

}  // namespace kiln::nn
