// ErrorSink: where failed instructions leave their errors until the caller's next sync takes
// them. Keeps the first error and counts the rest (their instructions' dependents were skipped
// and their buffers carry their own errors, so sync_read still reports each precisely).
// Thread-safe; failures are rare, so a mutex is fine.
#pragma once

#include <cstdint>
#include <exception>
#include <mutex>

namespace kiln::vm {

class ErrorSink {
 public:
  void report(std::exception_ptr error);
  // The first error reported since the last take, or null; clears it.
  std::exception_ptr take();
  // Clears the held error if it is `error` (it was already thrown to a caller another way).
  void forget(const std::exception_ptr& error);
  // How many errors were reported while an earlier one was still held.
  uint64_t suppressed() const;

 private:
  mutable std::mutex mutex_;
  std::exception_ptr first_;
  uint64_t suppressed_ = 0;
};

}  // namespace kiln::vm
