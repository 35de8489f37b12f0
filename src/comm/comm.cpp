#include "fabricbench/comm/comm.hpp"

#include <cstdlib>

#include "fabricbench/comm/detail/backend.hpp"
#include "fabricbench/core/error.hpp"

namespace fabricbench {

using detail::Reduction;
using detail::Scalar;

namespace {

template <typename T>
constexpr Scalar scalar_of() {
  if constexpr (std::is_same_v<T, double>) return Scalar::f64;
  if constexpr (std::is_same_v<T, std::uint64_t>) return Scalar::u64;
  if constexpr (std::is_same_v<T, std::int64_t>) return Scalar::i64;
}

template <typename T>
void reduce(detail::CommBackend& backend, std::span<T> values, Reduction op) {
  if (values.empty()) return;
  backend.allreduce(std::as_writable_bytes(values), scalar_of<T>(), op);
}

}  // namespace

Comm Comm::world() { return Comm(detail::make_world_backend()); }

Comm::Comm(std::unique_ptr<detail::CommBackend> backend) : backend_(std::move(backend)) {}
Comm::Comm(Comm&&) noexcept = default;
Comm& Comm::operator=(Comm&& other) noexcept {
  if (this != &other) {
    Comm doomed(std::move(*this));
    backend_ = std::move(other.backend_);
  }
  return *this;
}
Comm::~Comm() = default;

detail::CommBackend& Comm::backend() const {
  if (!backend_) throw SystemError("a collective on an empty process group (a rank that is in no group)");
  return *backend_;
}

int Comm::rank() const { return backend().rank(); }
int Comm::size() const { return backend().size(); }
bool Comm::empty() const { return backend_ == nullptr; }
void Comm::barrier() const { backend().barrier(); }
void Comm::quiet_barrier() const { backend().quiet_barrier(); }

void Comm::broadcast(std::span<std::byte> data, int root) const {
  if (data.empty()) return;
  backend().broadcast(data, root);
}

std::string Comm::broadcast_bytes(std::string bytes, int root) const {
  const auto length = broadcast_value<std::uint64_t>(bytes.size(), root);
  bytes.resize(length);
  broadcast(std::as_writable_bytes(std::span<char>(bytes.data(), bytes.size())), root);
  return bytes;
}

void Comm::allreduce_sum(std::span<double> values) const { reduce(backend(), values, Reduction::sum); }
void Comm::allreduce_min(std::span<double> values) const { reduce(backend(), values, Reduction::min); }
void Comm::allreduce_max(std::span<double> values) const { reduce(backend(), values, Reduction::max); }
void Comm::allreduce_sum(std::span<std::uint64_t> values) const { reduce(backend(), values, Reduction::sum); }
void Comm::allreduce_max(std::span<std::int64_t> values) const { reduce(backend(), values, Reduction::max); }

std::vector<std::string> Comm::allgather(const std::string& mine) const { return backend().allgather_bytes(mine); }

void Comm::allgather_fixed(std::span<const std::byte> mine, std::span<std::byte> all) const {
  backend().allgather_fixed(mine, all);
}

Comm Comm::split(int color, int key) const { return Comm(backend().split(color, key)); }
Comm Comm::split_shared() const { return Comm(backend().split_shared()); }

void Comm::abort(int exit_code) const {
  if (backend_) backend_->abort(exit_code);
  detail::make_world_backend()->abort(exit_code);
  std::exit(exit_code);  // NOLINT(concurrency-mt-unsafe): not reached; the backends end the process
}

}  // namespace fabricbench
