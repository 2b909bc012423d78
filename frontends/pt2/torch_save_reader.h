// Reading a file written by torch.save (the zip format of PyTorch 1.6 and later): the pickled
// object in <root>/data.pkl and each tensor storage in <root>/data/<key>. A .pt2 archive keeps
// its sample inputs this way (data/sample_inputs/<model>.pt: the tuple (args, kwargs)), and
// tensor-subclass weights too. The unpickler is restricted to what such files hold: None,
// bools, ints, floats, strings, tuples, lists, dicts (and OrderedDict), and tensors
// (torch._utils._rebuild_tensor_v2 / _rebuild_parameter over typed storages); any other
// object is a kiln::Error naming it, never executed. Storages are read once and shared by the
// tensors that view them; each tensor is returned contiguous.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::frontends {

struct TorchDictEntry;

struct TorchValue {
  // global: a class or function the pickle names (module.name in `string`); the reader
  // resolves every one it accepts, so none is left in a returned value.
  enum class Kind { none, boolean, integer, floating, string, tuple, list, dict, tensor, global };
  Kind kind = Kind::none;
  bool boolean = false;
  int64_t integer = 0;
  double floating = 0;
  std::string string;
  std::vector<TorchValue> items;                            // tuple, list
  std::vector<TorchDictEntry> entries;  // dict, in insertion order
  Tensor tensor;

  // The leaves in the order of torch.utils._pytree's flattening: tuple, list and dict children
  // in order (dict values in insertion order), None contributing nothing.
  void flatten_into(std::vector<const TorchValue*>& leaves) const;
  std::string kind_name() const;  // "tensor", "int", ...
};

// A dict's key and value (a struct, not a std::pair, which needs a complete TorchValue).
struct TorchDictEntry {
  TorchValue key;
  TorchValue value;
};

// `label` names the file in messages ("'m.pt2': data/sample_inputs/model.pt").
TorchValue read_torch_save(std::string bytes, const std::string& label);

}  // namespace kiln::frontends
