#include "fabricbench/comm/comm.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <functional>

#include <unistd.h>

#include <fmt/format.h>

#include "fabricbench/comm/detail/local_comm_backend.hpp"
#include "fabricbench/comm/layout.hpp"
#include "fabricbench/comm/mpi_check.hpp"
#include "fabricbench/core/error.hpp"

namespace fabricbench {

Comm local_split_comm(Comm::Impl& impl, int color, int key);
Comm local_split_shared(const Comm& comm);

// Groups without MPI (local_comm.hpp) run every collective through one
// all-gather of bytes; these helpers build Comm's collectives from it. Every
// member reduces the same values in the same rank order, so results agree
// bit for bit.
namespace {

template <typename T>
void local_allreduce(GroupBackend& group, std::span<T> values, const std::function<T(T, T)>& combine) {
  if (values.empty()) return;
  const std::string mine(reinterpret_cast<const char*>(values.data()), values.size_bytes());  // NOLINT: raw bytes
  const std::vector<std::string> all = group.exchange(mine);
  std::vector<T> other(values.size());
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].size() != values.size_bytes())
      throw SystemError(
          fmt::format("allreduce: rank {} contributed {} bytes, this rank {}", r, all[r].size(), values.size_bytes()));
    std::memcpy(other.data(), all[r].data(), values.size_bytes());
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = r == 0 ? other[i] : combine(values[i], other[i]);
  }
}

void local_broadcast(GroupBackend& group, std::span<std::byte> data, int root) {
  const std::string mine = group.rank() == root ? std::string(reinterpret_cast<const char*>(data.data()),  // NOLINT
                                                              data.size())
                                                : std::string();
  const std::vector<std::string> all = group.exchange(mine);
  const std::string& theirs = all.at(static_cast<std::size_t>(root));
  if (theirs.size() != data.size())
    throw SystemError(fmt::format("broadcast: the root sent {} bytes, {} expected", theirs.size(), data.size()));
  std::memcpy(data.data(), theirs.data(), data.size());
}

// Members with the same color, ordered by (key, rank), as MPI_Comm_split.
std::unique_ptr<GroupBackend> local_split(GroupBackend& group, int color, int key, std::uint64_t generation) {
  const std::array<int, 2> mine{color, key};
  const std::vector<std::string> all =
      group.exchange(std::string(reinterpret_cast<const char*>(mine.data()), sizeof(mine)));  // NOLINT: raw bytes
  if (color < 0) return nullptr;
  std::vector<std::array<int, 3>> members;  // key, rank, color
  for (std::size_t r = 0; r < all.size(); ++r) {
    std::array<int, 2> theirs{};
    if (all[r].size() != sizeof(theirs))
      throw SystemError(
          fmt::format("split: rank {} contributed {} bytes, {} expected", r, all[r].size(), sizeof(theirs)));
    std::memcpy(theirs.data(), all[r].data(), sizeof(theirs));
    if (theirs[0] == color) members.push_back({theirs[1], static_cast<int>(r), theirs[0]});
  }
  std::sort(members.begin(), members.end());
  std::vector<int> ranks;
  int index = 0;
  for (const auto& m : members) {
    if (m[1] == group.rank()) index = static_cast<int>(ranks.size());
    ranks.push_back(m[1]);
  }
  return group.subgroup(ranks, index, fmt::format("s{}c{}", generation, color));
}

}  // namespace

#if FABRICBENCH_HAVE_MPI

struct Comm::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  bool owned = false;
  std::unique_ptr<GroupBackend> local;  // a group without MPI (local_comm.hpp)
  std::uint64_t local_splits = 0;
};

namespace {
template <typename T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<double>() {
  return MPI_DOUBLE;
}
template <>
MPI_Datatype mpi_type<std::uint64_t>() {
  return MPI_UINT64_T;
}
template <>
MPI_Datatype mpi_type<std::int64_t>() {
  return MPI_INT64_T;
}

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
  throw SystemError(describe_failure(
      call, file, line,
      fmt::format("{} (host {}, rank {})", std::string(text, static_cast<std::size_t>(length)), host, rank)));
}

Comm Comm::world() { return Comm(std::make_unique<Impl>(Impl{MPI_COMM_WORLD, false, nullptr, 0})); }

Comm::~Comm() {
  if (impl_ && impl_->owned && impl_->comm != MPI_COMM_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized == 0) MPI_Comm_free(&impl_->comm);
  }
}

int Comm::rank() const {
  if (impl_->local) return impl_->local->rank();
  int r = 0;
  FB_MPI_CHECK(MPI_Comm_rank(impl_->comm, &r));
  return r;
}

int Comm::size() const {
  if (impl_->local) return impl_->local->size();
  int n = 1;
  FB_MPI_CHECK(MPI_Comm_size(impl_->comm, &n));
  return n;
}

void Comm::barrier() const {
  if (impl_->local) {
    impl_->local->exchange({});
    return;
  }
  FB_MPI_CHECK(MPI_Barrier(impl_->comm));
}

void Comm::broadcast(std::span<std::byte> data, int root) const {
  if (data.empty()) return;
  if (impl_->local) return local_broadcast(*impl_->local, data, root);
  FB_MPI_CHECK(MPI_Bcast(data.data(), static_cast<int>(data.size()), MPI_BYTE, root, impl_->comm));
}

void Comm::allreduce_sum(std::span<double> values) const {
  if (impl_->local) return local_allreduce<double>(*impl_->local, values, [](double a, double b) { return a + b; });
  allreduce(impl_->comm, values, MPI_SUM);
}
void Comm::allreduce_min(std::span<double> values) const {
  if (impl_->local)
    return local_allreduce<double>(*impl_->local, values, [](double a, double b) { return std::min(a, b); });
  allreduce(impl_->comm, values, MPI_MIN);
}
void Comm::allreduce_max(std::span<double> values) const {
  if (impl_->local)
    return local_allreduce<double>(*impl_->local, values, [](double a, double b) { return std::max(a, b); });
  allreduce(impl_->comm, values, MPI_MAX);
}
void Comm::allreduce_sum(std::span<std::uint64_t> values) const {
  if (impl_->local)
    return local_allreduce<std::uint64_t>(*impl_->local, values,
                                          [](std::uint64_t a, std::uint64_t b) { return a + b; });
  allreduce(impl_->comm, values, MPI_SUM);
}
void Comm::allreduce_max(std::span<std::int64_t> values) const {
  if (impl_->local)
    return local_allreduce<std::int64_t>(*impl_->local, values,
                                         [](std::int64_t a, std::int64_t b) { return std::max(a, b); });
  allreduce(impl_->comm, values, MPI_MAX);
}

std::vector<std::string> Comm::allgather(const std::string& mine) const {
  if (impl_->local) return impl_->local->exchange(mine);
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
  FB_MPI_CHECK(
      MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, impl_->comm));
  std::vector<std::string> out;
  out.reserve(lengths.size());
  for (std::size_t i = 0; i < lengths.size(); ++i)
    out.push_back(all.substr(static_cast<std::size_t>(offsets[i]), static_cast<std::size_t>(lengths[i])));
  return out;
}

Comm Comm::split(int color, int key) const {
  if (impl_->local) return local_split_comm(*impl_, color, key);
  MPI_Comm out = MPI_COMM_NULL;
  FB_MPI_CHECK(MPI_Comm_split(impl_->comm, color < 0 ? MPI_UNDEFINED : color, key, &out));
  if (out != MPI_COMM_NULL) FB_MPI_CHECK(MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN));
  return Comm(std::make_unique<Impl>(Impl{out, true, nullptr, 0}));
}

Comm Comm::split_shared() const {
  if (impl_->local) return local_split_shared(*this);
  MPI_Comm out = MPI_COMM_NULL;
  FB_MPI_CHECK(MPI_Comm_split_type(impl_->comm, MPI_COMM_TYPE_SHARED, rank(), MPI_INFO_NULL, &out));
  FB_MPI_CHECK(MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN));
  return Comm(std::make_unique<Impl>(Impl{out, true, nullptr, 0}));
}

bool Comm::empty() const { return impl_->local ? false : impl_->comm == MPI_COMM_NULL; }

void Comm::abort(int exit_code) const {
  if (impl_->local) {
    impl_->local->fail(fmt::format("exit code {}", exit_code));
    std::exit(exit_code);
  }
  MPI_Abort(impl_->comm == MPI_COMM_NULL ? MPI_COMM_WORLD : impl_->comm, exit_code);
  std::exit(exit_code);
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

#else  // single process, no MPI

struct Comm::Impl {
  bool empty = false;
  std::unique_ptr<GroupBackend> local;  // a group without MPI (local_comm.hpp)
  std::uint64_t local_splits = 0;
};

Comm Comm::world() { return Comm(std::make_unique<Impl>()); }
Comm::~Comm() = default;
int Comm::rank() const { return impl_->local ? impl_->local->rank() : 0; }
int Comm::size() const { return impl_->local ? impl_->local->size() : 1; }
void Comm::barrier() const {
  if (impl_->local) impl_->local->exchange({});
}
void Comm::broadcast(std::span<std::byte> data, int root) const {
  if (impl_->local && !data.empty()) local_broadcast(*impl_->local, data, root);
}
void Comm::allreduce_sum(std::span<double> values) const {
  if (impl_->local) local_allreduce<double>(*impl_->local, values, [](double a, double b) { return a + b; });
}
void Comm::allreduce_min(std::span<double> values) const {
  if (impl_->local) local_allreduce<double>(*impl_->local, values, [](double a, double b) { return std::min(a, b); });
}
void Comm::allreduce_max(std::span<double> values) const {
  if (impl_->local) local_allreduce<double>(*impl_->local, values, [](double a, double b) { return std::max(a, b); });
}
void Comm::allreduce_sum(std::span<std::uint64_t> values) const {
  if (impl_->local)
    local_allreduce<std::uint64_t>(*impl_->local, values, [](std::uint64_t a, std::uint64_t b) { return a + b; });
}
void Comm::allreduce_max(std::span<std::int64_t> values) const {
  if (impl_->local)
    local_allreduce<std::int64_t>(*impl_->local, values, [](std::int64_t a, std::int64_t b) { return std::max(a, b); });
}
std::vector<std::string> Comm::allgather(const std::string& mine) const {
  if (impl_->local) return impl_->local->exchange(mine);
  return {mine};
}
Comm Comm::split(int color, int key) const {
  if (impl_->local) return local_split_comm(*impl_, color, key);
  (void)key;
  return Comm(std::make_unique<Impl>(Impl{color < 0, nullptr, 0}));
}
Comm Comm::split_shared() const {
  if (impl_->local) return local_split_shared(*this);
  return Comm(std::make_unique<Impl>());
}
bool Comm::empty() const { return impl_->empty; }
void Comm::abort(int exit_code) const {
  if (impl_->local) impl_->local->fail(fmt::format("exit code {}", exit_code));
  std::exit(exit_code);
}
MpiSession::MpiSession(int* /*argc*/, char*** /*argv*/) {}
MpiSession::~MpiSession() = default;
bool built_with_mpi() { return false; }
std::string mpi_library_version() { return {}; }

#endif

// Groups without MPI ----------------------------------------------------------

Comm comm_from_backend(std::unique_ptr<GroupBackend> backend) {
  auto impl = std::make_unique<Comm::Impl>();
  impl->local = std::move(backend);
  return Comm::adopt(std::move(impl));
}

GroupBackend* backend_of(const Comm& comm) { return comm.impl().local.get(); }

Comm local_split_comm(Comm::Impl& impl, int color, int key) {
  std::unique_ptr<GroupBackend> sub = local_split(*impl.local, color, key, impl.local_splits++);
  if (!sub) {
    auto none = std::make_unique<Comm::Impl>();
#if FABRICBENCH_HAVE_MPI
    none->comm = MPI_COMM_NULL;
#else
    none->empty = true;
#endif
    return Comm::adopt(std::move(none));
  }
  return comm_from_backend(std::move(sub));
}

// Processes with the same host name share a node: without MPI there is no
// shared-memory query, and these groups are one node in practice.
Comm local_split_shared(const Comm& comm) {
  const std::vector<std::string> hosts = comm.allgather(this_hostname());
  const auto mine = static_cast<std::size_t>(comm.rank());
  int color = 0;
  while (hosts[static_cast<std::size_t>(color)] != hosts[mine]) ++color;
  return comm.split(color, comm.rank());
}

Comm::Comm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Comm Comm::adopt(std::unique_ptr<Impl> impl) { return Comm(std::move(impl)); }
Comm::Comm(Comm&&) noexcept = default;
Comm& Comm::operator=(Comm&& other) noexcept {
  if (this != &other) {
    Comm doomed(std::move(*this));
    impl_ = std::move(other.impl_);
  }
  return *this;
}

}  // namespace fabricbench
