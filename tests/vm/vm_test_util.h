// Helpers shared by the VM tests: a gate with a timeout (so a broken VM fails a test instead of
// hanging it), a rendezvous, and reading/writing buffers of uint64 words from the host.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/vm/virtual_machine.h"

namespace kiln::vm::testing {

using namespace std::chrono_literals;

// Opened once; waiters give up after a timeout.
class Gate {
 public:
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  bool wait(std::chrono::milliseconds timeout = 10s) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return open_; });
  }
  bool is_open() {
    std::lock_guard<std::mutex> lock(mutex_);
    return open_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
};

// `parties` threads meet; arrive() answers whether all of them arrived within the timeout.
class Rendezvous {
 public:
  explicit Rendezvous(int parties) : parties_(parties) {}
  bool arrive(std::chrono::milliseconds timeout = 5s) {
    std::unique_lock<std::mutex> lock(mutex_);
    ++arrived_;
    changed_.notify_all();
    return changed_.wait_for(lock, timeout, [&] { return arrived_ >= parties_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int parties_;
  int arrived_ = 0;
};

inline std::vector<uint64_t> read_words(VirtualMachine& vm, const BufferPtr& buffer) {
  std::vector<uint64_t> words(buffer->nbytes() / sizeof(uint64_t));
  vm.sync_read(buffer, [&](const Storage& storage) {
    std::memcpy(words.data(), storage.data(), words.size() * sizeof(uint64_t));
  });
  return words;
}

inline uint64_t read_word(VirtualMachine& vm, const BufferPtr& buffer) {
  return read_words(vm, buffer).at(0);
}

inline void write_words(VirtualMachine& vm, const BufferPtr& buffer, const std::vector<uint64_t>& words) {
  vm.sync_write(buffer, [&](Storage& storage) {
    std::memcpy(storage.data(), words.data(), words.size() * sizeof(uint64_t));
  });
}

inline void write_word(VirtualMachine& vm, const BufferPtr& buffer, uint64_t value) {
  write_words(vm, buffer, {value});
}

// Options for tests: short spins (the test machine has 2 cores) and no watchdog noise.
inline VmOptions test_options(size_t streams = 2) {
  VmOptions options;
  options.streams.clear();
  for (size_t i = 0; i < streams; ++i) {
    std::string name = "s";
    name += std::to_string(i);
    options.streams.push_back(StreamSpec{name});
  }
  options.scheduler_spin = 20us;
  options.worker_spin = 10us;
  options.watchdog_timeout = 0ms;
  return options;
}

}  // namespace kiln::vm::testing
