// distributed_worker: one rank of the data-parallel tests, started by mpirun from
// tests/distributed/*_test.cpp as `distributed_worker SCENARIO [ARGS...]`. Each scenario checks
// its own results and prints "rank R: SCENARIO ok ..." on success; on failure it prints
// "rank R: error: MESSAGE" and exits 1. Scenarios:
//   collectives                  barrier, broadcast, all_reduce (sum, average, f16, a strided
//                                view), all_gather, their argument errors; and compile_training's
//                                set-up giving every rank rank 0's parameters
//   parity MODEL OPTIMIZER       MODEL (mlp, cnn) trained 20 steps with OPTIMIZER (sgd, adam) on
//                                each rank's share of tests/data/training_parity's batches equals
//                                one process trained on the whole batches (computed on each rank)
//   accumulate                   two micro-batches per rank accumulated, then one apply(), equals
//                                one process's step on the whole batch; accumulate() communicates nothing
//   buckets                      a model whose parameters are declared out of use order, with tiny
//                                buckets (some packed): equals one process
//   buffers on|off               a batch-norm CNN: with (on) or without (off) broadcast_buffers,
//                                ranks that trained on their own batches hold equal buffers after a
//                                step on a shared batch exactly when the buffers were broadcast
//   raise                        rank 1 fails in its 4th step (a malformed batch); the others must
//                                report it (the test checks the output)
//   hang SECONDS                 rank 1 never joins an all-reduce; the others must time out after SECONDS
//   mismatch WHAT                rank 1 builds a different training (parameters, optimizer, model)
//   nccl                         (needs a GPU per rank and NCCL) the nccl group's barrier, broadcast,
//                                all_reduce (sum, average) and all_gather in every dtype it maps equal
//                                the mpi group's on the same values; each group refuses the other's tensors
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "compiler/training/training_access.h"
#include "kiln/distributed.h"
#include "kiln/kiln.h"
#include "runtime/checksum.h"
#include "runtime/cuda/cuda_context.h"
#include "tests/training_step/training_models.h"

namespace kiln::training_step_test {
namespace {

using distributed::ProcessGroup;
using distributed::ReduceOp;

constexpr double kRelative = 1e-5;

// A ProcessGroup that forwards to another and counts the all-reduces (the gradient averages).
class CountingGroup : public ProcessGroup {
 public:
  explicit CountingGroup(std::shared_ptr<ProcessGroup> inner) : inner_(std::move(inner)) {}
  std::string backend() const override { return inner_->backend(); }
  int rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  void abort(const std::string& reason) override { inner_->abort(reason); }
  bool collectives_on_any_thread() const override { return inner_->collectives_on_any_thread(); }
  int all_reduces = 0;  // (written by the communication thread of an overlapped step, read after it)

 protected:
  void run_barrier() override { inner_->barrier(); }
  void run_broadcast(const Tensor& tensor, int root) override { inner_->broadcast(tensor, root); }
  void run_all_reduce(const Tensor& tensor, ReduceOp op) override {
    ++all_reduces;
    inner_->all_reduce(tensor, op);
  }
  void run_all_gather(const Tensor& tensor, const Tensor& gathered) override {
    gathered.copy_from(inner_->all_gather(tensor));
  }

 private:
  std::shared_ptr<ProcessGroup> inner_;
};

void expect(bool condition, const std::string& what) {
  if (!condition) fail("check failed: ", what);
}

// A message of `call` that must throw kiln::Error; fails when it does not.
template <typename Call>
std::string error_of(Call call) {
  try {
    call();
  } catch (const Error& error) {
    return error.what();
  }
  fail("expected a kiln::Error, got none");
}

// Rows [rank * n / world, (rank + 1) * n / world) of every tensor of `batch` (n divisible by world).
Batch shard(const Batch& batch, const ProcessGroup& group) {
  auto part = [&](const Tensor& tensor) {
    const int64_t rows = tensor.size(0), world = group.world_size();
    if (rows % world != 0) fail("a batch of ", rows, " rows does not split over ", world, " ranks");
    const int64_t local = rows / world;
    return tensor.slice(0, group.rank() * local, (group.rank() + 1) * local).contiguous();
  };
  Batch local;
  for (const Tensor& input : batch.inputs) local.inputs.push_back(part(input));
  for (const Tensor& target : batch.targets) local.targets.push_back(part(target));
  return local;
}

// ||a - e||_2 / max(||e||_2, 1e-12) over the elements of a tensor `skip` leaves (all without it).
double relative_l2_difference(const Tensor& expected, const Tensor& actual, const std::vector<bool>* skip = nullptr) {
  double difference = 0, norm = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    if (skip && (*skip)[size_t(i)]) continue;
    const double e = expected.flat_double(i), a = actual.flat_double(i);
    difference += (a - e) * (a - e);
    norm += e * e;
  }
  return std::sqrt(difference) / std::max(std::sqrt(norm), 1e-12);
}

// What makes Adam's comparison well-posed. Adam moves an element by about lr * g / (|g| + eps) in
// its first steps whatever g's size, so where the gradient is at rounding level (|g| near eps =
// 1e-8: seen, 6.75e-9 in one process against 2.79e-9 on 2 ranks, from sums rounded in another
// order) the two runs move it by different fractions of lr: 1.8e-4 apart after one step, which
// the next step's gradients of the layer after it carried (2.2e-5 relative). So with Adam:
// - such an element, below `threshold` (100 eps: there a rounding error of 1e-9 changes the step
//   by 1e-7 lr) in either run at any step, is left out of the parameter comparison from then on;
// - after each step's comparison one process takes the ranks' parameters, so that each step is
//   compared from the same point (the optimizers' moments stay each run's own).
// With SGD (a step of lr g) nothing is left out and the two trajectories run apart for 20 steps.
// The gradients are always compared whole.
struct IllConditioned {
  double threshold = 0;  // 0: SGD, nothing left out and no re-synchronization
  std::map<std::string, std::vector<bool>> elements;
  int64_t count = 0;

  explicit IllConditioned(const OptimizerOptions& optimizer) {
    if (const auto* adam = std::get_if<AdamOptions>(&optimizer)) threshold = 100 * adam->eps;
  }
  void mark(const std::string& name, const Tensor& expected, const Tensor& actual) {
    std::vector<bool>& marked = elements[name];
    marked.resize(size_t(expected.numel()), false);
    for (int64_t i = 0; i < expected.numel(); ++i) {
      if (marked[size_t(i)]) continue;
      if (std::fabs(expected.flat_double(i)) < threshold || std::fabs(actual.flat_double(i)) < threshold) {
        marked[size_t(i)] = expected.flat_double(i) != actual.flat_double(i);
        count += marked[size_t(i)];
      }
    }
  }
};

// After a step of both: fails unless, for every parameter, the gradient `actual` applied (the
// average over the ranks) and the updated parameter are within kRelative of one process's, as
// tensors (||difference||_2 over ||value||_2; the parameters without `ill`'s elements), then
// with Adam gives `expected` the parameters of `actual`. Not element by element, because the two
// runs' trajectories part at rounding level. Returns the worst of each, L2 and largest element:
// {gradients (L2), parameters (L2), gradients (element), parameters (element)}.
std::array<double, 4> compare_step(CompiledTraining& expected, const CompiledTraining& actual,
                                   IllConditioned& ill, const std::string& when) {
  std::array<double, 4> worst = {0, 0, 0, 0};
  for (const std::string& name : expected.parameter_names()) {
    ill.mark(name, expected.gradient(name), actual.gradient(name));
    const std::vector<bool>& skip = ill.elements.at(name);
    const double gradient = relative_l2_difference(expected.gradient(name), actual.gradient(name));
    const double parameter = relative_l2_difference(expected.parameter(name), actual.parameter(name), &skip);
    if (!(gradient <= kRelative))
      fail(when, ": the gradient of ", name, " differs from one process's by ", gradient, " (relative, L2)");
    if (!(parameter <= kRelative))
      fail(when, ": parameter ", name, " differs from one process's by ", parameter, " (relative, L2)");
    const std::array<double, 4> differences = {gradient, parameter,
                                               relative_difference(expected.gradient(name), actual.gradient(name)),
                                               relative_difference(expected.parameter(name), actual.parameter(name))};
    for (size_t i = 0; i < worst.size(); ++i) worst[i] = std::max(worst[i], differences[i]);
  }
  if (ill.threshold > 0)
    for (const std::string& name : expected.parameter_names()) expected.parameter(name).copy_from(actual.parameter(name));
  return worst;
}

// Fails unless the parameters are equal (after the set-up: rank 0's, which one process has too).
void check_parameters_equal(const CompiledTraining& expected, const CompiledTraining& actual) {
  for (const std::string& name : expected.parameter_names())
    if (relative_difference(expected.parameter(name), actual.parameter(name)) != 0)
      fail("after set-up: parameter ", name, " is not rank 0's");
}

// "L2: gradients 2.1e-07, parameters 3.0e-08; largest element: gradients 1.0e-06, parameters 2.3e-04"
std::string describe(const std::array<double, 4>& worst) {
  char text[200];
  std::snprintf(text, sizeof text,
                "L2: gradients %.1e, parameters %.1e; largest element: gradients %.1e, parameters %.1e", worst[0],
                worst[1], worst[2], worst[3]);
  return text;
}

void keep_worst(std::array<double, 4>& worst, const std::array<double, 4>& step) {
  for (size_t i = 0; i < worst.size(); ++i) worst[i] = std::max(worst[i], step[i]);
}

// Fails unless every rank holds bit-identical parameters.
void check_ranks_identical(ProcessGroup& group, const CompiledTraining& training) {
  Checksum64 checksum;
  for (const std::string& name : training.parameter_names()) {
    const Tensor value = training.parameter(name).contiguous();
    checksum.update(value.data_ptr(), value.nbytes());
  }
  Tensor mine = Tensor::zeros({}, DType::u64);
  mine.data<uint64_t>()[0] = checksum.digest();
  const Tensor all = group.all_gather(mine);
  for (int rank = 1; rank < group.world_size(); ++rank)
    if (all.data<uint64_t>()[rank] != all.data<uint64_t>()[0])
      fail("rank ", rank, "'s parameters differ from rank 0's");
}

// A CUDA tensor that is never read: its storage's address is not device memory (a group must refuse
// it before touching it).
Tensor unreadable_cuda_tensor(const Sizes& sizes, DType dtype, int device = 0) {
  auto storage = std::make_shared<Storage>(reinterpret_cast<void*>(uintptr_t(0x1000)), size_t(numel_of(sizes)) * dtype_size(dtype),
                                           Device::cuda(device), [](void*) {});
  Sizes strides(sizes.size(), 1);
  for (size_t i = sizes.size(); i-- > 1;) strides[i - 1] = strides[i] * sizes[i];
  return Tensor(storage, sizes, strides, 0, dtype);
}

void collectives(const std::shared_ptr<ProcessGroup>& group_pointer) {
  ProcessGroup& group = *group_pointer;
  const int rank = group.rank(), world = group.world_size();
  group.barrier();
  // broadcast from the last rank
  Tensor values =
      Tensor::from_doubles({3}, std::vector<double>{rank * 10.0, rank * 10.0 + 1, rank * 10.0 + 2}, DType::f32);
  group.broadcast(values, world - 1);
  for (int64_t i = 0; i < 3; ++i)
    expect(values.flat_double(i) == (world - 1) * 10.0 + double(i), "broadcast from the last rank");
  // all_reduce: an i64 sum, an f32 and an f16 average, a strided view (a transpose) summed in place
  Tensor count = Tensor::full({}, double(rank + 1), DType::i64);
  group.all_reduce(count);
  expect(count.flat_int(0) == int64_t(world) * (world + 1) / 2, "an i64 sum");
  Tensor mean = Tensor::full({4}, double(rank), DType::f32);
  group.all_reduce(mean, ReduceOp::average);
  expect(mean.flat_double(3) == double(world - 1) / 2, "an f32 average");
  Tensor half = Tensor::full({5}, double(2 * rank), DType::f16);
  group.all_reduce(half, ReduceOp::average);
  expect(half.dtype() == DType::f16 && half.flat_double(4) == double(world - 1), "an f16 average");
  Tensor base = Tensor::from_doubles({2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6}, DType::f64);
  group.all_reduce(base.transpose(0, 1), ReduceOp::sum);
  for (int64_t i = 0; i < 6; ++i)
    expect(base.flat_double(i) == double(world) * double(i + 1), "a strided view summed in place");
  // all_gather in rank order
  const Tensor gathered =
      group.all_gather(Tensor::from_doubles({2}, std::vector<double>{double(rank), -double(rank)}, DType::f32));
  expect(gathered.sizes() == Sizes{world, 2}, "all_gather's shape");
  for (int r = 0; r < world; ++r)
    expect(gathered.flat_double(2 * r) == r && gathered.flat_double(2 * r + 1) == -r, "all_gather's order");
  // argument errors: one line each, and the group stays usable
  std::printf("rank %d: broadcast root error: %s\n", rank, error_of([&] { group.broadcast(values, world); }).c_str());
  std::printf("rank %d: average error: %s\n", rank,
              error_of([&] { group.all_reduce(count, ReduceOp::average); }).c_str());
  std::printf("rank %d: undefined error: %s\n", rank, error_of([&] { group.all_reduce(Tensor()); }).c_str());
  std::printf("rank %d: bool error: %s\n", rank,
              error_of([&] { group.all_reduce(Tensor::full({2}, 1, DType::boolean)); }).c_str());
  std::printf("rank %d: cuda tensor error: %s\n", rank,
              error_of([&] { group.all_reduce(unreadable_cuda_tensor({2}, DType::f32)); }).c_str());
  std::printf("rank %d: cuda all_gather error: %s\n", rank,
              error_of([&] { group.all_gather(unreadable_cuda_tensor({2}, DType::f32)); }).c_str());
  group.barrier();

  // compile_training's set-up: every rank starts from rank 0's parameters, whatever it initialized.
  manual_seed(uint64_t(1000 + rank));
  Mlp model;
  std::map<std::string, Tensor> rank0;
  bool own_differ = false;
  for (const auto& [name, value] : model.named_parameters()) {
    rank0[name] = value.clone();
    group.broadcast(rank0[name], 0);
    own_differ = own_differ || relative_difference(rank0[name], value) > 0;
  }
  if (rank != 0) expect(own_differ, "each rank initialized its own parameters (seeded by rank)");
  TrainingOptions options = test_options();
  options.data_parallel = group_pointer;
  ParityReference reference("mlp");
  CompiledTraining training =
      compile_training(model, cross_entropy_loss, SgdOptions{.lr = 0.1}, shard(reference.batch(0), group), options);
  for (const auto& [name, value] : model.named_parameters()) {
    expect(relative_difference(rank0[name], value) == 0, "the module's " + name + " is rank 0's after set-up");
    expect(relative_difference(rank0[name], training.parameter(name)) == 0, "the arena's " + name + " is rank 0's");
  }
  check_ranks_identical(group, training);
  std::printf("rank %d: collectives ok\n", rank);
}

// Device copies of CPU tensors and back, through the driver (the worker's own helper).
class DeviceCopies {
 public:
  explicit DeviceCopies(int device) : context_(device) {}
  Tensor to_device(const Tensor& cpu) {
    const Tensor source = cpu.contiguous();
    context_.make_current();
    const cuda::DriverFunctions& api = context_.driver().api();
    cuda::CUdeviceptr address = 0;
    context_.driver().check(api.cuMemAlloc(&address, std::max<size_t>(source.nbytes(), 1)), "cuMemAlloc");
    context_.driver().check(api.cuMemcpyHtoDAsync(address, source.data_ptr(), source.nbytes(), nullptr), "upload");
    context_.synchronize();
    const cuda::CudaContext* context = &context_;
    auto storage = std::make_shared<Storage>(reinterpret_cast<void*>(uintptr_t(address)), source.nbytes(),
                                             Device::cuda(context_.info().ordinal), [context](void* pointer) {
                                               context->make_current();
                                               context->driver().api().cuMemFree(cuda::CUdeviceptr(uintptr_t(pointer)));
                                             });
    return Tensor(storage, source.sizes(), source.strides(), 0, source.dtype());
  }
  Tensor to_host(const Tensor& device) {
    Tensor host = Tensor::empty(device.sizes(), device.dtype());
    context_.make_current();
    context_.driver().check(context_.driver().api().cuMemcpyDtoHAsync(
                                host.data_ptr(), cuda::CUdeviceptr(uintptr_t(device.data_ptr())), host.nbytes(), nullptr),
                            "download");
    context_.synchronize();
    return host;
  }

 private:
  cuda::CudaContext context_;
};

bool same_values(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (a.flat_double(i) != b.flat_double(i)) return false;
  return true;
}

// The nccl group's collectives against the mpi group's, on the same values in every dtype.
void nccl_collectives(const std::shared_ptr<ProcessGroup>& mpi) {
  const int rank = mpi->rank(), world = mpi->world_size();
  distributed::ProcessGroupOptions options;
  options.backend = "nccl";
  options.device = rank;
  options.timeout_seconds = 120;
  std::shared_ptr<ProcessGroup> nccl = distributed::init_process_group(options);
  expect(nccl->backend() == "nccl" && nccl->rank() == rank && nccl->world_size() == world, "the nccl group's ranks");
  DeviceCopies device(rank);
  nccl->barrier();
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64, DType::u8, DType::i8}) {
    const std::string name(dtype_name(dtype));
    // Small integers (and halves): exact in every dtype, so the sums agree bit for bit.
    std::vector<double> values;
    for (int i = 0; i < 37; ++i) values.push_back(double((rank * 7 + i) % 11) + (is_floating(dtype) ? 0.5 * rank : 0));
    const Tensor host = Tensor::from_doubles({37}, values, dtype);
    Tensor expected = host.clone();
    mpi->all_reduce(expected, ReduceOp::sum);
    Tensor on_device = device.to_device(host);
    nccl->all_reduce(on_device, ReduceOp::sum);
    expect(same_values(device.to_host(on_device), expected), "all_reduce sum of " + name);
    if (is_floating(dtype)) {
      expected = host.clone();
      mpi->all_reduce(expected, ReduceOp::average);
      on_device = device.to_device(host);
      nccl->all_reduce(on_device, ReduceOp::average);
      expect(same_values(device.to_host(on_device), expected), "all_reduce average of " + name);
    }
    expected = host.clone();
    mpi->broadcast(expected, world - 1);
    on_device = device.to_device(host);
    nccl->broadcast(on_device, world - 1);
    expect(same_values(device.to_host(on_device), expected), "broadcast of " + name);
    const Tensor gathered = nccl->all_gather(device.to_device(host.view({37, 1})));
    expect(gathered.device() == Device::cuda(rank), "all_gather's result is on the group's device");
    expect(same_values(device.to_host(gathered), mpi->all_gather(host.view({37, 1}))), "all_gather of " + name);
  }
  nccl->barrier();
  std::printf("rank %d: nccl cpu tensor error: %s\n", rank,
              error_of([&] { nccl->all_reduce(Tensor::full({2}, 1, DType::f32)); }).c_str());
  std::printf("rank %d: mpi cuda tensor error: %s\n", rank,
              error_of([&] { mpi->all_reduce(device.to_device(Tensor::full({2}, 1, DType::f32))); }).c_str());
  nccl->barrier();
  std::printf("rank %d: nccl ok\n", rank);
}

template <typename Model>
void parity(const std::shared_ptr<ProcessGroup>& group, const std::string& model_name,
            const std::string& optimizer_name, int64_t bucket_bytes, TrainingOptions::Overlap overlap) {
  ParityReference reference(model_name);
  const OptimizerOptions optimizer = reference_optimizer(reference.report.at("optimizers").at(optimizer_name));
  Model single_model;
  single_model.load_state_dict(reference.init);
  CompiledTraining single =
      compile_training(single_model, cross_entropy_loss, optimizer, reference.batch(0), test_options());
  // Only rank 0 loads the initial weights: the others keep their own (seeded by rank), and the
  // set-up must replace them with rank 0's.
  manual_seed(uint64_t(2000 + group->rank()));
  Model model;
  if (group->rank() == 0) model.load_state_dict(reference.init);
  auto counting = std::make_shared<CountingGroup>(group);
  TrainingOptions options = test_options();
  options.data_parallel = counting;
  options.gradient_bucket_bytes = bucket_bytes;
  options.overlap_communication = overlap;
  CompiledTraining ddp =
      compile_training(model, cross_entropy_loss, optimizer, shard(reference.batch(0), *group), options);
  const size_t buckets = TrainingAccess::training(ddp).data_parallel()->buckets().size();
  check_parameters_equal(single, ddp);
  std::array<double, 4> worst = {0, 0, 0, 0};
  IllConditioned ill(optimizer);
  double worst_loss = 0;
  for (int64_t step = 0; step < reference.steps(); ++step) {
    const double expected_loss = single.step(reference.batch(step));
    const int before = counting->all_reduces;
    Tensor loss = Tensor::full({}, ddp.step(shard(reference.batch(step), *group)), DType::f64);
    if (counting->all_reduces - before != int(buckets))
      fail("step ", step, ": ", counting->all_reduces - before, " all-reduces for ", buckets, " buckets");
    group->all_reduce(loss, ReduceOp::average);
    const double loss_difference = std::fabs(loss.item() - expected_loss) / std::max(std::fabs(expected_loss), 1e-2);
    if (!(loss_difference <= kRelative))
      fail("step ", step, ": the ranks' mean loss ", loss.item(), " differs from one process's ", expected_loss);
    worst_loss = std::max(worst_loss, loss_difference);
    keep_worst(worst, compare_step(single, ddp, ill, "step " + std::to_string(step)));
  }
  check_ranks_identical(*group, ddp);
  std::printf("rank %d: parity %s %s ok: %lld steps, %zu buckets, worst relative differences: loss %.1e, %s; "
              "%lld parameter elements left out after a rounding-level Adam gradient\n",
              group->rank(), model_name.c_str(), optimizer_name.c_str(), static_cast<long long>(reference.steps()),
              buckets, worst_loss, describe(worst).c_str(), static_cast<long long>(ill.count));
}

void accumulate(const std::shared_ptr<ProcessGroup>& group) {
  ParityReference reference("mlp");
  const OptimizerOptions optimizer = reference_optimizer(reference.report.at("optimizers").at("sgd"));
  Mlp single_model, model;
  single_model.load_state_dict(reference.init);
  model.load_state_dict(reference.init);
  CompiledTraining single =
      compile_training(single_model, cross_entropy_loss, optimizer, reference.batch(0), test_options());
  auto counting = std::make_shared<CountingGroup>(group);
  TrainingOptions options = test_options();
  options.data_parallel = counting;
  // Each rank's share of the batch, in two micro-batches of half of it.
  auto micro = [&](int64_t step, int half) {
    Batch local = shard(reference.batch(step), *group);
    const int64_t rows = local.inputs[0].size(0) / 2;
    return Batch{{local.inputs[0].slice(0, half * rows, (half + 1) * rows).contiguous()},
                 {local.targets[0].slice(0, half * rows, (half + 1) * rows).contiguous()}};
  };
  CompiledTraining ddp = compile_training(model, cross_entropy_loss, optimizer, micro(0, 0), options);
  std::array<double, 4> worst = {0, 0, 0, 0};
  IllConditioned ill(optimizer);
  for (int64_t step = 0; step < reference.steps(); ++step) {
    single.step(reference.batch(step));
    ddp.zero_grad();
    const int before = counting->all_reduces;
    ddp.accumulate(micro(step, 0), 0.5);
    ddp.accumulate(micro(step, 1), 0.5);
    if (counting->all_reduces != before) fail("step ", step, ": accumulate() communicated");
    ddp.apply();
    if (counting->all_reduces == before) fail("step ", step, ": apply() averaged no gradient");
    keep_worst(worst, compare_step(single, ddp, ill, "step " + std::to_string(step)));
  }
  check_ranks_identical(*group, ddp);
  std::printf("rank %d: accumulate ok: worst relative differences: %s\n", group->rank(), describe(worst).c_str());
}

// Three layers declared in the order fc2, fc1, fc3 but used fc1, fc2, fc3: the backward produces
// fc3's gradients, then fc2's, then fc1's, so a bucket of fc3 and fc2 is not one range of the arena.
class OutOfOrderMlp : public nn::Module {
 public:
  OutOfOrderMlp() : Module("OutOfOrderMlp") {
    fc2_ = register_module("fc2", std::make_shared<nn::Linear>(16, 16));
    fc1_ = register_module("fc1", std::make_shared<nn::Linear>(8, 16));
    fc3_ = register_module("fc3", std::make_shared<nn::Linear>(16, 4));
  }
  Var forward(const Var& x) override { return (*fc3_)(F::relu((*fc2_)(F::relu((*fc1_)(x))))); }

 private:
  std::shared_ptr<nn::Linear> fc1_, fc2_, fc3_;
};

void buckets(const std::shared_ptr<ProcessGroup>& group) {
  manual_seed(5);  // the same data and initial weights on every rank
  const Tensor x = random::normal({20, 16, 8}, 0, 1);
  std::vector<double> labels;
  for (int64_t i = 0; i < 20 * 16; ++i) labels.push_back(double((i * 7) % 4));
  const Tensor y = Tensor::from_doubles({20, 16}, labels, DType::i64);
  auto batch = [&](int64_t step) { return Batch{{x.select(0, step).contiguous()}, {y.select(0, step).contiguous()}}; };
  OutOfOrderMlp single_model, model;
  model.load_state_dict(single_model.state_dict());
  const AdamOptions optimizer{.lr = 0.01};
  CompiledTraining single = compile_training(single_model, cross_entropy_loss, optimizer, batch(0), test_options());
  TrainingOptions options = test_options();
  options.data_parallel = group;
  options.gradient_bucket_bytes = 1400;  // fc3 (272 bytes) and fc2 (1088 bytes) share a bucket
  CompiledTraining ddp = compile_training(model, cross_entropy_loss, optimizer, shard(batch(0), *group), options);
  int packed = 0;
  std::string plan;
  for (const compiler::GradientBucket& bucket : TrainingAccess::training(ddp).data_parallel()->buckets()) {
    packed += !bucket.arena_range;
    plan += " [";
    for (const std::string& name : bucket.parameters) plan += " " + name;
    plan += bucket.arena_range ? " ]" : " ] (packed)";
  }
  if (packed == 0) fail("no bucket is packed:", plan);
  std::array<double, 4> worst = {0, 0, 0, 0};
  IllConditioned ill(optimizer);
  for (int64_t step = 0; step < 20; ++step) {
    single.step(batch(step));
    ddp.step(shard(batch(step), *group));
    keep_worst(worst, compare_step(single, ddp, ill, "step " + std::to_string(step)));
  }
  check_ranks_identical(*group, ddp);
  std::printf("rank %d: buckets ok:%s; worst relative differences: %s\n", group->rank(), plan.c_str(),
              describe(worst).c_str());
}

// Rank 1 passes a batch without its targets at its 4th step; the others go on stepping.
void raise(const std::shared_ptr<ProcessGroup>& group) {
  ParityReference reference("mlp");
  Mlp model;
  TrainingOptions options = test_options();
  options.data_parallel = group;
  CompiledTraining ddp =
      compile_training(model, cross_entropy_loss, SgdOptions{.lr = 0.01}, shard(reference.batch(0), *group), options);
  for (int64_t step = 0; step < reference.steps(); ++step) {
    Batch local = shard(reference.batch(step), *group);
    if (group->rank() == 1 && step == 3) local.targets.clear();
    ddp.step(local);
  }
  std::printf("rank %d: raise ok (no rank failed)\n", group->rank());
}

// Rank 1 never joins rank 0's all-reduce (it sleeps ten times the others' timeout).
void hang(const std::shared_ptr<ProcessGroup>& group, double seconds) {
  if (group->rank() == 1) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds * 10));
    fail("rank 1 was not stopped while it slept");
  }
  Tensor value = Tensor::full({8}, 1, DType::f32);
  group->all_reduce(value);
  std::printf("rank %d: hang ok (no rank hung)\n", group->rank());
}

// Whether every rank holds bit-identical buffers (a collective).
bool buffers_identical(ProcessGroup& group, const nn::Module& module) {
  Checksum64 checksum;
  for (const auto& [name, value] : module.named_buffers()) {
    const Tensor contiguous = value.contiguous();
    checksum.update(contiguous.data_ptr(), contiguous.nbytes());
  }
  Tensor mine = Tensor::zeros({}, DType::u64);
  mine.data<uint64_t>()[0] = checksum.digest();
  const Tensor all = group.all_gather(mine);
  for (int rank = 1; rank < group.world_size(); ++rank)
    if (all.data<uint64_t>()[rank] != all.data<uint64_t>()[0]) return false;
  return true;
}

// Three steps on batches of each rank's own, then one on a batch every rank shares. With
// broadcast_buffers every forward starts from rank 0's running statistics, so after the shared
// batch every rank holds the same ones; without, each rank's own history stays in them.
void buffers(const std::shared_ptr<ProcessGroup>& group, bool broadcast) {
  manual_seed(7);  // the same data and initial weights on every rank
  const Tensor x = random::normal({8, 6, 1, 8, 8}, 0, 1);
  std::vector<double> labels;
  for (int64_t i = 0; i < 8 * 6; ++i) labels.push_back(double((i * 5) % 4));
  const Tensor y = Tensor::from_doubles({8, 6}, labels, DType::i64);
  auto batch = [&](int64_t index) { return Batch{{x.select(0, index).contiguous()}, {y.select(0, index).contiguous()}}; };
  ConvBatchNorm model(8, 4);  // each rank's forward updates its running statistics from its own batch
  TrainingOptions options = test_options();
  options.data_parallel = group;
  options.broadcast_buffers = broadcast;
  const int rank = group->rank();
  CompiledTraining ddp = compile_training(model, cross_entropy_loss, SgdOptions{.lr = 0.05}, batch(rank), options);
  expect(buffers_identical(*group, model), "the buffers are rank 0's after the set-up");
  for (int64_t step = 0; step < 3; ++step) {
    ddp.step(batch(2 * step + rank));
    expect(!buffers_identical(*group, model), "step " + std::to_string(step) +
                                                  ": the ranks' own batches leave different running statistics");
  }
  ddp.step(batch(7));
  const bool identical = buffers_identical(*group, model);
  expect(identical == broadcast, broadcast ? "with broadcast_buffers, a shared batch leaves the ranks' buffers equal"
                                           : "without broadcast_buffers, each rank keeps its own running statistics");
  check_ranks_identical(*group, ddp);
  std::printf("rank %d: buffers %s ok: after a shared batch the ranks' buffers are %s\n", rank,
              broadcast ? "on" : "off", identical ? "identical" : "different");
}

// An MLP with a choice of hidden width and activation, for the mismatch scenarios.
class ConfigurableMlp : public nn::Module {
 public:
  ConfigurableMlp(int64_t hidden, bool tanh) : Module("Mlp"), tanh_(tanh) {
    fc1_ = register_module("fc1", std::make_shared<nn::Linear>(784, hidden));
    fc2_ = register_module("fc2", std::make_shared<nn::Linear>(hidden, 10));
  }
  Var forward(const Var& x) override {
    const Var hidden = (*fc1_)(x);
    return (*fc2_)(tanh_ ? hidden.tanh() : F::relu(hidden));
  }

 private:
  bool tanh_;
  std::shared_ptr<nn::Linear> fc1_, fc2_;
};

void mismatch(const std::shared_ptr<ProcessGroup>& group, const std::string& what) {
  if (what != "parameters" && what != "optimizer" && what != "model") fail("unknown mismatch '", what, "'");
  const bool odd = group->rank() == 1;
  ConfigurableMlp model(odd && what == "parameters" ? 64 : 128, odd && what == "model");
  SgdOptions optimizer{.lr = odd && what == "optimizer" ? 0.02 : 0.01};
  ParityReference reference("mlp");
  TrainingOptions options = test_options();
  options.data_parallel = group;
  compile_training(model, cross_entropy_loss, optimizer, shard(reference.batch(0), *group), options);
  std::printf("rank %d: mismatch ok (no rank disagreed)\n", group->rank());
}

int run(int argc, char** argv) {
  if (argc < 2) fail("usage: distributed_worker SCENARIO [ARGS...]");
  const std::string scenario = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  distributed::ProcessGroupOptions group_options;
  group_options.timeout_seconds = scenario == "hang" && !args.empty() ? std::atof(args[0].c_str()) : 120;
  std::shared_ptr<ProcessGroup> group = distributed::init_process_group(group_options);
  if (scenario == "collectives") {
    collectives(group);
  } else if (scenario == "parity" && args.size() >= 2) {
    const int64_t bucket_bytes = args.size() > 2 ? std::atoll(args[2].c_str()) : int64_t(25) << 20;
    const std::string overlap_name = args.size() > 3 ? args[3] : "automatic";
    TrainingOptions::Overlap overlap = TrainingOptions::Overlap::automatic;
    if (overlap_name == "always") overlap = TrainingOptions::Overlap::always;
    else if (overlap_name == "never") overlap = TrainingOptions::Overlap::never;
    else if (overlap_name != "automatic") fail("unknown overlap '", overlap_name, "'");
    if (args[0] == "mlp")
      parity<Mlp>(group, "mlp", args[1], bucket_bytes, overlap);
    else if (args[0] == "cnn")
      parity<SmallCnn>(group, "cnn", args[1], bucket_bytes, overlap);
    else
      fail("unknown model '", args[0], "'");
  } else if (scenario == "accumulate") {
    accumulate(group);
  } else if (scenario == "buckets") {
    buckets(group);
  } else if (scenario == "buffers" && args.size() == 1 && (args[0] == "on" || args[0] == "off")) {
    buffers(group, args[0] == "on");
  } else if (scenario == "raise") {
    raise(group);
  } else if (scenario == "hang" && args.size() == 1) {
    hang(group, group_options.timeout_seconds);
  } else if (scenario == "mismatch" && args.size() == 1) {
    mismatch(group, args[0]);
  } else if (scenario == "nccl") {
    nccl_collectives(group);
  } else {
    fail("unknown scenario or wrong arguments: ", scenario);
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace kiln::training_step_test

int main(int argc, char** argv) {
  try {
    return kiln::training_step_test::run(argc, argv);
  } catch (const std::exception& error) {
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    std::fflush(stdout);
    std::fprintf(stderr, "rank %s: error: %s\n", rank ? rank : "?", error.what());
    return 1;
  }
}
