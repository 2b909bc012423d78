// Thread safety of what a user may call from several threads at once: one kiln::compile(fn)
// callable called concurrently (first compile, recompiles and the switch to a dynamic dim racing;
// graph breaks, whose path guards and carried values are per call), and concurrent compiles into
// one compile cache (the same entry and different ones). Every result is checked against a
// direct computation. CI runs this suite under ThreadSanitizer (.ci/run, with the runtime and VM
// suites); in the other builds it runs as an ordinary suite. The generated modules themselves are
// not instrumented (the system compiler builds them at run time): what TSan checks here is
// Kiln's own code around them: guards, variant tables, the cache, the loaders, the logs.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "kiln/compile.h"
#include "kiln/error.h"
#include "tests/support/test_paths.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr int kThreads = 4;

fs::path test_cache(const std::string& name) { return fs::path(KILN_BINARY_DIR) / "thread-test-caches" / name; }

FunctionCompileOptions options_in(const fs::path& cache) {
  FunctionCompileOptions options;
  options.cache_dir = cache;
  return options;
}

double ramp_value(int64_t i, double scale) { return (double(i % 13) - 6) * scale; }

Tensor ramp(const Sizes& sizes, double scale) {
  std::vector<double> values(size_t(numel_of(sizes)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = ramp_value(int64_t(i), scale);
  return Tensor::from_doubles(sizes, values, DType::f32);
}

// Runs body(thread) on kThreads threads at once; counts the exceptions they throw.
int run_threads(const std::function<void(int)>& body) {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        body(t);
      } catch (const std::exception& error) {
        ADD_FAILURE() << "thread " << t << ": " << error.what();
        ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  return failures.load();
}

// relu(x * 2 + y) summed over dim 1, and x's mean.
std::vector<Var> two_outputs(const std::vector<Var>& in) {
  Var z = (in[0] * 2 + in[1]).relu();
  return {z.sum({1}), in[0].mean()};
}

// What two_outputs computes for ramp({batch, 3}, 0.25) and ramp({batch, 3}, 0.5), in doubles.
std::vector<double> two_outputs_directly(int64_t batch) {
  std::vector<double> result;
  double total = 0;
  for (int64_t r = 0; r < batch; ++r) {
    double row = 0;
    for (int64_t c = 0; c < 3; ++c) {
      int64_t i = r * 3 + c;
      row += std::max(0.0, ramp_value(i, 0.25) * 2 + ramp_value(i, 0.5));
      total += ramp_value(i, 0.25);
    }
    result.push_back(row);
  }
  result.push_back(total / double(batch * 3));
  return result;
}

TEST(ThreadSafety, ConcurrentCallsOfOneCompiledFunctionWhileItRecompiles) {
  fs::path cache = test_cache("calls");
  fs::remove_all(cache);
  CompiledFunction f = compile(two_outputs, options_in(cache));
  std::atomic<int> wrong{0};
  EXPECT_EQ(run_threads([&](int t) {
              for (int i = 0; i < 12; ++i) {
                int64_t batch = 2 + (t + i) % 5;  // the first calls race to compile, then to go dynamic
                std::vector<Tensor> out = f(ramp({batch, 3}, 0.25), ramp({batch, 3}, 0.5));
                std::vector<double> expected = two_outputs_directly(batch);
                if (out.size() != 2 || out[0].sizes() != Sizes{batch} || out[1].numel() != 1) {
                  ++wrong;
                  continue;
                }
                for (int64_t r = 0; r < batch; ++r)
                  if (std::abs(out[0].flat_double(r) - expected[size_t(r)]) > 1e-5) ++wrong;
                if (std::abs(out[1].flat_double(0) - expected.back()) > 1e-6) ++wrong;
              }
            }),
            0);
  EXPECT_EQ(wrong.load(), 0);
  CompiledFunctionStats stats = f.stats();
  EXPECT_EQ(stats.calls, uint64_t(kThreads * 12));
  EXPECT_LE(stats.variants, 3u);  // static first, then dynamic; racing first calls may add one
}

// x * 2 when x sums to a positive value, else x - 1: a graph break on every call.
std::vector<Var> branchy(const std::vector<Var>& in) {
  if (in[0].sum().item() > 0) return {in[0] * 2};
  return {in[0] - 1};
}

TEST(ThreadSafety, ConcurrentCallsThroughGraphBreaksTakeTheirOwnPaths) {
  fs::path cache = test_cache("breaks");
  fs::remove_all(cache);
  CompiledFunction f = compile(branchy, options_in(cache));
  std::atomic<int> wrong{0};
  EXPECT_EQ(run_threads([&](int t) {
              for (int i = 0; i < 10; ++i) {
                double sign = (t + i) % 2 == 0 ? 1.0 : -1.0;  // threads take both paths at once
                std::vector<double> data = {sign * 1.5, sign * 0.25, sign * 0.5 * t};  // sums to sign * (1.75 + t / 2)
                Tensor x = Tensor::from_doubles({3}, data, DType::f32);
                double sum = data[0] + data[1] + data[2];
                std::vector<Tensor> out = f(x);
                for (int64_t k = 0; k < 3; ++k) {
                  double expected = sum > 0 ? data[size_t(k)] * 2 : data[size_t(k)] - 1;
                  if (std::abs(out[0].flat_double(k) - expected) > 1e-6) ++wrong;
                }
              }
            }),
            0);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(f.stats().calls, uint64_t(kThreads * 10));
  EXPECT_GE(f.stats().break_graphs, 3u);  // the sum and both paths (threads racing to a new path may each compile it)
}

TEST(ThreadSafety, ConcurrentCompilesShareOneCache) {
  fs::path cache = test_cache("shared");
  fs::remove_all(cache);
  // Threads 0 and 1 compile the same function (one cache entry, written by whichever wins);
  // threads 2 and 3 compile functions of their own, into the same cache at the same time.
  std::vector<double> factors = {3.0, 3.0, 5.0, 7.0};
  std::vector<std::vector<double>> results(kThreads);
  EXPECT_EQ(run_threads([&](int t) {
              double factor = factors[size_t(t)];
              TensorFunction scaled = [factor](const std::vector<Var>& in) { return std::vector<Var>{(in[0] * factor).exp()}; };
              CompiledFunction f = compile(scaled, options_in(cache));
              std::vector<Tensor> out = f(ramp({64}, 0.01));
              for (int64_t i = 0; i < 64; ++i) results[size_t(t)].push_back(out[0].flat_double(i));
            }),
            0);
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(results[size_t(t)].size(), 64u) << "thread " << t;
    for (int64_t i = 0; i < 64; ++i) {
      double expected = std::exp(ramp_value(i, 0.01) * factors[size_t(t)]);
      EXPECT_NEAR(results[size_t(t)][size_t(i)], expected, 1e-5 * expected) << "thread " << t << " element " << i;
    }
  }
  // The same function again, now from the cache: no thread left a half-written entry.
  TensorFunction again = [](const std::vector<Var>& in) { return std::vector<Var>{(in[0] * 3.0).exp()}; };
  CompiledFunction f = compile(again, options_in(cache));
  EXPECT_NEAR(f(ramp({64}, 0.01))[0].flat_double(1), std::exp(ramp_value(1, 0.01) * 3.0), 1e-5);
}

}  // namespace
}  // namespace kiln
