// compile_training with TrainingOptions::data_parallel in one process, over a one-rank group
// written here (its collectives are what they are for one rank: broadcast and the sum leave the
// tensor as it is, all_gather stacks it once), recording what the training asks of it: the set-up
// and one all-reduce per bucket per update, and a training identical to one without the group.
// And the option's bad value.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "compiler/training/training_access.h"
#include "kiln/distributed.h"
#include "kiln/kiln.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::distributed_test {
namespace {

namespace F = nn::functional;

class OneRankGroup : public distributed::ProcessGroup {
 public:
  std::string backend() const override { return "one rank (test)"; }
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  void abort(const std::string&) override {}
  std::vector<std::string> calls;

 protected:
  void run_barrier() override { calls.push_back("barrier"); }
  void run_broadcast(const Tensor&, int) override { calls.push_back("broadcast"); }
  void run_all_reduce(const Tensor&, distributed::ReduceOp) override { calls.push_back("all_reduce"); }
  void run_all_gather(const Tensor& tensor, const Tensor& gathered) override {
    calls.push_back("all_gather");
    gathered.select(0, 0).copy_from(tensor);
  }
};

Var loss_of(const Var& logits, const Var& labels) { return F::cross_entropy(logits, labels); }

// A compile cache for the suite under the build tree.
TrainingOptions cached() {
  TrainingOptions options;
  options.compile.cache_dir = test_support::shared_compile_cache(std::filesystem::path(KILN_BINARY_DIR) / "test-compile-cache");
  return options;
}

Batch make_batch(int64_t step) {
  std::vector<double> points, labels;
  for (int64_t i = 0; i < 8; ++i) {
    points.push_back(double((i * 3 + step) % 5) - 2);
    points.push_back(double((i * 7 + step) % 3) - 1);
    labels.push_back(double((i + step) % 3));
  }
  return {{Tensor::from_doubles({8, 2}, points, DType::f32)}, {Tensor::from_doubles({8}, labels, DType::i64)}};
}

TEST(DataParallelOptions, OneRankTrainsAsWithoutAGroupAndAveragesNothing) {
  manual_seed(3);
  nn::Sequential plain_model(nn::Linear(2, 16), nn::ReLU(), nn::Linear(16, 3));
  manual_seed(3);
  nn::Sequential model(nn::Linear(2, 16), nn::ReLU(), nn::Linear(16, 3));
  CompiledTraining plain = compile_training(plain_model, loss_of, AdamOptions{.lr = 0.01}, make_batch(0), cached());
  auto group = std::make_shared<OneRankGroup>();
  TrainingOptions options = cached();
  options.data_parallel = group;
  CompiledTraining training = compile_training(model, loss_of, AdamOptions{.lr = 0.01}, make_batch(0), options);
  // The set-up: the agreement check's one all-gather of checksums (nothing differs), then one
  // broadcast of the f32 parameter arena (the module has no buffers).
  EXPECT_EQ(group->calls, (std::vector<std::string>{"all_gather", "broadcast"}));
  const size_t buckets = TrainingAccess::training(training).data_parallel()->buckets().size();
  EXPECT_EQ(buckets, 1u);  // 4 small f32 parameters, far below 25 MB
  group->calls.clear();
  // One rank's gradients are the average already: no update communicates (the 2-rank jobs of
  // data_parallel_test.cpp count one all-reduce per bucket and update).
  for (int64_t step = 0; step < 5; ++step)
    EXPECT_EQ(training.step(make_batch(step)), plain.step(make_batch(step))) << "step " << step;
  training.zero_grad();
  training.accumulate(make_batch(0), 0.5);
  training.accumulate(make_batch(1), 0.5);
  training.apply();
  EXPECT_EQ(group->calls, std::vector<std::string>{});
  plain.zero_grad();
  plain.accumulate(make_batch(0), 0.5);
  plain.accumulate(make_batch(1), 0.5);
  plain.apply();
  for (const std::string& name : plain.parameter_names()) {
    const Tensor a = plain.parameter(name), b = training.parameter(name);
    for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.flat_double(i), b.flat_double(i)) << name << "[" << i << "]";
  }
}

TEST(DataParallelOptions, ABucketSizeThatIsNotPositiveIsAnError) {
  nn::Sequential model(nn::Linear(2, 3));
  TrainingOptions options = cached();
  options.data_parallel = std::make_shared<OneRankGroup>();
  options.gradient_bucket_bytes = 0;
  try {
    compile_training(model, loss_of, SgdOptions{}, make_batch(0), options);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "compile_training: gradient_bucket_bytes is 0; it must be positive");
  }
}

}  // namespace
}  // namespace kiln::distributed_test
