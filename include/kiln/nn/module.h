// kiln::nn::Module: the base of every layer and model, after torch.nn.Module. A module owns
// named parameters and buffers (kiln::Tensor data), named submodules, a training flag and
// forward hooks. Names compose into paths ("encoder.layers.0.fc1.weight") exactly as in
// PyTorch, so state dicts move between the two by name.
//
// Calling a module (`fc1(x)`) runs its forward inside kiln::trace: the module's path and the
// caller's source location go into every node it records, its parameters are read through
// get_attr nodes named by path, and its forward hooks run after forward. A subclass
// overrides forward(Var) (one input, one output) or forward_all (any number of each).
//
// Ownership: submodules registered from a shared_ptr (and every child of the built-in
// modules and containers) are owned; a member submodule registered by reference is borrowed,
// and then the parent cannot be moved (a kiln::Error says so) since the reference would
// dangle. Modules are never copied.
#pragma once

#include <concepts>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/var.h"
#include "kiln/tensor.h"

namespace kiln::nn {

class Module;

// Runs after a module's forward; may replace the outputs (as a PyTorch hook that returns a value).
using ForwardHook = std::function<void(Module& module, const std::vector<Var>& inputs, std::vector<Var>& outputs)>;

class Module {
 public:
  // `type_name` names the kind of module in messages ("Linear").
  explicit Module(std::string type_name);
  virtual ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Module(Module&& other);
  Module& operator=(Module&&) = delete;

  // ---- calling (inside kiln::trace) ----
  Var operator()(const Var& input, SourceLocation loc = SourceLocation::current());
  std::vector<Var> operator()(const std::vector<Var>& inputs, SourceLocation loc = SourceLocation::current());

  // What a call computes. The default forward fails (the module takes other inputs); the
  // default forward_all calls forward with its one input.
  virtual Var forward(const Var& input);
  virtual std::vector<Var> forward_all(const std::vector<Var>& inputs);

  // ---- registration: names are unique among a module's parameters, buffers and children,
  // non-empty and without '.' ----
  void register_parameter(const std::string& name, Tensor value);
  void register_buffer(const std::string& name, Tensor value);
  template <std::derived_from<Module> M>
  M& register_module(const std::string& name, M& member) {
    add_child(name, std::shared_ptr<Module>(std::shared_ptr<Module>(), &member), /*owned=*/false);
    return member;
  }
  template <std::derived_from<Module> M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module, /*owned=*/true);
    return module;
  }

  // ---- access; recursive listings go in PyTorch's order (own entries, then each child's) ----
  // This module's own parameter or buffer by name (kiln::Error when it has none of that name).
  const Tensor& parameter(const std::string& name) const;
  const Tensor& buffer(const std::string& name) const;
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, Module*>> named_children() const;
  std::vector<Module*> children() const;
  // Every module of the tree with its path, this one first as "".
  std::vector<std::pair<std::string, Module*>> named_modules() const;

  // ---- mode, hooks ----
  void train(bool mode = true);  // this module and every submodule
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Returns a handle for remove_forward_hook.
  size_t register_forward_hook(ForwardHook hook);
  void remove_forward_hook(size_t handle);

  // ---- state: parameters and buffers by path ----
  std::map<std::string, Tensor> state_dict() const;
  // Copies (with dtype conversion) every entry into the module's own tensors. Checks
  // everything first and changes nothing on error: one kiln::Error lists the missing keys,
  // the unexpected keys (both only when `strict`) and every shape mismatch.
  void load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true);
  // From a safetensors file (kiln/safetensors.h).
  void load_state_dict(const std::string& safetensors_path, bool strict = true);

  const std::string& type_name() const { return type_name_; }
  // This module's path in the tree being traced ("" for the root, "encoder.fc1"); set for
  // every module of the tree by kiln::trace (assign_paths).
  const std::string& path() const { return path_; }
  void assign_paths(const std::string& path = "");
  // "Linear 'fc1'" (or "Linear (root)"), for messages.
  std::string describe() const;

 protected:
  // The traced value of this module's own parameter or buffer `name`: a get_attr of its path.
  Var attribute(const std::string& name, SourceLocation loc = SourceLocation::current()) const;
  // attribute(name) when this module has that parameter or buffer (an optional one, like a
  // bias), else an undefined Var (None).
  Var optional_attribute(const std::string& name, SourceLocation loc = SourceLocation::current()) const;
  bool has_attribute(const std::string& name) const;
  // A kiln::Error prefixed with describe() and the caller's location in the trace.
  [[noreturn]] void fail_in_forward(const std::string& message, const SourceLocation& loc) const;

 private:
  struct Entry {
    std::string name;
    Tensor value;
  };
  struct Child {
    std::string name;
    std::shared_ptr<Module> module;
    bool owned;
  };
  void check_new_name(const std::string& name) const;
  void add_child(const std::string& name, std::shared_ptr<Module> module, bool owned);
  const Tensor* find_entry(const std::string& name) const;
  void collect(const std::string& prefix, bool parameters, bool recurse,
               std::vector<std::pair<std::string, Tensor>>& out) const;

  std::string type_name_;
  std::string path_;
  bool training_ = true;
  std::vector<Entry> parameters_;
  std::vector<Entry> buffers_;
  std::vector<Child> children_;
  std::map<size_t, ForwardHook> hooks_;
  size_t next_hook_ = 0;
};

}  // namespace kiln::nn
