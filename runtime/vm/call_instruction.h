// Calls: a kernel call (one op's kernel, fusable with its neighbours on the same stream) and a
// compiled-graph run (one instruction for a whole graph, whose inner order was fixed at compile
// time: it reads its inputs and writes its outputs and its parameters, so eager work before and
// after it is ordered automatically, as OneFlow's LaunchLazyJob). Both run a callable on their
// stream's worker, handing it the memory of their buffers through a CallContext.
//
// Wrapping an interpreter kernel: capture the node's op, attributes and the shapes/dtypes of
// its values, then view the buffers as tensors in the callable:
//     [=](CallContext& call) {
//       Tensor x = call.input_tensor(0, x_sizes, DType::f32);
//       call.output_tensor(0, out_sizes, DType::f32).copy_from(kernel(x, attributes));
//     }
// (or let the kernel write straight into the output view).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/tensor.h"
#include "runtime/vm/instruction_policy.h"
#include "runtime/vm/small_vector.h"

namespace kiln::vm {

class CallInstruction;

class CallContext {
 public:
  CallContext(const CallInstruction& call, Stream& stream) : call_(call), stream_(stream) {}

  size_t num_inputs() const;
  size_t num_outputs() const;
  size_t num_parameters() const;

  // The memory of the i-th input / output / parameter (a buffer listed twice is one memory).
  Storage& input(size_t i) const { return *input_storage(i); }
  Storage& output(size_t i) const { return *output_storage(i); }
  Storage& parameter(size_t i) const { return *parameter_storage(i); }
  const std::shared_ptr<Storage>& input_storage(size_t i) const;
  const std::shared_ptr<Storage>& output_storage(size_t i) const;
  const std::shared_ptr<Storage>& parameter_storage(size_t i) const;

  template <typename T>
  const T* input_data(size_t i) const { return static_cast<const T*>(input(i).data()); }
  template <typename T>
  T* output_data(size_t i) const { return static_cast<T*>(output(i).data()); }

  // A contiguous tensor of `sizes` and `dtype` viewing the buffer's memory from its start.
  // Throws kiln::Error when the buffer is too small for it.
  Tensor input_tensor(size_t i, const Sizes& sizes, DType dtype) const;
  Tensor output_tensor(size_t i, const Sizes& sizes, DType dtype) const;
  Tensor parameter_tensor(size_t i, const Sizes& sizes, DType dtype) const;

  Stream& stream() const { return stream_; }

 private:
  const CallInstruction& call_;
  Stream& stream_;
};

using CallFn = std::function<void(CallContext&)>;

// The shared body of KernelCall and GraphRun.
class CallInstruction : public InstructionPolicy {
 public:
  enum class Role : uint8_t { input, output, parameter };

  const char* kind() const override { return kind_; }
  std::string name() const override { return name_; }
  size_t count(Role role) const;
  // The operand holding the i-th buffer of `role`.
  const Operand& operand_of(Role role, size_t i) const;

 protected:
  // Inputs are read; outputs and parameters are written (a graph may update its parameters).
  CallInstruction(const char* kind, std::string name, BufferList inputs, BufferList outputs,
                  BufferList parameters, CallFn fn);
  void compute(ExecuteContext& context) override;

 private:
  const char* kind_;
  std::string name_;
  CallFn fn_;
  SmallVector<uint32_t, 6> slots_;  // operand index of every input, then output, then parameter
  uint32_t counts_[3];
};

class KernelCall final : public CallInstruction {
 public:
  KernelCall(std::string name, BufferList inputs, BufferList outputs, CallFn fn)
      : CallInstruction("kernel", std::move(name), inputs, outputs, {}, std::move(fn)) {}
  bool fusable() const override { return true; }
};

class GraphRun final : public CallInstruction {
 public:
  GraphRun(std::string name, BufferList inputs, BufferList outputs, BufferList parameters,
           CallFn fn)
      : CallInstruction("graph", std::move(name), inputs, outputs, parameters, std::move(fn)) {}
};

}  // namespace kiln::vm
