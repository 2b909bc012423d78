// The MPI process group. See compiler/distributed/mpi_process_group.h.
#include "compiler/distributed/mpi_process_group.h"

#include <cstdlib>
#include <mutex>
#include <string>

#include "kiln/error.h"

#if KILN_HAVE_MPI

// Open MPI's and MPICH's mpi.h declare MPI's deprecated C++ bindings in C++ unless told not to.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <exception>
#include <optional>
#include <thread>
#include <vector>

namespace kiln::compiler {

namespace {

constexpr int kMpiAbortTag = 1;
constexpr int kAbortMessageBytes = 1024;
// Bytes per MPI call at most: MPI's counts are ints.
constexpr int64_t kChunkBytes = int64_t(1) << 30;
// How long abort() waits for its notices to leave (they are small: MPI sends them eagerly).
constexpr double kAbortSendSeconds = 2.0;
// How long a process whose group failed waits at exit (see linger_at_exit).
constexpr double kExitGraceSeconds = 0.5;

// Whether a launcher started this process: Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE, MPICH's
// and other PMI launchers PMI_SIZE, PMIx launchers PMIX_RANK. Without one, MPI_Init would make
// a job of one process and the program would train alone without saying so.
bool started_by_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name)) return true;
  return false;
}

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, size_t(length));
}

MPI_Datatype reduction_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::i8:
      return MPI_INT8_T;
    case DType::i16:
      return MPI_INT16_T;
    case DType::i32:
      return MPI_INT32_T;
    case DType::i64:
      return MPI_INT64_T;
    case DType::u8:
      return MPI_UINT8_T;
    case DType::u16:
      return MPI_UINT16_T;
    case DType::u32:
      return MPI_UINT32_T;
    case DType::u64:
      return MPI_UINT64_T;
    default:
      KILN_CHECK(false, "no MPI reduction type for ", dtype_name(dtype));
  }
  return MPI_DATATYPE_NULL;
}

// Divides each of `count` elements by `divisor` (an average's last step), in the tensor's dtype.
void divide_elements(const Tensor& tensor, int divisor) {
  if (tensor.dtype() == DType::f32) {
    float* values = tensor.data<float>();
    for (int64_t i = 0; i < tensor.numel(); ++i) values[i] /= float(divisor);
  } else {
    KILN_CHECK(tensor.dtype() == DType::f64, "averages are computed in f32 or f64");
    double* values = tensor.data<double>();
    for (int64_t i = 0; i < tensor.numel(); ++i) values[i] /= double(divisor);
  }
}

// Makes this process wait a moment when it exits: once one rank of a job exits with an error,
// mpirun ends the others, and a rank ended before it printed its own error would leave the user
// without it (they take a failure notice within a millisecond, and print it right after).
void linger_at_exit() {
  static std::once_flag registered;
  std::call_once(registered, [] {
    std::atexit([] { std::this_thread::sleep_for(std::chrono::duration<double>(kExitGraceSeconds)); });
  });
}

class MpiProcessGroup final : public distributed::ProcessGroup {
 public:
  MpiProcessGroup(double timeout_seconds, bool owns_mpi) : timeout_seconds_(timeout_seconds), owns_mpi_(owns_mpi) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "init_process_group");
    check(MPI_Comm_dup(MPI_COMM_WORLD, &abort_comm_), "init_process_group");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(abort_comm_, MPI_ERRORS_RETURN);
    check(MPI_Irecv(abort_message_, kAbortMessageBytes, MPI_CHAR, MPI_ANY_SOURCE, kMpiAbortTag, abort_comm_,
                    &abort_receive_),
          "init_process_group");
  }

  ~MpiProcessGroup() override {
    if (!broken_.empty() || std::uncaught_exceptions() > 0) {
      // The other ranks learn why (unless another rank's failure is the reason, which they know);
      // no MPI_Finalize with a collective pending (see the header).
      abort(broken_.empty() ? "it stopped with an exception (its own error message says which)" : broken_);
      return;
    }
    MPI_Cancel(&abort_receive_);
    MPI_Wait(&abort_receive_, MPI_STATUS_IGNORE);
    MPI_Comm_free(&abort_comm_);
    MPI_Comm_free(&comm_);
    if (owns_mpi_) MPI_Finalize();
  }

  std::string backend() const override { return "mpi"; }
  bool collectives_on_any_thread() const override {
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    return level >= MPI_THREAD_SERIALIZED;
  }
  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }

  void abort(const std::string& reason) override {
    linger_at_exit();
    if (broken_.empty()) broken_ = "this rank aborted: " + reason;
    if (abort_received_ || sent_abort_) return;  // every rank was told already
    sent_abort_ = true;
    abort_notice_ = "rank " + std::to_string(rank_) + " failed: " + reason;
    abort_notice_.resize(std::min<size_t>(abort_notice_.size(), kAbortMessageBytes));
    std::vector<MPI_Request> sends;
    for (int other = 0; other < world_size_; ++other) {
      if (other == rank_) continue;
      MPI_Request request;
      if (MPI_Isend(abort_notice_.data(), int(abort_notice_.size()), MPI_CHAR, other, kMpiAbortTag, abort_comm_,
                    &request) == MPI_SUCCESS)
        sends.push_back(request);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kAbortSendSeconds);
    int done = 0;
    while (!sends.empty() && std::chrono::steady_clock::now() < deadline) {
      if (MPI_Testall(int(sends.size()), sends.data(), &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS || done) break;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  // Another rank's failure notice, once it has arrived (the group is then broken).
  std::optional<std::string> failure_notice() {
    std::string notice;
    if (!poll_abort_notice(notice)) return std::nullopt;
    broken_ = notice;
    return notice;
  }

 protected:
  void run_barrier() override {
    check_usable("barrier");
    MPI_Request request;
    check(MPI_Ibarrier(comm_, &request), "barrier");
    wait(request, "barrier");
  }

  void run_broadcast(const Tensor& tensor, int root) override {
    check_usable("broadcast");
    const Tensor work = tensor.contiguous();
    char* bytes = static_cast<char*>(work.data_ptr());
    for (int64_t offset = 0; offset < int64_t(work.nbytes()); offset += kChunkBytes) {
      const int count = int(std::min<int64_t>(kChunkBytes, int64_t(work.nbytes()) - offset));
      MPI_Request request;
      check(MPI_Ibcast(bytes + offset, count, MPI_BYTE, root, comm_, &request), "broadcast");
      wait(request, "broadcast");
    }
    if (work.data_ptr() != tensor.data_ptr()) tensor.copy_from(work);
  }

  void run_all_reduce(const Tensor& tensor, distributed::ReduceOp op) override {
    check_usable("all_reduce");
    // f16 and bf16 are summed in f32; anything not contiguous through a contiguous copy.
    const bool half = tensor.dtype() == DType::f16 || tensor.dtype() == DType::bf16;
    const Tensor work = half ? tensor.to(DType::f32).contiguous() : tensor.contiguous();
    const MPI_Datatype type = reduction_type(work.dtype());
    const int64_t chunk = kChunkBytes / int64_t(work.element_size());
    char* bytes = static_cast<char*>(work.data_ptr());
    for (int64_t first = 0; first < work.numel(); first += chunk) {
      const int count = int(std::min<int64_t>(chunk, work.numel() - first));
      MPI_Request request;
      check(MPI_Iallreduce(MPI_IN_PLACE, bytes + first * int64_t(work.element_size()), count, type, MPI_SUM, comm_,
                           &request),
            "all_reduce");
      wait(request, "all_reduce");
    }
    if (op == distributed::ReduceOp::average) divide_elements(work, world_size_);
    if (work.data_ptr() != tensor.data_ptr() || work.dtype() != tensor.dtype()) tensor.copy_from(work);
  }

  void run_all_gather(const Tensor& tensor, const Tensor& gathered) override {
    check_usable("all_gather");
    const Tensor work = tensor.contiguous();
    if (int64_t(work.nbytes()) > kChunkBytes)
      fail("all_gather: the tensor holds ", work.nbytes(), " bytes; the mpi backend gathers at most ", kChunkBytes,
           " bytes per rank in one call");
    MPI_Request request;
    check(MPI_Iallgather(work.data_ptr(), int(work.nbytes()), MPI_BYTE, gathered.data_ptr(), int(work.nbytes()),
                         MPI_BYTE, comm_, &request),
          "all_gather");
    wait(request, "all_gather");
  }

 private:
  void check_usable(const char* collective) const {
    if (!broken_.empty())
      fail(collective, " on rank ", rank_, ": the process group failed earlier (", broken_,
           ") and cannot be used again");
  }

  void check_tensor(const Tensor& tensor, const char* collective) const override {
    if (!tensor.device().is_cpu())
      fail(collective, ": the tensor is on ", tensor.device().to_string(),
           "; the mpi backend moves CPU tensors (CUDA tensors need the nccl backend: ProcessGroupOptions::backend = "
           "\"nccl\")");
  }

  void check(int code, const char* collective) {
    if (code == MPI_SUCCESS) return;
    broken_ = std::string(collective) + " failed in MPI: " + mpi_error_text(code);
    fail(collective, " on rank ", rank_, ": MPI failed: ", mpi_error_text(code));
  }

  // The other ranks' failure, once one has told this rank about it.
  bool poll_abort_notice(std::string& notice) {
    if (abort_received_) return false;
    int arrived = 0;
    MPI_Status status;
    if (MPI_Test(&abort_receive_, &arrived, &status) != MPI_SUCCESS || !arrived) return false;
    int length = 0;
    MPI_Get_count(&status, MPI_CHAR, &length);
    abort_received_ = true;
    notice.assign(abort_message_, size_t(std::max(length, 0)));
    return true;
  }

  // Polls `request` until it completes, another rank's abort notice arrives, or the timeout.
  void wait(MPI_Request& request, const char* collective) {
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + std::chrono::duration<double>(timeout_seconds_);
    for (int64_t polls = 0;; ++polls) {
      int done = 0;
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), collective);
      if (done) return;
      std::string notice;
      if (poll_abort_notice(notice)) {
        broken_ = notice;
        fail(collective, " on rank ", rank_, ": ", notice);
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        broken_ = std::string(collective) + " timed out";
        fail(collective, " on rank ", rank_, " timed out after ", timeout_seconds_, " s: another rank died, hangs, or ",
             "did not call ", collective, " (ProcessGroupOptions::timeout_seconds)");
      }
      if (polls < 1000) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(std::min<int64_t>(1000, (polls - 999) * 10)));
      }
    }
  }

  double timeout_seconds_;
  bool owns_mpi_;
  int rank_ = 0;
  int world_size_ = 1;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm abort_comm_ = MPI_COMM_NULL;
  MPI_Request abort_receive_ = MPI_REQUEST_NULL;
  char abort_message_[kAbortMessageBytes] = {};
  bool abort_received_ = false;
  bool sent_abort_ = false;
  std::string abort_notice_;  // what abort() sent (the sends read it)
  std::string broken_;        // why the group is unusable; empty while it is usable
};

}  // namespace

std::shared_ptr<distributed::ProcessGroup> mpi_process_group(const distributed::ProcessGroupOptions& options) {
  static std::mutex mutex;
  static std::weak_ptr<distributed::ProcessGroup> current;
  std::lock_guard<std::mutex> lock(mutex);
  if (std::shared_ptr<distributed::ProcessGroup> group = current.lock()) return group;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized)
    fail(
        "init_process_group: MPI was finalized in this process when its last process group was destroyed, and MPI "
        "cannot start twice in one process (keep the group alive for the whole program)");
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    if (!started_by_launcher())
      fail(
          "init_process_group: this program was not started by an MPI launcher (OMPI_COMM_WORLD_SIZE, PMI_SIZE and "
          "PMIX_RANK are unset); run it as `mpirun -np N PROGRAM` or `kiln launch -n N PROGRAM`");
    int provided = 0;
    const int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (code != MPI_SUCCESS) fail("init_process_group: MPI_Init_thread failed: ", mpi_error_text(code));
  }
  auto group = std::make_shared<MpiProcessGroup>(options.timeout_seconds, !initialized);
  current = group;
  return group;
}

std::optional<std::string> mpi_failure_notice(distributed::ProcessGroup& group) {
  auto* mpi = dynamic_cast<MpiProcessGroup*>(&group);
  KILN_CHECK(mpi != nullptr, "mpi_failure_notice: not an mpi process group");
  return mpi->failure_notice();
}

}  // namespace kiln::compiler

#else  // no MPI in this build

namespace kiln::compiler {

std::shared_ptr<distributed::ProcessGroup> mpi_process_group(const distributed::ProcessGroupOptions&) {
  fail(
      "init_process_group: this build of Kiln has no MPI (install Debian's libopenmpi-dev and openmpi-bin, then "
      "configure again: scripts/setup does both)");
}

std::optional<std::string> mpi_failure_notice(distributed::ProcessGroup&) { return std::nullopt; }

}  // namespace kiln::compiler

#endif
