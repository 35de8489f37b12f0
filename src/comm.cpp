#include "fabricbench/comm.hpp"

#include <cstdlib>

#include <unistd.h>

#include <fmt/format.h>

#include "fabricbench/error.hpp"
#include "mpi_check.hpp"

namespace fabricbench {

#if FABRICBENCH_HAVE_MPI

struct Comm::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  bool owned = false;
};

namespace {
template <typename T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<double>() { return MPI_DOUBLE; }
template <>
MPI_Datatype mpi_type<std::uint64_t>() { return MPI_UINT64_T; }
template <>
MPI_Datatype mpi_type<std::int64_t>() { return MPI_INT64_T; }

template <typename T>
void allreduce(MPI_Comm comm, std::span<T> values, MPI_Op op) {
  if (values.empty()) return;
  FB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), mpi_type<T>(), op, comm));
}
}  // namespace

MPI_Comm native_handle(const Comm& comm) { return comm.impl().comm; }

void throw_mpi_error(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  throw SystemError(describe_failure(call, file, line,
                                     fmt::format("{} (host {}, rank {})", std::string(text, static_cast<std::size_t>(length)),
                                                 host, rank)));
}

Comm Comm::world() { return Comm(std::make_unique<Impl>(Impl{MPI_COMM_WORLD, false})); }

Comm::~Comm() {
  if (impl_ && impl_->owned && impl_->comm != MPI_COMM_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized == 0) MPI_Comm_free(&impl_->comm);
  }
}

int Comm::rank() const {
  int r = 0;
  FB_MPI_CHECK(MPI_Comm_rank(impl_->comm, &r));
  return r;
}

int Comm::size() const {
  int n = 1;
  FB_MPI_CHECK(MPI_Comm_size(impl_->comm, &n));
  return n;
}

void Comm::barrier() const { FB_MPI_CHECK(MPI_Barrier(impl_->comm)); }

void Comm::broadcast(std::span<std::byte> data, int root) const {
  if (data.empty()) return;
  FB_MPI_CHECK(MPI_Bcast(data.data(), static_cast<int>(data.size()), MPI_BYTE, root, impl_->comm));
}

void Comm::allreduce_sum(std::span<double> values) const { allreduce(impl_->comm, values, MPI_SUM); }
void Comm::allreduce_min(std::span<double> values) const { allreduce(impl_->comm, values, MPI_MIN); }
void Comm::allreduce_max(std::span<double> values) const { allreduce(impl_->comm, values, MPI_MAX); }
void Comm::allreduce_sum(std::span<std::uint64_t> values) const { allreduce(impl_->comm, values, MPI_SUM); }
void Comm::allreduce_max(std::span<std::int64_t> values) const { allreduce(impl_->comm, values, MPI_MAX); }

std::vector<std::string> Comm::allgather(const std::string& mine) const {
  const int n = size();
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(n));
  FB_MPI_CHECK(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, impl_->comm));
  std::vector<int> offsets(static_cast<std::size_t>(n));
  int total = 0;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    offsets[i] = total;
    total += lengths[i];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  FB_MPI_CHECK(MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                              impl_->comm));
  std::vector<std::string> out;
  out.reserve(lengths.size());
  for (std::size_t i = 0; i < lengths.size(); ++i)
    out.push_back(all.substr(static_cast<std::size_t>(offsets[i]), static_cast<std::size_t>(lengths[i])));
  return out;
}

Comm Comm::split(int color, int key) const {
  MPI_Comm out = MPI_COMM_NULL;
  FB_MPI_CHECK(MPI_Comm_split(impl_->comm, color < 0 ? MPI_UNDEFINED : color, key, &out));
  if (out != MPI_COMM_NULL) FB_MPI_CHECK(MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN));
  return Comm(std::make_unique<Impl>(Impl{out, true}));
}

Comm Comm::split_shared() const {
  MPI_Comm out = MPI_COMM_NULL;
  FB_MPI_CHECK(MPI_Comm_split_type(impl_->comm, MPI_COMM_TYPE_SHARED, rank(), MPI_INFO_NULL, &out));
  FB_MPI_CHECK(MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN));
  return Comm(std::make_unique<Impl>(Impl{out, true}));
}

bool Comm::empty() const { return impl_->comm == MPI_COMM_NULL; }

void Comm::abort(int exit_code) const {
  MPI_Abort(impl_->comm == MPI_COMM_NULL ? MPI_COMM_WORLD : impl_->comm, exit_code);
  std::exit(exit_code);
}

MpiSession::MpiSession(int* argc, char*** argv) {
  int provided = 0;
  // Helper threads (progress, watchdogs) never call MPI; FUNNELED is enough.
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    throw SystemError("MPI_Init_thread failed");
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

#else  // single process, no MPI

struct Comm::Impl {
  bool empty = false;
};

Comm Comm::world() { return Comm(std::make_unique<Impl>()); }
Comm::~Comm() = default;
int Comm::rank() const { return 0; }
int Comm::size() const { return 1; }
void Comm::barrier() const {}
void Comm::broadcast(std::span<std::byte> /*data*/, int /*root*/) const {}
void Comm::allreduce_sum(std::span<double> /*values*/) const {}
void Comm::allreduce_min(std::span<double> /*values*/) const {}
void Comm::allreduce_max(std::span<double> /*values*/) const {}
void Comm::allreduce_sum(std::span<std::uint64_t> /*values*/) const {}
void Comm::allreduce_max(std::span<std::int64_t> /*values*/) const {}
std::vector<std::string> Comm::allgather(const std::string& mine) const { return {mine}; }
Comm Comm::split(int color, int /*key*/) const { return Comm(std::make_unique<Impl>(Impl{color < 0})); }
Comm Comm::split_shared() const { return Comm(std::make_unique<Impl>()); }
bool Comm::empty() const { return impl_->empty; }
void Comm::abort(int exit_code) const { std::exit(exit_code); }
MpiSession::MpiSession(int* /*argc*/, char*** /*argv*/) {}
MpiSession::~MpiSession() = default;
bool built_with_mpi() { return false; }
std::string mpi_library_version() { return {}; }

#endif

Comm::Comm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Comm::Comm(Comm&&) noexcept = default;
Comm& Comm::operator=(Comm&& other) noexcept {
  if (this != &other) {
    Comm doomed(std::move(*this));
    impl_ = std::move(other.impl_);
  }
  return *this;
}

}  // namespace fabricbench
