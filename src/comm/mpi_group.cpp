// The MPI process group: a communicator, owned when split off, and the MPI
// library's life (compiled only with MPI).
#include <chrono>
#include <cstdlib>
#include <limits>
#include <thread>

#include <unistd.h>

#include <fmt/format.h>

#include "fabricbench/comm/comm.hpp"
#include "fabricbench/comm/detail/backend.hpp"
#include "fabricbench/comm/mpi_check.hpp"
#include "fabricbench/core/error.hpp"

namespace fabricbench {
namespace detail {
namespace {

MPI_Datatype mpi_type(Scalar type) {
  switch (type) {
    case Scalar::f64:
      return MPI_DOUBLE;
    case Scalar::u64:
      return MPI_UINT64_T;
    case Scalar::i64:
      return MPI_INT64_T;
  }
  return MPI_DATATYPE_NULL;
}

std::size_t scalar_bytes(Scalar type) { return type == Scalar::f64 ? sizeof(double) : sizeof(std::uint64_t); }

MPI_Op mpi_op(Reduction op) {
  switch (op) {
    case Reduction::sum:
      return MPI_SUM;
    case Reduction::min:
      return MPI_MIN;
    case Reduction::max:
      return MPI_MAX;
  }
  return MPI_OP_NULL;
}

int mpi_count(std::size_t n, const char* what) {
  if (n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw SystemError(fmt::format("{}: {} elements exceed what one MPI call carries", what, n));
  return static_cast<int>(n);
}

class MpiBackend final : public CommBackend {
 public:
  MpiBackend(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {}
  MpiBackend(const MpiBackend&) = delete;
  MpiBackend& operator=(const MpiBackend&) = delete;
  ~MpiBackend() override {
    if (!owned_) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized == 0) MPI_Comm_free(&comm_);
  }

  [[nodiscard]] MPI_Comm handle() const { return comm_; }

  [[nodiscard]] int rank() const override {
    int r = 0;
    FB_MPI_CHECK(MPI_Comm_rank(comm_, &r));
    return r;
  }
  [[nodiscard]] int size() const override {
    int n = 1;
    FB_MPI_CHECK(MPI_Comm_size(comm_, &n));
    return n;
  }

  void barrier() override { FB_MPI_CHECK(MPI_Barrier(comm_)); }

  void quiet_barrier() override {
    MPI_Request request = MPI_REQUEST_NULL;
    FB_MPI_CHECK(MPI_Ibarrier(comm_, &request));
    int done = 0;
    FB_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    while (done == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // why not less: Comm::quiet_barrier
      FB_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    }
  }

  void broadcast(std::span<std::byte> data, int root) override {
    FB_MPI_CHECK(MPI_Bcast(data.data(), mpi_count(data.size(), "broadcast"), MPI_BYTE, root, comm_));
  }

  void allreduce(std::span<std::byte> values, Scalar type, Reduction op) override {
    const int count = mpi_count(values.size() / scalar_bytes(type), "allreduce");
    FB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values.data(), count, mpi_type(type), mpi_op(op), comm_));
  }

  void allgather_fixed(std::span<const std::byte> mine, std::span<std::byte> all) override {
    const int count = mpi_count(mine.size(), "allgather");
    FB_MPI_CHECK(MPI_Allgather(mine.data(), count, MPI_BYTE, all.data(), count, MPI_BYTE, comm_));
  }

  std::vector<std::string> allgather_bytes(std::string_view mine) override {
    const int n = size();
    int length = mpi_count(mine.size(), "allgather");
    std::vector<int> lengths(static_cast<std::size_t>(n));
    FB_MPI_CHECK(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_));
    std::vector<int> offsets(static_cast<std::size_t>(n));
    std::size_t total = 0;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
      offsets[i] = mpi_count(total, "allgather");
      total += static_cast<std::size_t>(lengths[i]);
    }
    (void)mpi_count(total, "allgather");
    std::string all(total, '\0');
    FB_MPI_CHECK(
        MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, comm_));
    std::vector<std::string> out;
    out.reserve(lengths.size());
    for (std::size_t i = 0; i < lengths.size(); ++i)
      out.push_back(all.substr(static_cast<std::size_t>(offsets[i]), static_cast<std::size_t>(lengths[i])));
    return out;
  }

  std::unique_ptr<CommBackend> split(int color, int key) override {
    MPI_Comm out = MPI_COMM_NULL;
    FB_MPI_CHECK(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &out));
    if (out == MPI_COMM_NULL) return nullptr;
    return adopt(out);
  }

  std::unique_ptr<CommBackend> split_shared() override {
    MPI_Comm out = MPI_COMM_NULL;
    FB_MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank(), MPI_INFO_NULL, &out));
    return adopt(out);
  }

  void fail(const std::string& /*why*/) noexcept override {}

  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(comm_, exit_code);
    std::exit(exit_code);  // NOLINT(concurrency-mt-unsafe): MPI_Abort does not return
  }

 private:
  static std::unique_ptr<CommBackend> adopt(MPI_Comm comm) {
    auto owned = std::make_unique<MpiBackend>(comm, true);
    // Errors come back as codes that FB_MPI_CHECK turns into exceptions.
    FB_MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    return owned;
  }

  MPI_Comm comm_;
  bool owned_;
};

}  // namespace

std::unique_ptr<CommBackend> make_world_backend() { return std::make_unique<MpiBackend>(MPI_COMM_WORLD, false); }

}  // namespace detail

MPI_Comm native_handle(const Comm& comm) {
  const auto* mpi = dynamic_cast<const detail::MpiBackend*>(detail::CommAccess::backend(comm));
  if (mpi == nullptr) throw UsageError("the MPI transport needs a group of MPI processes (launched by mpirun or srun)");
  return mpi->handle();
}

void throw_mpi_error(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  throw SystemError(describe_failure(
      call, file, line,
      fmt::format("{} (host {}, rank {})", std::string(text, static_cast<std::size_t>(length)), host, rank)));
}

MpiSession::MpiSession(int* argc, char*** argv) {
  // Plain MPI_Init (MPI_THREAD_SINGLE): only the main thread calls MPI, and
  // Open MPI switches its locking code paths on for any higher level, which
  // costs some 45 ns per call, a quarter of a small all-reduce on one node.
  // The threads that exist besides (CUDA's, NCCL's) never call MPI.
  if (MPI_Init(argc, argv) != MPI_SUCCESS) throw SystemError("MPI_Init failed");
  // Errors come back as codes that FB_MPI_CHECK turns into exceptions with
  // the call text, instead of MPI aborting the job with its own message.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized == 0) MPI_Finalize();
}

bool built_with_mpi() { return true; }

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string out(text, static_cast<std::size_t>(length));
  if (const auto cut = out.find_first_of(",\n"); cut != std::string::npos) out.resize(cut);
  return out;
}

}  // namespace fabricbench
