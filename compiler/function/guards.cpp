// Guards of kiln::compile(fn): building, checking, describing (compiler/function/guards.h).
#include "compiler/function/guards.h"

#include <bit>
#include <limits>
#include <map>
#include <sstream>

#include "kiln/error.h"

namespace kiln::compiler {

namespace {

std::string device_text(int64_t type, int64_t index) {
  Device device{DeviceType(type), int(index)};
  return device.is_cpu() ? "cpu" : "cuda:" + std::to_string(device.index);
}

Guard make(Guard::Kind kind, uint32_t input, int32_t dim = 0, int64_t value = 0, int64_t other = 0) {
  Guard guard;
  guard.kind = kind;
  guard.input = input;
  guard.dim = dim;
  guard.value = value;
  guard.other = other;
  return guard;
}

}  // namespace

std::vector<Guard> make_guards(const std::vector<ir::TensorMeta>& types,
                               const std::map<std::string, std::pair<int64_t, int64_t>>& ranges,
                               const std::vector<double>& scalars, const nn::Module* module) {
  std::vector<Guard> guards;
  for (uint32_t i = 0; i < types.size(); ++i) {
    guards.push_back(make(Guard::Kind::rank, i, 0, types[i].rank()));
    guards.push_back(make(Guard::Kind::dtype, i, 0, int64_t(types[i].dtype)));
    guards.push_back(make(Guard::Kind::device, i, 0, int64_t(types[i].device.type), types[i].device.index));
  }
  std::map<std::string, std::pair<uint32_t, int32_t>> first_use;  // symbol -> (input, dim)
  for (uint32_t i = 0; i < types.size(); ++i) {
    for (int32_t d = 0; d < int32_t(types[i].rank()); ++d) {
      const ir::SymInt& size = types[i].shape[size_t(d)];
      if (size.is_constant()) {
        guards.push_back(make(Guard::Kind::size, i, d, size.constant()));
        continue;
      }
      KILN_CHECK(size.is_symbol(), "a placeholder dim of kiln::compile is a bare symbol: ", size.to_string());
      std::string symbol = size.to_string();
      auto [it, first] = first_use.emplace(symbol, std::make_pair(i, d));
      if (first) {
        auto range = ranges.find(symbol);
        int64_t min = range == ranges.end() ? 2 : range->second.first;
        int64_t max = range == ranges.end() ? std::numeric_limits<int64_t>::max() : range->second.second;
        guards.push_back(make(Guard::Kind::size_range, i, d, min, max));
        guards.back().symbol = symbol;
      } else {
        guards.push_back(make(Guard::Kind::size_equal, i, d, 0, it->second.first));
        guards.back().other_dim = it->second.second;
        guards.back().symbol = symbol;
      }
    }
  }
  for (uint32_t s = 0; s < scalars.size(); ++s) {
    guards.push_back(make(Guard::Kind::scalar, s));
    guards.back().scalar = scalars[s];
  }
  if (module != nullptr) {
    guards.push_back(make(Guard::Kind::training, 0, 0, module->is_training() ? 1 : 0));
    guards.back().module = module;
  }
  return guards;
}

int first_failing_guard(const std::vector<Guard>& guards, const std::vector<Tensor>& inputs,
                        const std::vector<double>& scalars) {
  for (size_t g = 0; g < guards.size(); ++g) {
    const Guard& guard = guards[g];
    bool pass = true;
    switch (guard.kind) {
      case Guard::Kind::rank: pass = inputs[guard.input].dim() == guard.value; break;
      case Guard::Kind::dtype: pass = int64_t(inputs[guard.input].dtype()) == guard.value; break;
      case Guard::Kind::device: {
        Device device = inputs[guard.input].device();
        pass = int64_t(device.type) == guard.value && device.index == guard.other;
        break;
      }
      case Guard::Kind::size: pass = inputs[guard.input].sizes()[size_t(guard.dim)] == guard.value; break;
      case Guard::Kind::size_range: {
        int64_t size = inputs[guard.input].sizes()[size_t(guard.dim)];
        pass = size >= guard.value && size <= guard.other;
        break;
      }
      case Guard::Kind::size_equal:
        pass = inputs[guard.input].sizes()[size_t(guard.dim)] ==
               inputs[size_t(guard.other)].sizes()[size_t(guard.other_dim)];
        break;
      case Guard::Kind::scalar:
        pass = guard.input < scalars.size() &&
               std::bit_cast<uint64_t>(scalars[guard.input]) == std::bit_cast<uint64_t>(guard.scalar);
        break;
      case Guard::Kind::training: pass = guard.module->is_training() == (guard.value != 0); break;
    }
    if (!pass) return int(g);
  }
  return -1;
}

std::string describe_guard(const Guard& guard, const std::vector<std::string>& names) {
  auto name = [&](size_t input) { return input < names.size() ? names[input] : "input " + std::to_string(input); };
  auto size = [&](size_t input, int64_t dim) { return name(input) + ".size(" + std::to_string(dim) + ")"; };
  switch (guard.kind) {
    case Guard::Kind::rank: return name(guard.input) + ".dim() == " + std::to_string(guard.value);
    case Guard::Kind::dtype: return name(guard.input) + ".dtype == " + std::string(dtype_name(DType(guard.value)));
    case Guard::Kind::device: return name(guard.input) + ".device == " + device_text(guard.value, guard.other);
    case Guard::Kind::size: return size(guard.input, guard.dim) + " == " + std::to_string(guard.value);
    case Guard::Kind::size_range: {
      std::string text = std::to_string(guard.value) + " <= " + size(guard.input, guard.dim);
      if (guard.other != std::numeric_limits<int64_t>::max()) text += " <= " + std::to_string(guard.other);
      return text + " (" + guard.symbol + ")";
    }
    case Guard::Kind::size_equal:
      return size(guard.input, guard.dim) + " == " + size(size_t(guard.other), guard.other_dim) + " (" + guard.symbol +
             ")";
    case Guard::Kind::scalar: return "scalar " + std::to_string(guard.input) + " == " + number_text(guard.scalar);
    case Guard::Kind::training: return std::string("training == ") + (guard.value != 0 ? "true" : "false");
  }
  return "?";
}

std::string describe_actual(const Guard& guard, const std::vector<Tensor>& inputs, const std::vector<double>& scalars) {
  const Tensor* input = guard.kind == Guard::Kind::scalar || guard.kind == Guard::Kind::training
                            ? nullptr
                            : &inputs.at(guard.input);
  switch (guard.kind) {
    case Guard::Kind::rank: return "it is " + std::to_string(input->dim());
    case Guard::Kind::dtype: return "it is " + std::string(dtype_name(input->dtype()));
    case Guard::Kind::device:
      return "it is " + device_text(int64_t(input->device().type), input->device().index);
    case Guard::Kind::size:
    case Guard::Kind::size_range: return "it is " + std::to_string(input->size(guard.dim));
    case Guard::Kind::size_equal:
      return "they are " + std::to_string(input->size(guard.dim)) + " and " +
             std::to_string(inputs.at(size_t(guard.other)).size(guard.other_dim));
    case Guard::Kind::scalar:
      return guard.input < scalars.size() ? "it is " + number_text(scalars[guard.input]) : "it is missing";
    case Guard::Kind::training: return std::string("it is ") + (guard.module->is_training() ? "true" : "false");
  }
  return "?";
}

std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace kiln::compiler
