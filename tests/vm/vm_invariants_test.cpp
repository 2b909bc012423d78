// One test per ordering invariant of the VM: read after write, write after read, write after
// write, readers together, release after the last reader, barrier after everything earlier,
// fusion and prescheduling, events, graph runs, and host reads that wait for writers only.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <thread>

#include "runtime/vm/virtual_machine.h"
#include "tests/vm/vm_test_util.h"

namespace kiln::vm {
namespace {

using namespace std::chrono_literals;
using testing::Gate;
using testing::read_word;
using testing::Rendezvous;
using testing::test_options;
using testing::write_word;

void store(CallContext& call, size_t output, uint64_t value) { call.output_data<uint64_t>(output)[0] = value; }
uint64_t load(CallContext& call, size_t input) { return call.input_data<uint64_t>(input)[0]; }

TEST(VmInvariants, ReadAfterWriteSeesTheWrite) {
  VirtualMachine vm(test_options(2));
  auto x = vm.new_buffer(8, vm.stream(0));
  auto y = vm.new_buffer(8, vm.stream(1));
  std::atomic<int> writes_done{0};
  int writes_seen_by_reader = -1;
  vm.physical_run([&](InstructionsBuilder& b) {
    b.kernel(vm.stream(0), "write", {}, {x}, [&](CallContext& call) {
      std::this_thread::sleep_for(30ms);
      store(call, 0, 42);
      writes_done = 1;
    });
    b.kernel(vm.stream(1), "read", {x}, {y}, [&](CallContext& call) {
      writes_seen_by_reader = writes_done.load();
      store(call, 0, load(call, 0) + 1);
    });
  });
  EXPECT_EQ(read_word(vm, y), 43u);
  EXPECT_EQ(writes_seen_by_reader, 1);
}

TEST(VmInvariants, WriteAfterReadWaitsForTheReader) {
  VirtualMachine vm(test_options(2));
  auto x = vm.new_buffer(8, vm.stream(0));
  auto y = vm.new_buffer(8, vm.stream(0));
  write_word(vm, x, 7);
  vm.physical_run([&](InstructionsBuilder& b) {
    b.kernel(vm.stream(0), "slow read", {x}, {y}, [&](CallContext& call) {
      std::this_thread::sleep_for(30ms);
      store(call, 0, load(call, 0));
    });
    b.kernel(vm.stream(1), "overwrite", {}, {x}, [&](CallContext& call) { store(call, 0, 99); });
  });
  EXPECT_EQ(read_word(vm, y), 7u);
  EXPECT_EQ(read_word(vm, x), 99u);
}

TEST(VmInvariants, WriteAfterWriteKeepsSubmissionOrder) {
  VirtualMachine vm(test_options(2));
  auto x = vm.new_buffer(8, vm.stream(0));
  vm.physical_run([&](InstructionsBuilder& b) {
    b.kernel(vm.stream(0), "first", {}, {x}, [&](CallContext& call) {
      std::this_thread::sleep_for(30ms);
      store(call, 0, 1);
    });
    b.kernel(vm.stream(1), "second", {}, {x}, [&](CallContext& call) { store(call, 0, 2); });
  });
  EXPECT_EQ(read_word(vm, x), 2u);
}

TEST(VmInvariants, ReadersOnDifferentStreamsRunTogether) {
  VirtualMachine vm(test_options(2));
  auto x = vm.new_buffer(8, vm.stream(0));
  write_word(vm, x, 5);
  Rendezvous both_inside(2);  // each reader waits inside its kernel for the other
  std::atomic<int> met{0};
  vm.physical_run([&](InstructionsBuilder& b) {
    for (size_t s = 0; s < 2; ++s) {
      b.kernel(vm.stream(s), "reader", {x}, {}, [&](CallContext& call) {
        if (load(call, 0) == 5 && both_inside.arrive()) ++met;
      });
    }
  });
  vm.sync();
  EXPECT_EQ(met.load(), 2);
}

TEST(VmInvariants, ReleaseWaitsForTheLastReader) {
  VmOptions options = test_options(3);
  options.allocator.poison_byte = 0xEE;  // freed memory reads as 0xEE
  VirtualMachine vm(options);
  auto x = vm.new_buffer(4096, vm.stream(0));
  vm.sync_write(x, [](Storage& storage) { std::memset(storage.data(), 0x11, storage.nbytes()); });
  std::atomic<int> intact_reads{0};
  auto check = [&](CallContext& call) {
    std::this_thread::sleep_for(20ms);
    const auto* bytes = call.input_data<unsigned char>(0);
    bool intact = true;
    for (size_t i = 0; i < 4096; ++i) intact = intact && bytes[i] == 0x11;
    if (intact) ++intact_reads;
  };
  auto z = vm.new_buffer(4096, vm.stream(0));
  auto other = vm.new_buffer(8, vm.stream(2));
  vm.physical_run([&](InstructionsBuilder& b) {
    // Reader 1 also reads `other`, written by a slow kernel on another stream: it is not even
    // dispatched (nor holding x's memory) until that kernel is done.
    b.kernel(vm.stream(2), "busy", {}, {other}, [](CallContext&) { std::this_thread::sleep_for(20ms); });
    b.kernel(vm.stream(1), "reader 1", {x, other}, {}, check);
    b.kernel(vm.stream(2), "reader 2", {x}, {}, check);
    b.release(x);  // on x's home stream 0
    // Allocates on x's stream after the release; must not overtake it either.
    b.kernel(vm.stream(0), "reuse", {}, {z}, [](CallContext& call) {
      std::memset(call.output(0).data(), 0x22, 4096);
    });
  });
  vm.sync();
  EXPECT_EQ(intact_reads.load(), 2);
  EXPECT_EQ(vm.stream(0).allocator().stats().in_use_bytes, 4096u);  // z only
}

TEST(VmInvariants, BarrierRunsAfterEverythingSubmittedBeforeIt) {
  VirtualMachine vm(test_options(3));
  std::atomic<int> finished{0};
  int finished_at_barrier = -1;
  constexpr int kKernels = 60;
  vm.physical_run([&](InstructionsBuilder& b) {
    for (int i = 0; i < kKernels; ++i) {
      auto buffer = vm.new_buffer(8, vm.stream(size_t(i % 3)));
      b.kernel(vm.stream(size_t(i % 3)), "work", {}, {buffer}, [&, i](CallContext&) {
        std::this_thread::sleep_for(std::chrono::microseconds(100 * (i % 7)));
        ++finished;
      });
    }
    b.barrier([&] { finished_at_barrier = finished.load(); });
  });
  vm.sync();
  EXPECT_EQ(finished_at_barrier, kKernels);
}

TEST(VmInvariants, SameStreamSuccessorsArePrescheduled) {
  VmOptions options = test_options(1);
  options.single_thread = true;  // deterministic counts
  options.max_fused_kernels = 1;
  VirtualMachine vm(options);
  auto x = vm.new_buffer(8, vm.stream(0));
  vm.physical_run([&](InstructionsBuilder& b) {
    for (int i = 0; i < 100; ++i) {
      b.kernel(vm.stream(0), "increment", {}, {x}, [i](CallContext& call) {
        uint64_t* value = call.output_data<uint64_t>(0);
        *value = i == 0 ? 1 : *value + 1;
      });
    }
  });
  EXPECT_EQ(read_word(vm, x), 100u);
  // Submitted together, each of the 99 followers waited on one edge (stream order and x lead
  // to the same predecessor), satisfied when its predecessor was dispatched.
  EXPECT_EQ(vm.stats().prescheduled, 99u);
  EXPECT_EQ(vm.stats().fused_groups, 0u);
}

TEST(VmInvariants, EdgesFromDispatchedSameStreamWorkAreNeverMade) {
  VirtualMachine vm(test_options(1));
  auto x = vm.new_buffer(8, vm.stream(0));
  Gate started, gate;
  vm.physical_run([&](InstructionsBuilder& b) {
    b.kernel(vm.stream(0), "held", {}, {x}, [&](CallContext& call) {
      started.open();
      gate.wait();
      store(call, 0, 3);
    });
  });
  ASSERT_TRUE(started.wait());  // "held" is dispatched and running
  vm.physical_run([&](InstructionsBuilder& b) {
    b.kernel(vm.stream(0), "after", {x}, {x}, [&](CallContext& call) { store(call, 0, load(call, 0) * 2); });
  });
  std::this_thread::sleep_for(20ms);
  gate.open();
  EXPECT_EQ(read_word(vm, x), 6u);
  EXPECT_GE(vm.stats().fifo_edges_skipped, 1u);
}

// Runs a fixed program of dependent kernels; answers the final values.
std::vector<uint64_t> run_chain_program(size_t max_fused, VmStats* stats) {
  VmOptions options = test_options(2);
  options.max_fused_kernels = max_fused;
  VirtualMachine vm(options);
  std::vector<BufferPtr> buffers;
  for (int i = 0; i < 6; ++i) buffers.push_back(vm.new_buffer(8, vm.stream(size_t(i % 2))));
  for (int i = 0; i < 6; ++i) write_word(vm, buffers[size_t(i)], uint64_t(i + 1));
  vm.physical_run([&](InstructionsBuilder& b) {
    for (int step = 0; step < 300; ++step) {
      const auto& in = buffers[size_t(step * 7 % 6)];
      const auto& out = buffers[size_t((step * 5 + 1) % 6)];
      Stream& stream = vm.stream(size_t(step / 25 % 2));  // runs of 25 on one stream
      b.kernel(stream, "mix", {in}, {out}, [step](CallContext& call) {
        uint64_t* value = call.output_data<uint64_t>(0);
        *value = *value * 31 + call.input_data<uint64_t>(0)[0] + uint64_t(step);
      });
    }
  });
  std::vector<uint64_t> values;
  for (const auto& buffer : buffers) values.push_back(read_word(vm, buffer));
  *stats = vm.stats();
  return values;
}

TEST(VmInvariants, FusionIsInvisibleToResults) {
  VmStats unfused_stats, fused_stats;
  const std::vector<uint64_t> unfused = run_chain_program(1, &unfused_stats);
  const std::vector<uint64_t> fused = run_chain_program(10, &fused_stats);
  // The same program, sequentially.
  std::vector<uint64_t> expected = {1, 2, 3, 4, 5, 6};
  for (int step = 0; step < 300; ++step) {
    const uint64_t in = expected[size_t(step * 7 % 6)];
    uint64_t& out = expected[size_t((step * 5 + 1) % 6)];
    out = out * 31 + in + uint64_t(step);
  }
  EXPECT_EQ(unfused, expected);
  EXPECT_EQ(fused, expected);
  EXPECT_EQ(unfused_stats.fused_groups, 0u);
  EXPECT_GT(fused_stats.fused_groups, 0u);
  EXPECT_LE(fused_stats.fused_kernels, 10 * fused_stats.fused_groups);
}

TEST(VmInvariants, WaitEventOrdersAStreamAfterARecord) {
  VirtualMachine vm(test_options(2));
  auto event = vm.new_event();
  std::atomic<int> produced{0};
  int seen = -1;
  auto a = vm.new_buffer(8, vm.stream(0));
  auto b_buffer = vm.new_buffer(8, vm.stream(1));
  vm.physical_run([&](InstructionsBuilder& b) {
    b.kernel(vm.stream(0), "produce", {}, {a}, [&](CallContext&) {
      std::this_thread::sleep_for(30ms);
      produced = 1;
    });
    b.record_event(vm.stream(0), event);
    b.wait_event(vm.stream(1), event);
    b.kernel(vm.stream(1), "consume", {}, {b_buffer}, [&](CallContext&) { seen = produced.load(); });
  });
  vm.sync();
  EXPECT_EQ(seen, 1);
  EXPECT_EQ(event->completed_records(), 1u);
}

TEST(VmInvariants, AGraphRunIsOrderedByItsInputsOutputsAndParameters) {
  VirtualMachine vm(test_options(2));
  auto x = vm.new_buffer(8, vm.stream(0));
  auto y = vm.new_buffer(8, vm.stream(0));
  auto parameter = vm.new_buffer(8, vm.stream(0));
  auto z = vm.new_buffer(8, vm.stream(1));
  write_word(vm, x, 10);
  write_word(vm, parameter, 100);
  vm.physical_run([&](InstructionsBuilder& b) {
    b.run_graph(vm.stream(0), "step", {x}, {y}, {parameter}, [](CallContext& call) {
      std::this_thread::sleep_for(20ms);
      uint64_t* p = call.parameter_tensor(0, {1}, DType::i64).data<uint64_t>();
      *p += call.input_data<uint64_t>(0)[0];  // the graph updates its parameter
      call.output_data<uint64_t>(0)[0] = *p * 2;
    });
    b.kernel(vm.stream(1), "read parameter", {parameter}, {z}, [](CallContext& call) {
      call.output_data<uint64_t>(0)[0] = call.input_data<uint64_t>(0)[0] + 1;
    });
  });
  EXPECT_EQ(read_word(vm, y), 220u);
  EXPECT_EQ(read_word(vm, z), 111u);
}

TEST(VmInvariants, HostReadWaitsForTheBuffersWritersOnly) {
  VmOptions options = test_options(1);
  options.max_fused_kernels = 1;  // fused, the two kernels would be one writer of x
  VirtualMachine vm(options);
  auto x = vm.new_buffer(8, vm.stream(0));
  auto unrelated = vm.new_buffer(8, vm.stream(0));
  Gate gate;
  vm.physical_run([&](InstructionsBuilder& b) {
    b.kernel(vm.stream(0), "write x", {}, {x}, [](CallContext& call) { store(call, 0, 8); });
    b.kernel(vm.stream(0), "blocked", {}, {unrelated}, [&](CallContext&) { gate.wait(); });
  });
  EXPECT_EQ(read_word(vm, x), 8u);  // returns while "blocked" still runs on the same stream
  EXPECT_FALSE(gate.is_open());
  gate.open();
  vm.sync();
}

TEST(VmInvariants, AllocateAndReleaseUseTheHomeStreamsAllocator) {
  VirtualMachine vm(test_options(2));
  auto x = vm.new_buffer(3000, vm.stream(1));  // rounded up to 3072
  vm.physical_run([&](InstructionsBuilder& b) { b.allocate(x); });
  vm.sync();
  EXPECT_EQ(vm.stream(1).allocator().stats().in_use_bytes, 3072u);
  EXPECT_EQ(vm.stream(0).allocator().stats().in_use_bytes, 0u);
  // An allocated buffer is written and read like any other.
  auto y = vm.new_buffer(8, vm.stream(0));
  vm.physical_run([&](InstructionsBuilder& b) {
    b.kernel(vm.stream(0), "write into allocated", {}, {x}, [](CallContext& call) { store(call, 0, 4); });
    b.kernel(vm.stream(0), "copy", {x}, {y}, [](CallContext& call) { store(call, 0, load(call, 0)); });
    b.release(x);
  });
  EXPECT_EQ(read_word(vm, y), 4u);
  vm.sync();
  EXPECT_EQ(vm.stream(1).allocator().stats().in_use_bytes, 0u);
}

TEST(VmInvariants, KernelsSeeBuffersAsTensors) {
  VirtualMachine vm(test_options(1));
  auto x = vm.new_buffer(6 * sizeof(float), vm.stream(0));
  auto y = vm.new_buffer(6 * sizeof(float), vm.stream(0));
  vm.physical_run([&](InstructionsBuilder& b) {
    b.kernel(vm.stream(0), "fill", {}, {x}, [](CallContext& call) {
      Tensor t = call.output_tensor(0, {2, 3}, DType::f32);
      for (int64_t i = 0; i < 6; ++i) t.data<float>()[i] = float(i) - 2.5f;
    });
    b.kernel(vm.stream(0), "relu", {x}, {y}, [](CallContext& call) {  // as an interpreter kernel would
      Tensor in = call.input_tensor(0, {2, 3}, DType::f32);
      Tensor out = call.output_tensor(0, {2, 3}, DType::f32);
      for (int64_t i = 0; i < 6; ++i) {
        const std::array<int64_t, 2> index = {i / 3, i % 3};
        out.set_double(index, std::max(0.0, in.flat_double(i)));
      }
    });
  });
  std::vector<float> values(6);
  vm.sync_read(y, [&](const Storage& storage) { std::memcpy(values.data(), storage.data(), 24); });
  EXPECT_EQ(values, (std::vector<float>{0, 0, 0, 0.5f, 1.5f, 2.5f}));
}

}  // namespace
}  // namespace kiln::vm
