// The errors the VM hands back to its caller, at the caller's next sync (VirtualMachine::sync,
// sync_read, sync_write):
//  - kiln::OutOfMemory: an allocation failed even after the VM released finished work, drained
//    its streams and shrank its caching allocators. The VM stays usable.
//  - kiln::vm::InstructionFailed: an instruction threw. It names the instruction (kind, name,
//    number, stream) and keeps the original exception.
#pragma once

#include <cstddef>
#include <exception>
#include <string>

#include "kiln/error.h"

namespace kiln {

class OutOfMemory : public Error {
 public:
  OutOfMemory(const std::string& message, size_t requested_bytes)
      : Error(message), requested_bytes_(requested_bytes) {}
  size_t requested_bytes() const { return requested_bytes_; }

 private:
  size_t requested_bytes_;
};

namespace vm {

class InstructionFailed : public Error {
 public:
  // `instruction` describes it, e.g. "kernel 'relu' (instruction #12 on stream 'compute')".
  InstructionFailed(std::string instruction, const std::string& cause_message,
                    std::exception_ptr cause);
  const std::string& instruction() const { return instruction_; }
  const std::exception_ptr& cause() const { return cause_; }

 private:
  std::string instruction_;
  std::exception_ptr cause_;
};

// What the caller sees of `error`, thrown while running `instruction`: OutOfMemory and
// InstructionFailed pass through unchanged; anything else is wrapped in InstructionFailed.
std::exception_ptr attribute_failure(const std::string& instruction, std::exception_ptr error);

}  // namespace vm
}  // namespace kiln
