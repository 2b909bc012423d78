// WakeSignal: how the VM's threads wake each other. Producers bump a counter; a consumer that
// saw the counter at some value waits until it changes, spinning for a while first (a thread
// wake-up costs microseconds; OneFlow's scheduler spins ~1 ms, its workers ~200 us) and then
// sleeping on a condition variable. Notifying a consumer that is spinning costs one atomic add.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace kiln::vm {

class WakeSignal {
 public:
  // The current count: read it before looking for work, then wait(seen) if there was none.
  uint64_t count() const { return count_.load(std::memory_order_acquire); }
  void notify();
  // Returns once count() != seen, or after `timeout`. Spins for `spin` before sleeping.
  void wait(uint64_t seen, std::chrono::nanoseconds spin,
            std::chrono::nanoseconds timeout = std::chrono::hours(24));

 private:
  std::atomic<uint64_t> count_{0};
  std::atomic<int> sleepers_{0};
  std::mutex mutex_;
  std::condition_variable wakeup_;
};

// Whether the calling thread is one of a VM's own threads (scheduler or worker): such a thread
// must not block waiting for the VM.
bool on_vm_thread();
void set_on_vm_thread(bool value);

}  // namespace kiln::vm
