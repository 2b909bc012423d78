// kiln::distributed::ProcessGroup: the collectives on 2 ranks under mpirun (one job of
// distributed_worker's `collectives` scenario, whose checks are in the worker; its argument
// errors printed one per line and checked here, one test each), and init_process_group's errors;
// the nccl backend's errors that need no GPU, and its collectives against the mpi backend's on a
// machine with two GPUs and NCCL (skipped elsewhere, with the reason).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "compiler/distributed/nccl_process_group.h"
#include "kiln/distributed.h"
#include "kiln/error.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/nccl.h"
#include "tests/distributed/mpi_job.h"
#include "tests/support/test_paths.h"

namespace kiln::distributed_test {
namespace {

class Collectives : public testing::Test {
 protected:
  static const JobResult& job() {
    static const JobResult result = run_worker_job(2, "collectives");
    return result;
  }
  void expect_line(const std::string& line) {
    EXPECT_NE(job().output.find("rank 0: " + line), std::string::npos) << job().output;
    EXPECT_NE(job().output.find("rank 1: " + line), std::string::npos) << job().output;
  }
};

TEST_F(Collectives, BroadcastAllReduceAllGatherAndTheTrainingSetUp) {
  KILN_SKIP_WITHOUT_MPI();
  EXPECT_EQ(job().status, 0) << job().output;
  expect_line("collectives ok");
}

TEST_F(Collectives, ARootOutOfRangeIsAnError) {
  KILN_SKIP_WITHOUT_MPI();
  expect_line("broadcast root error: broadcast: root rank 2 is out of range (the group has ranks 0 to 1)");
}

TEST_F(Collectives, TheAverageOfIntegersIsAnError) {
  KILN_SKIP_WITHOUT_MPI();
  expect_line("average error: all_reduce: average needs a floating dtype; the tensor is i64 (use sum for integers)");
}

TEST_F(Collectives, AnUndefinedTensorIsAnError) {
  KILN_SKIP_WITHOUT_MPI();
  expect_line("undefined error: all_reduce: the tensor is undefined");
}

TEST_F(Collectives, TheSumOfBoolsIsAnError) {
  KILN_SKIP_WITHOUT_MPI();
  expect_line("bool error: all_reduce: a bool tensor has no sum");
}

TEST_F(Collectives, TheMpiBackendRefusesACudaTensor) {
  KILN_SKIP_WITHOUT_MPI();
  const std::string refusal =
      ": the tensor is on cuda:0; the mpi backend moves CPU tensors (CUDA tensors need the nccl backend: "
      "ProcessGroupOptions::backend = \"nccl\")";
  expect_line("cuda tensor error: all_reduce" + refusal);
  expect_line("cuda all_gather error: all_gather" + refusal);
}

TEST(InitProcessGroup, AProgramNotStartedByALauncherIsAnError) {
  KILN_SKIP_WITHOUT_MPI();
  // The worker run directly, as a user might forget mpirun.
  const JobResult run = run_command(std::string("env -u OMPI_COMM_WORLD_SIZE -u PMI_SIZE -u PMIX_RANK ") +
                                    KILN_DISTRIBUTED_WORKER + " collectives");
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_NE(run.output.find("error: init_process_group: this program was not started by an MPI launcher"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("`kiln launch -n N PROGRAM`"), std::string::npos) << run.output;
}

TEST(InitProcessGroup, AnUnknownBackendIsAnError) {
  distributed::ProcessGroupOptions options;
  options.backend = "gloo";
  try {
    distributed::init_process_group(options);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "init_process_group: unknown backend 'gloo' (known: mpi, nccl)");
  }
}

// Sets an environment variable for one scope, then restores it.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedVariable() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string nccl_init_error() {
  distributed::ProcessGroupOptions options;
  options.backend = "nccl";
  try {
    distributed::init_process_group(options);
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

// Why this machine cannot run a NCCL job of 2 ranks; std::nullopt when it can.
std::optional<std::string> no_nccl_job_reason() {
  try {
    cuda::nccl_library();
  } catch (const Error& error) {
    return std::string(error.what());
  }
  if (std::optional<std::string> reason = cuda::cuda_unavailable_reason()) return reason;
  if (int devices = cuda::cuda_driver().device_count(); devices < 2)
    return "the nccl job needs 2 GPUs (one per rank; NCCL refuses two ranks on one), this machine has " +
           std::to_string(devices);
  return std::nullopt;
}

TEST(NcclBackend, AMissingLibraryIsAnErrorThatNamesTheVariable) {
  ScopedVariable library("KILN_NCCL_LIBRARY", "/nonexistent/libnccl.so.2");
  const std::string error = nccl_init_error();
  EXPECT_EQ(error.rfind("init_process_group: NCCL was not found: ", 0), 0u) << error;
  EXPECT_NE(error.find("set $KILN_NCCL_LIBRARY"), std::string::npos) << error;
  EXPECT_NE(error.find("/nonexistent/libnccl.so.2"), std::string::npos) << error;
}

TEST(NcclBackend, ALibraryThatIsNotNcclIsAnError) {
  ScopedVariable library("KILN_NCCL_LIBRARY", "libm.so.6");
  const std::string error = nccl_init_error();
  EXPECT_EQ(error, "init_process_group: NCCL was not found: libm.so.6 lacks ncclGetVersion (not NCCL, or a NCCL older "
                   "than 2.10); set $KILN_NCCL_LIBRARY to a NCCL 2.10 or later")
      << error;
}

TEST(NcclBackend, WithoutAGpuTheErrorSaysSo) {
  try {
    cuda::nccl_library();
  } catch (const Error& error) {
    GTEST_SKIP() << "NCCL is not installed here: " << error.what();
  }
  const std::optional<std::string> no_gpu = cuda::cuda_unavailable_reason();
  if (!no_gpu) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_EQ(nccl_init_error(), "init_process_group: the nccl backend needs a CUDA GPU: " + *no_gpu);
}

TEST(NcclBackend, TheLibraryLoadsWhereInstalled) {
  try {
    const cuda::NcclLibrary& nccl = cuda::nccl_library();
    EXPECT_GE(nccl.version(), cuda::kNcclMinimumVersion) << nccl.version_text();
    EXPECT_EQ(nccl.error_text(cuda::ncclInvalidArgument).rfind("ncclInvalidArgument (", 0), 0u)
        << nccl.error_text(cuda::ncclInvalidArgument);
  } catch (const Error& error) {
    GTEST_SKIP() << "NCCL is not installed here: " << error.what();
  }
}

TEST(NcclBackend, DTypes) {
  EXPECT_EQ(cuda::nccl_data_type(DType::f32), cuda::ncclFloat32);
  EXPECT_EQ(cuda::nccl_data_type(DType::f16), cuda::ncclFloat16);
  EXPECT_EQ(cuda::nccl_data_type(DType::bf16), cuda::ncclBfloat16);
  EXPECT_EQ(cuda::nccl_data_type(DType::f64), cuda::ncclFloat64);
  EXPECT_EQ(cuda::nccl_data_type(DType::i32), cuda::ncclInt32);
  EXPECT_EQ(cuda::nccl_data_type(DType::i64), cuda::ncclInt64);
  EXPECT_EQ(cuda::nccl_data_type(DType::u8), cuda::ncclUint8);
  EXPECT_EQ(cuda::nccl_data_type(DType::i8), cuda::ncclInt8);
  EXPECT_EQ(cuda::nccl_data_type(DType::i16), -1);
  EXPECT_EQ(cuda::nccl_data_type(DType::boolean), -1);
}

// A CUDA tensor over an address that is never read (the checks come first).
Tensor unreadable_cuda_tensor(const Sizes& sizes, const Sizes& strides, DType dtype, int device) {
  auto storage = std::make_shared<Storage>(reinterpret_cast<void*>(uintptr_t(0x1000)), 4096, Device::cuda(device),
                                           [](void*) {});
  return Tensor(storage, sizes, strides, 0, dtype);
}

std::string nccl_tensor_error(const Tensor& tensor) {
  try {
    compiler::check_nccl_tensor(tensor, "all_reduce", 0);
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(NcclBackend, ACpuTensorIsRefused) {
  EXPECT_EQ(nccl_tensor_error(Tensor::full({2}, 1, DType::f32)),
            "all_reduce: the tensor is on cpu; the nccl backend moves CUDA tensors (CPU tensors need the mpi backend: "
            "ProcessGroupOptions::backend = \"mpi\")");
}

TEST(NcclBackend, TensorsItCannotMoveAreRefused) {
  EXPECT_EQ(nccl_tensor_error(unreadable_cuda_tensor({4}, {1}, DType::f32, 0)), "(no error)");
  EXPECT_EQ(nccl_tensor_error(unreadable_cuda_tensor({4}, {1}, DType::f32, 1)),
            "all_reduce: the tensor is on cuda:1; this rank's nccl group is on cuda:0");
  EXPECT_EQ(nccl_tensor_error(unreadable_cuda_tensor({2, 3}, {1, 2}, DType::f32, 0)),
            "all_reduce: the nccl backend moves contiguous tensors; this one has sizes [2, 3] and strides [1, 2]");
  EXPECT_EQ(nccl_tensor_error(unreadable_cuda_tensor({4}, {1}, DType::i16, 0)),
            "all_reduce: NCCL has no i16 (the nccl backend moves f32, f64, f16, bf16, i8, u8, i32, i64, u32 and u64)");
}

TEST(NcclBackend, CollectivesEqualTheMpiBackendsOnTwoGpus) {
  KILN_SKIP_WITHOUT_MPI();
  if (std::optional<std::string> reason = no_nccl_job_reason()) GTEST_SKIP() << *reason;
  const JobResult job = run_worker_job(2, "nccl");
  EXPECT_EQ(job.status, 0) << job.output;
  for (const char* rank : {"rank 0: ", "rank 1: "}) {
    EXPECT_NE(job.output.find(std::string(rank) + "nccl ok"), std::string::npos) << job.output;
    EXPECT_NE(job.output.find(std::string(rank) + "nccl cpu tensor error: all_reduce: the tensor is on cpu"),
              std::string::npos)
        << job.output;
    EXPECT_NE(job.output.find(std::string(rank) + "mpi cuda tensor error: all_reduce: the tensor is on cuda:"),
              std::string::npos)
        << job.output;
  }
}

TEST(InitProcessGroup, ANonPositiveTimeoutIsAnError) {
  distributed::ProcessGroupOptions options;
  options.timeout_seconds = 0;
  try {
    distributed::init_process_group(options);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "init_process_group: timeout_seconds is 0; it must be a positive number of seconds");
  }
}

}  // namespace
}  // namespace kiln::distributed_test
