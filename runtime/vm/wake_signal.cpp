// WakeSignal: spin, then sleep, without losing a wake-up.
//
// No lost wake-up: a sleeper increments sleepers_ and then reads count_; a notifier increments
// count_ and then reads sleepers_ (all sequentially consistent). Either the sleeper sees the new
// count and does not sleep, or the notifier sees the sleeper and notifies under the mutex the
// sleeper holds until it is waiting.
#include "runtime/vm/wake_signal.h"

namespace kiln::vm {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

thread_local bool t_on_vm_thread = false;

}  // namespace

void WakeSignal::notify() {
  count_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    wakeup_.notify_all();
  }
}

void WakeSignal::wait(uint64_t seen, std::chrono::nanoseconds spin,
                      std::chrono::nanoseconds timeout) {
  using Clock = std::chrono::steady_clock;
  if (count() != seen) return;
  if (spin.count() > 0) {
    const auto spin_until = Clock::now() + spin;
    do {
      for (int i = 0; i < 64; ++i) {
        if (count() != seen) return;
        cpu_relax();
      }
    } while (Clock::now() < spin_until);
  }
  std::unique_lock<std::mutex> lock(mutex_);
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  wakeup_.wait_for(lock, timeout,
                   [&] { return count_.load(std::memory_order_seq_cst) != seen; });
  sleepers_.fetch_sub(1, std::memory_order_seq_cst);
}

bool on_vm_thread() { return t_on_vm_thread; }
void set_on_vm_thread(bool value) { t_on_vm_thread = value; }

}  // namespace kiln::vm
