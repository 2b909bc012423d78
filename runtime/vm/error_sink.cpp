// ErrorSink: first error wins; later ones are counted.
#include "runtime/vm/error_sink.h"

#include <utility>

namespace kiln::vm {

void ErrorSink::report(std::exception_ptr error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (first_ == nullptr) {
    first_ = std::move(error);
  } else {
    ++suppressed_;
  }
}

std::exception_ptr ErrorSink::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(first_, nullptr);
}

void ErrorSink::forget(const std::exception_ptr& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (first_ == error) first_ = nullptr;
}

uint64_t ErrorSink::suppressed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return suppressed_;
}

}  // namespace kiln::vm
