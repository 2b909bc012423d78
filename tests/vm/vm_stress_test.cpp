// Random programs through the VM, checked against running the same program sequentially:
// 100k instructions over random read/write sets on several streams (with allocation, release,
// host reads, events and barriers mixed in); single-thread and threaded modes giving identical
// results; several threads submitting at once; backpressure; shutdown with work pending.
//
// Every kernel folds the words of everything it reads and writes into a hash and rewrites what
// it writes from that hash, so any reordering the dependence rules forbid changes the result.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "runtime/vm/virtual_machine.h"
#include "tests/vm/vm_test_util.h"

namespace kiln::vm {
namespace {

using namespace std::chrono_literals;
using testing::read_words;
using testing::test_options;

constexpr size_t kWords = 4;
using Words = std::array<uint64_t, kWords>;

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct Op {
  enum Kind { update, init, release, check, record, wait, barrier } kind;
  size_t stream = 0;
  std::vector<size_t> reads, writes;  // buffer indices; `init` writes without reading
  uint64_t seed = 0;
  size_t slot = 0;  // check: where the host read lands; record/wait: the event
};

struct Program {
  size_t buffers = 0, streams = 0, events = 0, checks = 0;
  std::vector<Op> ops;
};

// The kernel both the VM and the reference run. `reads` and `writes` point at the words of
// each buffer (a buffer in both lists is one memory).
void apply(const Op& op, const std::vector<const uint64_t*>& reads, const std::vector<uint64_t*>& writes) {
  if (op.kind == Op::init) {
    for (uint64_t* words : writes) {
      for (size_t w = 0; w < kWords; ++w) words[w] = mix(op.seed + w);
    }
    return;
  }
  uint64_t hash = op.seed;
  for (const uint64_t* words : reads) {
    for (size_t w = 0; w < kWords; ++w) hash = mix(hash ^ words[w]);
  }
  for (const uint64_t* words : writes) {
    for (size_t w = 0; w < kWords; ++w) hash = mix(hash ^ words[w]);
  }
  for (uint64_t* words : writes) {
    for (size_t w = 0; w < kWords; ++w) words[w] = mix(hash + w * 0x100000001B3ull + words[w]);
  }
}

std::vector<size_t> pick(std::mt19937_64& rng, const std::vector<size_t>& from, size_t count) {
  std::vector<size_t> chosen;
  for (size_t tries = 0; chosen.size() < count && tries < 4 * count + 4; ++tries) {
    const size_t candidate = from[rng() % from.size()];
    if (std::find(chosen.begin(), chosen.end(), candidate) == chosen.end()) chosen.push_back(candidate);
  }
  return chosen;
}

// A random program: every buffer is first initialised; released buffers are only initialised
// again before any other use.
Program make_program(uint64_t seed, size_t ops, size_t buffers, size_t streams) {
  std::mt19937_64 rng(seed);
  Program program;
  program.buffers = buffers;
  program.streams = streams;
  program.events = 4;
  std::vector<bool> live(buffers, true);
  for (size_t b = 0; b < buffers; ++b) {
    program.ops.push_back(Op{Op::init, b % streams, {}, {b}, rng(), 0});
  }
  size_t stream = 0;
  while (program.ops.size() < ops) {
    if (rng() % 10 < 3) stream = rng() % streams;  // runs on one stream, so fusion happens
    std::vector<size_t> alive, dead;
    for (size_t b = 0; b < buffers; ++b) (live[b] ? alive : dead).push_back(b);
    const uint64_t roll = rng() % 1000;
    Op op{Op::update, stream, {}, {}, rng(), 0};
    if (roll < 20 && alive.size() > 2) {
      op.kind = Op::release;
      op.writes = {alive[rng() % alive.size()]};
      live[op.writes[0]] = false;
    } else if (roll < 60 && !dead.empty()) {
      op.kind = Op::init;
      op.writes = {dead[rng() % dead.size()]};
      live[op.writes[0]] = true;
    } else if (roll < 80) {
      op.kind = Op::check;
      op.reads = {alive[rng() % alive.size()]};
      op.slot = program.checks++;
    } else if (roll < 95) {
      op.kind = rng() % 2 ? Op::record : Op::wait;
      op.slot = rng() % program.events;
    } else if (roll < 97) {
      op.kind = Op::barrier;
    } else {
      op.reads = pick(rng, alive, rng() % 4);
      op.writes = pick(rng, alive, 1 + rng() % 2);
      if (rng() % 8 == 0 && !op.writes.empty()) op.reads.push_back(op.writes[0]);  // in place
    }
    program.ops.push_back(std::move(op));
  }
  return program;
}

struct Outcome {
  std::vector<Words> finals;  // of the live buffers; dead ones stay zero
  std::vector<Words> checks;
  friend bool operator==(const Outcome&, const Outcome&) = default;
};

Outcome run_sequentially(const Program& program) {
  std::vector<Words> memory(program.buffers, Words{});
  std::vector<bool> live(program.buffers, true);
  Outcome outcome;
  outcome.checks.resize(program.checks);
  for (const Op& op : program.ops) {
    switch (op.kind) {
      case Op::update:
      case Op::init: {
        std::vector<const uint64_t*> reads;
        std::vector<uint64_t*> writes;
        for (size_t b : op.reads) reads.push_back(memory[b].data());
        for (size_t b : op.writes) writes.push_back(memory[b].data());
        apply(op, reads, writes);
        for (size_t b : op.writes) live[b] = true;
        break;
      }
      case Op::release:
        live[op.writes[0]] = false;
        memory[op.writes[0]] = Words{};
        break;
      case Op::check: outcome.checks[op.slot] = memory[op.reads[0]]; break;
      default: break;
    }
  }
  for (size_t b = 0; b < program.buffers; ++b) outcome.finals.push_back(live[b] ? memory[b] : Words{});
  return outcome;
}

// Builds `program.ops[begin, end)` into `builder`.
void build_ops(InstructionsBuilder& builder, const Program& program, size_t begin, size_t end,
               const std::vector<BufferPtr>& buffers, const std::vector<EventPtr>& events,
               std::vector<Words>& checks) {
  VirtualMachine& vm = builder.vm();
  for (size_t i = begin; i < end; ++i) {
    const Op& op = program.ops[i];
    Stream& stream = vm.stream(op.stream);
    switch (op.kind) {
      case Op::update:
      case Op::init: {
        std::vector<BufferPtr> reads, writes;
        for (size_t b : op.reads) reads.push_back(buffers[b]);
        for (size_t b : op.writes) writes.push_back(buffers[b]);
        builder.kernel(stream, op.kind == Op::init ? "init" : "update", reads, writes,
                       [&op](CallContext& call) {
                         std::vector<const uint64_t*> in;
                         std::vector<uint64_t*> out;
                         for (size_t k = 0; k < call.num_inputs(); ++k) in.push_back(call.input_data<uint64_t>(k));
                         for (size_t k = 0; k < call.num_outputs(); ++k) out.push_back(call.output_data<uint64_t>(k));
                         apply(op, in, out);
                       });
        break;
      }
      case Op::release: builder.release(buffers[op.writes[0]]); break;
      case Op::check:
        builder.host_callback(buffers[op.reads[0]], AccessKind::read, [&checks, &op](Storage& storage) {
          std::memcpy(checks[op.slot].data(), storage.data(), sizeof(Words));
        });
        break;
      case Op::record: builder.record_event(stream, events[op.slot]); break;
      case Op::wait: builder.wait_event(stream, events[op.slot]); break;
      case Op::barrier: builder.barrier([] {}); break;
    }
  }
}

Outcome run_on_vm(const Program& program, VmOptions options, uint64_t batch_seed, VmStats* stats = nullptr) {
  VirtualMachine vm(std::move(options));
  std::vector<BufferPtr> buffers;
  for (size_t b = 0; b < program.buffers; ++b) {
    buffers.push_back(vm.new_buffer(sizeof(Words), vm.stream(b % program.streams)));
  }
  std::vector<EventPtr> events;
  for (size_t e = 0; e < program.events; ++e) events.push_back(vm.new_event());
  Outcome outcome;
  outcome.checks.resize(program.checks);
  std::mt19937_64 rng(batch_seed);
  for (size_t begin = 0; begin < program.ops.size();) {
    const size_t end = std::min(program.ops.size(), begin + 1 + rng() % 64);
    vm.physical_run([&](InstructionsBuilder& b) { build_ops(b, program, begin, end, buffers, events, outcome.checks); });
    begin = end;
  }
  vm.sync();
  // Which buffers are live at the end, from the program itself.
  std::vector<bool> live(program.buffers, true);
  for (const Op& op : program.ops) {
    if (op.kind == Op::release) live[op.writes[0]] = false;
    if (op.kind == Op::init) live[op.writes[0]] = true;
  }
  for (size_t b = 0; b < program.buffers; ++b) {
    Words words{};
    if (live[b]) {
      const std::vector<uint64_t> read = read_words(vm, buffers[b]);
      std::copy(read.begin(), read.end(), words.begin());
    }
    outcome.finals.push_back(words);
  }
  vm.sync();  // after the host reads too, so every instruction is released and counted
  if (stats != nullptr) *stats = vm.stats();
  return outcome;
}

TEST(VmStress, RandomProgramOf100kInstructionsMatchesSequentialExecution) {
  const Program program = make_program(/*seed=*/1234, /*ops=*/100'000, /*buffers=*/48, /*streams=*/4);
  const Outcome expected = run_sequentially(program);
  VmStats stats;
  const Outcome actual = run_on_vm(program, test_options(4), /*batch_seed=*/99, &stats);
  EXPECT_EQ(actual.checks.size(), program.checks);
  EXPECT_TRUE(actual.checks == expected.checks) << "a host read saw a value sequential execution did not";
  EXPECT_TRUE(actual.finals == expected.finals) << "final buffer contents differ from sequential execution";
  EXPECT_EQ(stats.released, stats.submitted);
  EXPECT_GT(stats.fused_groups, 0u);
  EXPECT_GT(stats.prescheduled + stats.fifo_edges_skipped, 0u);
}

TEST(VmStress, SingleThreadAndThreadedModesGiveIdenticalResults) {
  const Program program = make_program(/*seed=*/77, /*ops=*/15'000, /*buffers=*/24, /*streams=*/3);
  VmOptions single = test_options(3);
  single.single_thread = true;
  VmOptions grouped = test_options(3);  // streams 1 and 2 share a worker thread
  grouped.streams[1].worker_group = 7;
  grouped.streams[2].worker_group = 7;
  const Outcome one = run_on_vm(program, single, 5);
  const Outcome other = run_on_vm(program, single, 6);  // other batch boundaries, same result
  const Outcome threaded = run_on_vm(program, test_options(3), 5);
  const Outcome grouped_run = run_on_vm(program, grouped, 5);
  EXPECT_TRUE(one == other);
  EXPECT_TRUE(one == threaded);
  EXPECT_TRUE(one == grouped_run);
  EXPECT_TRUE(one == run_sequentially(program));
}

TEST(VmStress, SeveralThreadsSubmittingAtOnce) {
  constexpr size_t kThreads = 4;
  VmOptions options = test_options(3);
  VirtualMachine vm(options);
  auto shared = vm.new_buffer(8, vm.stream(0));
  testing::write_word(vm, shared, 0);
  std::vector<Program> programs;
  for (size_t t = 0; t < kThreads; ++t) programs.push_back(make_program(100 + t, 4000, 12, 3));
  std::vector<Outcome> outcomes(kThreads);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const Program& program = programs[t];
      std::vector<BufferPtr> buffers;
      for (size_t b = 0; b < program.buffers; ++b) buffers.push_back(vm.new_buffer(sizeof(Words), vm.stream(b % 3)));
      std::vector<EventPtr> events;
      for (size_t e = 0; e < program.events; ++e) events.push_back(vm.new_event());
      outcomes[t].checks.resize(program.checks);
      for (size_t begin = 0; begin < program.ops.size(); begin += 32) {
        const size_t end = std::min(program.ops.size(), begin + 32);
        vm.physical_run([&](InstructionsBuilder& b) {
          build_ops(b, program, begin, end, buffers, events, outcomes[t].checks);
          // Everyone also adds to one shared counter: commutative, so the total is known.
          b.kernel(vm.stream(t % 3), "add", {}, {shared}, [](CallContext& call) { ++call.output_data<uint64_t>(0)[0]; });
        });
      }
      std::vector<bool> live(program.buffers, true);
      for (const Op& op : program.ops) {
        if (op.kind == Op::release) live[op.writes[0]] = false;
        if (op.kind == Op::init) live[op.writes[0]] = true;
      }
      for (size_t b = 0; b < program.buffers; ++b) {
        Words words{};
        if (live[b]) {
          const std::vector<uint64_t> read = read_words(vm, buffers[b]);
          std::copy(read.begin(), read.end(), words.begin());
        }
        outcomes[t].finals.push_back(words);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  vm.sync();
  for (size_t t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(outcomes[t] == run_sequentially(programs[t])) << "thread " << t;
  }
  EXPECT_EQ(testing::read_word(vm, shared), kThreads * (4000 / 32 + (4000 % 32 != 0)));
}

TEST(VmStress, BackpressureBoundsInstructionsInFlight) {
  VmOptions options = test_options(2);
  options.high_water = 64;
  options.low_water = 16;
  options.max_fused_kernels = 1;
  VirtualMachine vm(options);
  std::atomic<int> ran{0};
  uint64_t most_in_flight = 0;
  std::vector<BufferPtr> buffers = {vm.new_buffer(8, vm.stream(0)), vm.new_buffer(8, vm.stream(1))};
  for (int batch = 0; batch < 400; ++batch) {
    vm.physical_run([&](InstructionsBuilder& b) {
      for (int i = 0; i < 8; ++i) {
        b.kernel(vm.stream(size_t(i % 2)), "tick", {}, {buffers[size_t(i % 2)]}, [&](CallContext&) { ++ran; });
      }
    });
    most_in_flight = std::max(most_in_flight, vm.stats().in_flight);
  }
  vm.sync();
  EXPECT_EQ(ran.load(), 3200);
  EXPECT_LE(most_in_flight, 64u + 8u);  // blocked above high water before adding a batch
}

TEST(VmStress, ShutdownDrainsPendingWorkAndJoinsEveryThread) {
  std::atomic<int> ran{0};
  std::atomic<int> host_reads{0};
  {
    VirtualMachine vm(test_options(3));
    std::vector<BufferPtr> buffers;
    for (int i = 0; i < 6; ++i) buffers.push_back(vm.new_buffer(8, vm.stream(size_t(i % 3))));
    vm.physical_run([&](InstructionsBuilder& b) {
      for (const BufferPtr& buffer : buffers) {
        b.kernel(buffer->home_stream(), "zero", {}, {buffer}, [](CallContext& call) {
          call.output_data<uint64_t>(0)[0] = 0;
        });
      }
      for (int i = 0; i < 150; ++i) {
        b.kernel(vm.stream(size_t(i % 3)), "slow", {buffers[size_t(i % 6)]}, {buffers[size_t((i + 1) % 6)]},
                 [&](CallContext&) {
                   std::this_thread::sleep_for(200us);
                   ++ran;
                 });
      }
      b.host_callback(buffers[0], AccessKind::read, [&](Storage&) { ++host_reads; });
    });
    // Leaving the scope destroys the VM with nearly all of it still pending.
  }
  EXPECT_EQ(ran.load(), 150);
  EXPECT_EQ(host_reads.load(), 1);
}

}  // namespace
}  // namespace kiln::vm
