// How the VM fails: kernel exceptions reach the caller's next sync naming the instruction and
// skip its dependents; out-of-memory recovers by releasing, draining and shrinking, or is
// reported as kiln::OutOfMemory; the watchdog reports stalls; misuse is a kiln::Error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>

#include "runtime/vm/errors.h"
#include "runtime/vm/virtual_machine.h"
#include "tests/vm/vm_test_util.h"

namespace kiln::vm {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testing::Gate;
using testing::read_word;
using testing::test_options;
using testing::write_word;

void store(CallContext& call, size_t output, uint64_t value) { call.output_data<uint64_t>(output)[0] = value; }

// Runs `body`, expecting it to throw E; answers the exception's message.
template <typename E, typename Body>
std::string message_of(Body&& body) {
  try {
    body();
  } catch (const E& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected an exception";
  return {};
}

class VmErrors : public ::testing::TestWithParam<bool> {  // single-thread mode, or threads
 protected:
  VmOptions options(size_t streams = 2) {
    VmOptions result = test_options(streams);
    result.single_thread = GetParam();
    return result;
  }
};

TEST_P(VmErrors, AKernelExceptionSkipsItsDependentsAndReachesTheNextSync) {
  VirtualMachine vm(options());
  auto x = vm.new_buffer(8, vm.stream(0));
  auto y = vm.new_buffer(8, vm.stream(1));
  auto z = vm.new_buffer(8, vm.stream(1));
  auto w = vm.new_buffer(8, vm.stream(0));
  std::atomic<int> dependents_run{0};
  vm.physical_run([&](InstructionsBuilder& b) {
    b.kernel(vm.stream(0), "explode", {}, {x}, [](CallContext&) { throw std::runtime_error("boom"); });
    b.kernel(vm.stream(1), "uses x", {x}, {y}, [&](CallContext&) { ++dependents_run; });
    b.kernel(vm.stream(1), "uses y", {y}, {z}, [&](CallContext&) { ++dependents_run; });
    b.kernel(vm.stream(0), "independent", {}, {w}, [](CallContext& call) { store(call, 0, 5); });
    b.release(x);  // released even though its writer failed
  });
  try {
    vm.sync();
    ADD_FAILURE() << "sync() did not rethrow the kernel's exception";
  } catch (const InstructionFailed& error) {
    EXPECT_THAT(error.what(), HasSubstr("kernel 'explode' (instruction #1 on stream 's0') failed: boom"));
    EXPECT_THAT(error.instruction(), HasSubstr("explode"));
    EXPECT_THROW(std::rethrow_exception(error.cause()), std::runtime_error);
  }
  EXPECT_EQ(dependents_run.load(), 0);
  EXPECT_NO_THROW(vm.sync());  // thrown once
  EXPECT_EQ(read_word(vm, w), 5u);
  // A buffer downstream of the failure carries the failing instruction's error.
  EXPECT_THAT(message_of<InstructionFailed>([&] { read_word(vm, z); }), HasSubstr("'explode'"));
  EXPECT_EQ(vm.stream(0).allocator().stats().in_use_bytes, 512u);  // w only: x was released
  // The VM stays usable; a failed buffer is usable again once released.
  vm.physical_run([&](InstructionsBuilder& b) {
    b.release(z);
    b.kernel(vm.stream(1), "rewrite z", {}, {z}, [](CallContext& call) { store(call, 0, 9); });
  });
  EXPECT_EQ(read_word(vm, z), 9u);
}

TEST_P(VmErrors, AFailureInsideAFusedGroupFailsOnlyItsDependents) {
  VirtualMachine vm(options(1));
  auto x = vm.new_buffer(8, vm.stream(0));
  auto y = vm.new_buffer(8, vm.stream(0));
  auto z = vm.new_buffer(8, vm.stream(0));
  vm.physical_run([&](InstructionsBuilder& b) {
    b.kernel(vm.stream(0), "x = 1", {}, {x}, [](CallContext& call) { store(call, 0, 1); });
    b.kernel(vm.stream(0), "fail y", {}, {y}, [](CallContext&) { throw std::logic_error("bad y"); });
    b.kernel(vm.stream(0), "x += 1", {x}, {x}, [](CallContext& call) {
      store(call, 0, call.input_data<uint64_t>(0)[0] + 1);
    });
    b.kernel(vm.stream(0), "z = y", {y}, {z}, [](CallContext& call) { store(call, 0, 77); });
  });
  EXPECT_THAT(message_of<InstructionFailed>([&] { vm.sync(); }), HasSubstr("kernel 'fail y'"));
  EXPECT_GE(vm.stats().fused_groups, 1u);
  EXPECT_EQ(read_word(vm, x), 2u);
  EXPECT_THAT(message_of<InstructionFailed>([&] { read_word(vm, z); }), HasSubstr("bad y"));
}

TEST_P(VmErrors, OutOfMemoryRecoversByDrainingAndShrinking) {
  VmOptions opts = options(1);
  opts.memory_limit = 1 << 20;
  VirtualMachine vm(opts);
  auto a = vm.new_buffer(600 << 10, vm.stream(0));
  auto b_buffer = vm.new_buffer(800 << 10, vm.stream(0));
  vm.physical_run([&](InstructionsBuilder& b) {
    b.kernel(vm.stream(0), "fill a", {}, {a}, [](CallContext& call) {
      std::this_thread::sleep_for(20ms);  // a is still held when b is prepared
      store(call, 0, 1);
    });
    b.release(a);
    b.kernel(vm.stream(0), "fill b", {}, {b_buffer}, [](CallContext& call) { store(call, 0, 2); });
  });
  EXPECT_NO_THROW(vm.sync());
  EXPECT_EQ(read_word(vm, b_buffer), 2u);
  EXPECT_EQ(vm.stats().memory_recoveries, 1u);
  EXPECT_GE(vm.stream(0).allocator().stats().chunks_returned, 1u);
}

TEST_P(VmErrors, ATrueOutOfMemoryIsReportedAndTheVmStaysUsable) {
  VmOptions opts = options(1);
  opts.memory_limit = 1 << 20;
  VirtualMachine vm(opts);
  auto big = vm.new_buffer(2 << 20, vm.stream(0));
  auto out = vm.new_buffer(8, vm.stream(0));
  std::atomic<int> reader_ran{0};
  vm.physical_run([&](InstructionsBuilder& b) {
    b.kernel(vm.stream(0), "fill big", {}, {big}, [](CallContext&) {});
    b.kernel(vm.stream(0), "read big", {big}, {out}, [&](CallContext&) { ++reader_ran; });
  });
  const std::string message = message_of<OutOfMemory>([&] { vm.sync(); });
  EXPECT_THAT(message, HasSubstr("out of memory: kernel 'fill big' (instruction #1 on stream 's0') "
                                 "needs 2097152 bytes"));
  EXPECT_THAT(message, HasSubstr("of the 1048576 bytes the device may use"));
  EXPECT_EQ(reader_ran.load(), 0);
  EXPECT_THROW(read_word(vm, out), OutOfMemory);  // out depends on the failed allocation
  // Smaller work still runs.
  auto small = vm.new_buffer(100 << 10, vm.stream(0));
  vm.physical_run([&](InstructionsBuilder& b) {
    b.kernel(vm.stream(0), "fill small", {}, {small}, [](CallContext& call) { store(call, 0, 3); });
  });
  EXPECT_EQ(read_word(vm, small), 3u);
}

TEST_P(VmErrors, ReadingABufferNothingWroteFailsNamingIt) {
  VirtualMachine vm(options(1));
  auto never_written = vm.new_buffer(64, vm.stream(0));
  auto out = vm.new_buffer(8, vm.stream(0));
  vm.physical_run([&](InstructionsBuilder& b) {
    b.kernel(vm.stream(0), "consume", {never_written}, {out}, [](CallContext&) {});
  });
  const std::string message = message_of<InstructionFailed>([&] { vm.sync(); });
  EXPECT_THAT(message, HasSubstr("kernel 'consume'"));
  EXPECT_THAT(message, HasSubstr(never_written->describe() + ", which holds no memory"));
}

TEST_P(VmErrors, AHostCallbackErrorReachesItsCaller) {
  VirtualMachine vm(options(1));
  auto x = vm.new_buffer(8, vm.stream(0));
  write_word(vm, x, 1);
  EXPECT_THAT(message_of<InstructionFailed>([&] {
                vm.sync_read(x, [](const Storage&) { throw std::runtime_error("host says no"); });
              }),
              HasSubstr("host callback"));
  EXPECT_NO_THROW(vm.sync());  // already thrown to the reader
  EXPECT_EQ(read_word(vm, x), 1u);
}

TEST_P(VmErrors, WaitingForTheVmFromInsideItIsRefused) {
  VirtualMachine vm(options(1));
  auto x = vm.new_buffer(8, vm.stream(0));
  vm.physical_run([&](InstructionsBuilder& b) {
    b.kernel(vm.stream(0), "sync inside", {}, {x}, [&](CallContext&) { vm.sync(); });
  });
  EXPECT_THAT(message_of<InstructionFailed>([&] { vm.sync(); }), HasSubstr("would deadlock"));
}

INSTANTIATE_TEST_SUITE_P(Modes, VmErrors, ::testing::Values(false, true),
                         [](const auto& test) { return test.param ? "SingleThread" : "Threads"; });

TEST(VmWatchdog, ReportsTheLivelyInstructionsWhenNothingProgresses) {
  VmOptions options = test_options(1);
  options.watchdog_timeout = 200ms;  // long enough for "stuck" to be running by then
  std::mutex mutex;
  std::vector<std::string> reports;
  options.on_stall = [&](const std::string& report) {
    std::lock_guard<std::mutex> lock(mutex);
    reports.push_back(report);
  };
  VirtualMachine vm(options);
  auto x = vm.new_buffer(8, vm.stream(0));
  Gate started, gate;
  vm.physical_run([&](InstructionsBuilder& b) {
    b.kernel(vm.stream(0), "stuck", {}, {x}, [&](CallContext&) {
      started.open();
      gate.wait();
    });
    b.barrier([] {});
  });
  ASSERT_TRUE(started.wait());
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!reports.empty()) break;
    }
    std::this_thread::sleep_for(10ms);
  }
  gate.open();
  vm.sync();
  std::lock_guard<std::mutex> lock(mutex);
  // Once per stall; a loaded machine may stall again later, so at least once.
  ASSERT_GE(reports.size(), 1u);
  EXPECT_THAT(reports[0], HasSubstr("no instruction was released for 200 ms"));
  EXPECT_THAT(reports[0], HasSubstr("kernel 'stuck' (instruction #1 on stream 's0'): running"));
  EXPECT_THAT(reports[0], HasSubstr("barrier (instruction #2 on stream 'host'): a barrier"));
  EXPECT_EQ(vm.stats().stall_reports, reports.size());
}

TEST(VmMisuse, ErrorsNameWhatIsWrong) {
  VmOptions cuda = test_options(1);
  cuda.streams[0].device = Device::cuda(0);
  EXPECT_THAT(message_of<Error>([&] { VirtualMachine vm(cuda); }),
              HasSubstr("stream 's0' is on cuda:0, but Kiln's CUDA backend does not exist yet"));

  VirtualMachine vm(test_options(2));
  EXPECT_THAT(message_of<Error>([&] { vm.stream("gpu"); }),
              HasSubstr("no stream named 'gpu'; its streams are 's0', 's1', 'host'"));

  VirtualMachine other(test_options(1));
  auto foreign = other.new_buffer(8, other.stream(0));
  EXPECT_THAT(message_of<Error>([&] {
                vm.physical_run([&](InstructionsBuilder& b) { b.release(foreign); });
              }),
              HasSubstr("belongs to another VM"));

  vm.shutdown();
  EXPECT_THAT(message_of<Error>([&] {
                vm.physical_run([&](InstructionsBuilder& b) { b.barrier([] {}); });
              }),
              HasSubstr("the VM is shut down"));
}

}  // namespace
}  // namespace kiln::vm
