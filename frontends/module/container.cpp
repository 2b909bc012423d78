// ModuleList and Sequential (container.h).
#include "kiln/nn/container.h"

#include "kiln/error.h"

namespace kiln::nn {

Module& ModuleList::operator[](size_t index) const {
  if (index >= modules_.size()) fail(describe(), ": index ", index, " is out of range for ", modules_.size(), " modules");
  return *modules_[index];
}

void ModuleList::fail_wrong_type(size_t index) const {
  fail(describe(), ": module ", index, " is a ", modules_[index]->type_name(), ", not the type asked for");
}

Var Sequential::forward(const Var& input) {
  Var value = input;
  for (const std::shared_ptr<Module>& module : *this) value = (*module)(value);
  return value;
}

}  // namespace kiln::nn
