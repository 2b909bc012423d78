// Containers: torch.nn.ModuleList (an indexed list of owned submodules named "0", "1", ...)
// and torch.nn.Sequential (a ModuleList whose forward calls each module on the previous
// one's output).
#pragma once

#include <concepts>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "kiln/nn/module.h"

namespace kiln::nn {

// What the containers accept: a module value (moved in) or a shared_ptr to one (shared).
template <typename T>
concept ModuleOrPointer = std::derived_from<std::remove_cvref_t<T>, Module> ||
                          std::derived_from<typename std::remove_cvref_t<T>::element_type, Module>;

class ModuleList : public Module {
 public:
  ModuleList() : ModuleList("ModuleList") {}
  template <ModuleOrPointer... Modules>
    requires(sizeof...(Modules) > 0)
  explicit ModuleList(Modules&&... modules) : ModuleList("ModuleList") {
    (push_back(std::forward<Modules>(modules)), ...);
  }

  // Appends a module: a shared_ptr is shared; a module value is moved into a new owned one.
  template <std::derived_from<Module> M>
  void push_back(std::shared_ptr<M> module) {
    register_module(std::to_string(modules_.size()), std::shared_ptr<Module>(module));
    modules_.push_back(std::move(module));
  }
  template <typename M>
    requires std::derived_from<std::remove_cvref_t<M>, Module> && (!std::is_lvalue_reference_v<M>)
  void push_back(M&& module) {
    push_back(std::make_shared<std::remove_cvref_t<M>>(std::move(module)));
  }

  size_t size() const { return modules_.size(); }
  // kiln::Error when out of range.
  Module& operator[](size_t index) const;
  template <std::derived_from<Module> M>
  M& at(size_t index) const {
    M* module = dynamic_cast<M*>(&(*this)[index]);
    if (!module) fail_wrong_type(index);
    return *module;
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 protected:
  explicit ModuleList(std::string type_name) : Module(std::move(type_name)) {}

 private:
  [[noreturn]] void fail_wrong_type(size_t index) const;
  std::vector<std::shared_ptr<Module>> modules_;
};

class Sequential : public ModuleList {
 public:
  Sequential() : ModuleList("Sequential") {}
  template <ModuleOrPointer... Modules>
    requires(sizeof...(Modules) > 0)
  explicit Sequential(Modules&&... modules) : ModuleList("Sequential") {
    (push_back(std::forward<Modules>(modules)), ...);
  }
  Var forward(const Var& input) override;
};

}  // namespace kiln::nn
