// The NCCL process group. See compiler/distributed/nccl_process_group.h.
#include "compiler/distributed/nccl_process_group.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "compiler/distributed/mpi_process_group.h"
#include "kiln/error.h"
#include "runtime/cuda/cuda_stream.h"
#include "runtime/cuda/nccl.h"
#include "runtime/strides.h"

namespace kiln::compiler {

namespace {

using cuda::CUdeviceptr;
using cuda::ncclComm_t;
using cuda::ncclResult_t;
using Clock = std::chrono::steady_clock;

// The launcher's rank of this process among those on its machine; -1 when it does not say.
int launcher_local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK"})
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') return std::atoi(value);
  return -1;
}

// Sleeps a little longer the longer a wait lasts (at most 1 ms), as the mpi backend does.
void pause(int64_t polls) {
  if (polls < 1000)
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(std::chrono::microseconds(std::min<int64_t>(1000, (polls - 999) * 10)));
}

// ncclCommInitRank's outcome, written by the thread that calls it.
struct CommunicatorInit {
  std::mutex mutex;
  bool done = false;
  ncclResult_t result = cuda::ncclSuccess;
  ncclComm_t comm = nullptr;
};

class NcclProcessGroup final : public distributed::ProcessGroup {
 public:
  NcclProcessGroup(std::shared_ptr<distributed::ProcessGroup> mpi, const cuda::NcclLibrary& nccl,
                   const distributed::ProcessGroupOptions& options)
      : mpi_(std::move(mpi)), nccl_(nccl), api_(nccl.api()), timeout_seconds_(options.timeout_seconds) {
    try {
      const int devices = cuda::cuda_driver().device_count();
      const int local_rank = launcher_local_rank();
      device_ = options.device >= 0 ? options.device : (local_rank >= 0 ? local_rank : rank()) % devices;
      if (device_ >= devices)
        fail("init_process_group: ProcessGroupOptions::device is ", device_, " but this machine has ", devices,
             " CUDA device", devices == 1 ? "" : "s");
      context_ = std::make_shared<cuda::CudaContext>(device_);
      stream_ = std::make_unique<cuda::CudaStream>(*context_);
      completion_ = std::make_unique<cuda::CudaEvent>(*context_);
      cuda::ncclUniqueId id{};
      if (rank() == 0) check(api_.ncclGetUniqueId(&id), "init_process_group (ncclGetUniqueId)");
      Tensor id_bytes = Tensor::empty({cuda::kNcclUniqueIdBytes}, DType::u8);
      std::memcpy(id_bytes.data_ptr(), id.internal, sizeof id.internal);
      mpi_->broadcast(id_bytes, 0);
      std::memcpy(id.internal, id_bytes.data_ptr(), sizeof id.internal);
      comm_ = make_communicator(id);
      barrier_scalar_ = empty_tensor({1}, DType::f32, Device::cuda(device_));
    } catch (const Error& error) {
      // The other ranks wait in the id's broadcast or in ncclCommInitRank: tell them.
      mpi_->abort(error.what());
      throw;
    }
  }

  ~NcclProcessGroup() override {
    if (!broken_.empty() || std::uncaught_exceptions() > 0) {
      abort(broken_.empty() ? "it stopped with an exception (its own error message says which)" : broken_);
      return;
    }
    barrier_scalar_ = Tensor();
    try {
      stream_->synchronize();
    } catch (const Error&) {
    }
    if (comm_ != nullptr) api_.ncclCommDestroy(comm_);
  }

  std::string backend() const override { return "nccl"; }
  // Each collective makes the device's context current on its thread, and polls the MPI group.
  bool collectives_on_any_thread() const override { return mpi_->collectives_on_any_thread(); }
  int rank() const override { return mpi_->rank(); }
  int world_size() const override { return mpi_->world_size(); }

  void abort(const std::string& reason) override {
    if (broken_.empty()) broken_ = "this rank aborted: " + reason;
    abort_communicator();
    mpi_->abort(reason);
  }

 protected:
  void check_tensor(const Tensor& tensor, const char* collective) const override {
    check_nccl_tensor(tensor, collective, device_);
  }

  // Device memory of the group's device, freed by the tensor's storage.
  Tensor empty_tensor(const Sizes& sizes, DType dtype, Device device) const override {
    KILN_CHECK(device == Device::cuda(device_), "the nccl group allocates on its own device");
    const std::optional<size_t> nbytes = checked_nbytes(sizes, dtype);
    if (!nbytes) fail("out of memory: a ", dtype_name(dtype), " tensor of shape ", sizes_to_string(sizes), " is too large");
    const cuda::DriverFunctions& driver = context_->driver().api();
    context_->make_current();
    CUdeviceptr address = 0;
    if (*nbytes > 0) context_->driver().check(driver.cuMemAlloc(&address, *nbytes), "cuMemAlloc");
    std::shared_ptr<cuda::CudaContext> context = context_;
    auto storage = std::make_shared<Storage>(reinterpret_cast<void*>(uintptr_t(address)), *nbytes, device,
                                             [context](void* pointer) {
                                               if (pointer == nullptr) return;
                                               context->make_current();
                                               context->driver().api().cuMemFree(CUdeviceptr(uintptr_t(pointer)));
                                             });
    return Tensor(std::move(storage), sizes, contiguous_strides(sizes), 0, dtype);
  }

  void run_barrier() override {
    check_usable("barrier");
    enter("barrier");
    check(api_.ncclAllReduce(barrier_scalar_.data_ptr(), barrier_scalar_.data_ptr(), 1, cuda::ncclFloat32, cuda::ncclSum,
                             comm_, stream_->handle()),
          "barrier");
    wait("barrier");
  }

  void run_broadcast(const Tensor& tensor, int root) override {
    check_usable("broadcast");
    enter("broadcast");
    void* data = tensor.data_ptr();
    check(api_.ncclBroadcast(data, data, size_t(tensor.numel()), cuda::nccl_data_type(tensor.dtype()), root, comm_,
                             stream_->handle()),
          "broadcast");
    wait("broadcast");
  }

  void run_all_reduce(const Tensor& tensor, distributed::ReduceOp op) override {
    check_usable("all_reduce");
    enter("all_reduce");
    void* data = tensor.data_ptr();
    const cuda::ncclRedOp_t nccl_op = op == distributed::ReduceOp::average ? cuda::ncclAvg : cuda::ncclSum;
    check(api_.ncclAllReduce(data, data, size_t(tensor.numel()), cuda::nccl_data_type(tensor.dtype()), nccl_op, comm_,
                             stream_->handle()),
          "all_reduce");
    wait("all_reduce");
  }

  void run_all_gather(const Tensor& tensor, const Tensor& gathered) override {
    check_usable("all_gather");
    enter("all_gather");
    check(api_.ncclAllGather(tensor.data_ptr(), gathered.data_ptr(), size_t(tensor.numel()),
                             cuda::nccl_data_type(tensor.dtype()), comm_, stream_->handle()),
          "all_gather");
    wait("all_gather");
  }

 private:
  // ncclCommInitRank on a thread of its own: it blocks until every rank has called it, and a rank
  // that died before would leave it blocked for ever. On a timeout or another rank's failure the
  // thread is left behind (the process is expected to end with the error).
  ncclComm_t make_communicator(const cuda::ncclUniqueId& id) {
    auto init = std::make_shared<CommunicatorInit>();
    std::thread([init, api = &api_, context = context_, id, ranks = world_size(), rank = rank()] {
      ncclComm_t comm = nullptr;
      ncclResult_t result = cuda::ncclInternalError;
      try {
        context->make_current();
        result = api->ncclCommInitRank(&comm, ranks, id, rank);
      } catch (const Error&) {
      }
      std::lock_guard<std::mutex> lock(init->mutex);
      init->done = true;
      init->result = result;
      init->comm = comm;
    }).detach();
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds_);
    for (int64_t polls = 0;; ++polls) {
      {
        std::lock_guard<std::mutex> lock(init->mutex);
        if (init->done) {
          check(init->result, "init_process_group (ncclCommInitRank)");
          return init->comm;
        }
      }
      if (std::optional<std::string> notice = mpi_failure_notice(*mpi_)) {
        broken_ = *notice;
        fail("init_process_group on rank ", rank(), ": ", *notice);
      }
      if (Clock::now() >= deadline)
        fail("init_process_group on rank ", rank(), " timed out after ", timeout_seconds_,
             " s in ncclCommInitRank: another rank died, hangs, or did not call init_process_group "
             "(ProcessGroupOptions::timeout_seconds)");
      pause(polls);
    }
  }

  void check_usable(const char* collective) const {
    if (!broken_.empty())
      fail(collective, " on rank ", rank(), ": the process group failed earlier (", broken_,
           ") and cannot be used again");
  }

  void enter(const char* collective) {
    try {
      context_->make_current();
    } catch (const Error& error) {
      broken_ = error.what();
      throw;
    }
    (void)collective;
  }

  void abort_communicator() {
    if (comm_ == nullptr) return;
    api_.ncclCommAbort(comm_);
    comm_ = nullptr;
  }

  std::string nccl_error(ncclResult_t result) const {
    std::string text = nccl_.error_text(result);
    if (api_.ncclGetLastError != nullptr && comm_ != nullptr) {
      const char* last = api_.ncclGetLastError(comm_);
      if (last != nullptr && *last != '\0') text += ": " + std::string(last);
    }
    return text;
  }

  void check(ncclResult_t result, const std::string& what) {
    if (result == cuda::ncclSuccess) return;
    const std::string text = nccl_error(result);
    broken_ = what + " failed in NCCL: " + text;
    abort_communicator();
    fail(what, " on rank ", rank(), ": NCCL failed: ", text);
  }

  // Waits until the collective just enqueued has completed on the device, NCCL reports an error,
  // another rank's failure notice arrives, or the timeout passes.
  void wait(const char* collective) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds_);
    try {
      completion_->record(*stream_);
    } catch (const Error& error) {
      broken_ = error.what();
      abort_communicator();
      throw;
    }
    for (int64_t polls = 0;; ++polls) {
      bool done = false;
      try {
        done = completion_->done();
      } catch (const Error& error) {
        broken_ = std::string(collective) + " failed on the GPU: " + error.what();
        abort_communicator();
        fail(collective, " on rank ", rank(), ": ", error.what());
      }
      if (done) return;
      ncclResult_t async = cuda::ncclSuccess;
      const ncclResult_t queried = api_.ncclCommGetAsyncError(comm_, &async);
      if (queried != cuda::ncclSuccess) async = queried;
      if (async != cuda::ncclSuccess && async != cuda::ncclInProgress) check(async, collective);
      if (std::optional<std::string> notice = mpi_failure_notice(*mpi_)) {
        broken_ = *notice;
        abort_communicator();
        fail(collective, " on rank ", rank(), ": ", *notice);
      }
      if (Clock::now() >= deadline) {
        broken_ = std::string(collective) + " timed out";
        abort_communicator();
        fail(collective, " on rank ", rank(), " timed out after ", timeout_seconds_, " s: another rank died, hangs, or ",
             "did not call ", collective, " (ProcessGroupOptions::timeout_seconds)");
      }
      pause(polls);
    }
  }

  std::shared_ptr<distributed::ProcessGroup> mpi_;
  const cuda::NcclLibrary& nccl_;
  const cuda::NcclFunctions& api_;
  double timeout_seconds_;
  int device_ = 0;
  std::shared_ptr<cuda::CudaContext> context_;
  std::unique_ptr<cuda::CudaStream> stream_;
  std::unique_ptr<cuda::CudaEvent> completion_;
  ncclComm_t comm_ = nullptr;
  Tensor barrier_scalar_;  // device memory for barrier()'s all-reduce
  std::string broken_;     // why the group is unusable; empty while it is usable
};

}  // namespace

void check_nccl_tensor(const Tensor& tensor, const char* collective, int device) {
  if (tensor.device().is_cpu())
    fail(collective, ": the tensor is on cpu; the nccl backend moves CUDA tensors (CPU tensors need the mpi backend: ",
         "ProcessGroupOptions::backend = \"mpi\")");
  if (tensor.device() != Device::cuda(device))
    fail(collective, ": the tensor is on ", tensor.device().to_string(), "; this rank's nccl group is on cuda:", device);
  if (!tensor.is_contiguous())
    fail(collective, ": the nccl backend moves contiguous tensors; this one has sizes ", sizes_to_string(tensor.sizes()),
         " and strides ", sizes_to_string(tensor.strides()));
  if (cuda::nccl_data_type(tensor.dtype()) < 0)
    fail(collective, ": NCCL has no ", dtype_name(tensor.dtype()),
         " (the nccl backend moves f32, f64, f16, bf16, i8, u8, i32, i64, u32 and u64)");
}

std::shared_ptr<distributed::ProcessGroup> nccl_process_group(const distributed::ProcessGroupOptions& options) {
  static std::mutex mutex;
  static std::weak_ptr<distributed::ProcessGroup> current;
  std::lock_guard<std::mutex> lock(mutex);
  if (std::shared_ptr<distributed::ProcessGroup> group = current.lock()) return group;
  const cuda::NcclLibrary* nccl = nullptr;
  try {
    nccl = &cuda::nccl_library();
  } catch (const Error& error) {
    fail("init_process_group: ", error.what());
  }
  if (std::optional<std::string> reason = cuda::cuda_unavailable_reason())
    fail("init_process_group: the nccl backend needs a CUDA GPU: ", *reason);
  std::shared_ptr<distributed::ProcessGroup> mpi = mpi_process_group(options);
  auto group = std::make_shared<NcclProcessGroup>(std::move(mpi), *nccl, options);
  current = group;
  return group;
}

}  // namespace kiln::compiler
