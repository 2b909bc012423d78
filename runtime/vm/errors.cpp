// Naming failed instructions in the errors the VM rethrows.
#include "runtime/vm/errors.h"

#include <utility>

namespace kiln::vm {

InstructionFailed::InstructionFailed(std::string instruction, const std::string& cause_message,
                                     std::exception_ptr cause)
    : Error(instruction + " failed: " + cause_message),
      instruction_(std::move(instruction)),
      cause_(std::move(cause)) {}

std::exception_ptr attribute_failure(const std::string& instruction, std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const OutOfMemory&) {
    return error;
  } catch (const InstructionFailed&) {
    return error;
  } catch (const std::exception& failure) {
    return std::make_exception_ptr(InstructionFailed(instruction, failure.what(), error));
  } catch (...) {
    return std::make_exception_ptr(
        InstructionFailed(instruction, "an exception that is not a std::exception", error));
  }
}

}  // namespace kiln::vm
