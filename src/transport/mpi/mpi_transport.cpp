#include "fabricbench/transport/mpi/mpi_transport.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"
#include "fabricbench/core/watchdog.hpp"
#include "fabricbench/transport/pattern.hpp"

#if FABRICBENCH_HAVE_MPI
#include "fabricbench/comm/mpi_check.hpp"
#endif

namespace fabricbench {

void HostBuffer::Free::operator()(std::byte* p) const noexcept { std::free(p); }  // NOLINT(cppcoreguidelines-no-malloc)

HostBuffer::HostBuffer(std::size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t rounded = (bytes + page - 1) / page * page;
  void* p = std::aligned_alloc(page, rounded);  // NOLINT(cppcoreguidelines-no-malloc)
  if (p == nullptr) throw SystemError(fmt::format("cannot allocate {} bytes of host memory", bytes));
  // Touch every page now so first-touch page faults stay out of the timing.
  std::memset(p, 0, rounded);
  data_.reset(static_cast<std::byte*>(p));
}

#if FABRICBENCH_HAVE_MPI

namespace {

MPI_Datatype mpi_datatype(DType dtype) {
  switch (dtype) {
    case DType::int8:
      return MPI_INT8_T;
    case DType::uint8:
      return MPI_UINT8_T;
    case DType::int32:
      return MPI_INT32_T;
    case DType::int64:
      return MPI_INT64_T;
    case DType::float32:
      return MPI_FLOAT;
    case DType::float64:
      return MPI_DOUBLE;
    case DType::half:
    case DType::bfloat16:
    case DType::fp8e4m3:
    case DType::fp8e5m2:
      break;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(RedOp redop) {
  switch (redop) {
    case RedOp::sum:
      return MPI_SUM;
    case RedOp::prod:
      return MPI_PROD;
    case RedOp::min:
      return MPI_MIN;
    case RedOp::max:
      return MPI_MAX;
    case RedOp::avg:
      break;
  }
  return MPI_OP_NULL;
}

int mpi_count(std::size_t count) {
  if (count > static_cast<std::size_t>(INT_MAX))
    throw UsageError(
        fmt::format("{} elements exceed what one MPI call can move ({}); use smaller sizes", count, INT_MAX));
  return static_cast<int>(count);
}

// What time_batch's per-iteration stamp costs: the fastest of a few runs of
// the stamping loop with nothing else in it (tens of nanoseconds; a run that
// an interrupt hit only raises its own figure).
double measured_stamp_cost_s() {
  constexpr int stamps = 512;
  std::vector<double> samples(stamps);
  double best = HUGE_VAL;
  for (int run = 0; run < 5; ++run) {
    const double start = MPI_Wtime();
    double previous = start;
    for (double& sample : samples) {
      const double now = MPI_Wtime();
      sample = now - previous;
      previous = now;
    }
    best = std::min(best, (previous - start) / stamps);
  }
  volatile double kept = samples[stamps / 2];  // the stores are part of the cost
  (void)kept;
  return best;
}

}  // namespace

MpiTransport::MpiTransport(const Comm& comm)
    : comm_(&comm), rank_(comm.rank()), size_(comm.size()), stamp_cost_s_(measured_stamp_cost_s()) {}

int MpiTransport::rank() const { return rank_; }
int MpiTransport::size() const { return size_; }

std::optional<std::string> MpiTransport::unsupported(Op op, DType dtype, RedOp redop) const {
  if (dtype == DType::half || dtype == DType::bfloat16 || dtype == DType::fp8e4m3 || dtype == DType::fp8e5m2)
    return fmt::format("the mpi transport has no {} type (MPI defines none); use --transport nccl",
                       fabricbench::name(dtype));
  if (reduces(op) && redop == RedOp::avg)
    return std::string("the mpi transport has no avg reduction (MPI defines none)");
  return std::nullopt;
}

void MpiTransport::prepare(const OpSpec& spec) {
  Watchdog::note_step(fabricbench::name(spec.op).data(), spec.counts.bytes);  // the barriers before a step too
  const std::size_t elt = element_size(spec.dtype);
  const std::size_t send_bytes = spec.counts.send * elt;
  // In place, the receive buffer also holds the input (all of it for
  // reduce-scatter and all-to-all).
  const std::size_t recv_bytes = std::max(spec.counts.recv, spec.counts.send) * elt;
  if (send_.size() < send_bytes) send_ = HostBuffer(send_bytes);
  if (recv_.size() < recv_bytes) recv_ = HostBuffer(recv_bytes);
}

void MpiTransport::fill(const OpSpec& spec) {
  const int r = rank();
  const int n = size();
  const std::size_t elt = element_size(spec.dtype);
  pattern::fill_input(spec.op, spec.dtype, spec.redop, r, n, spec.root, spec.counts, send_.bytes());
  // Only what this point uses: after a 64 MiB point, filling the whole
  // buffer for an 8 B one cost tens of milliseconds.
  pattern::fill_garbage(spec.dtype, recv_.bytes(), std::max(spec.counts.recv, spec.counts.send));
  if (spec.placement == Placement::out_of_place) return;
  // In place: the input moves to where the operation reads it from.
  std::span<std::byte> dst = recv_.bytes();
  const std::span<const std::byte> src = send_.bytes().first(spec.counts.send * elt);
  switch (spec.op) {
    case Op::allgather:
      std::memcpy(dst.data() + static_cast<std::size_t>(r) * spec.counts.param * elt, src.data(), src.size());
      break;
    case Op::broadcast:
      if (r == spec.root) std::memcpy(dst.data(), src.data(), src.size());
      break;
    default:
      std::memcpy(dst.data(), src.data(), src.size());
      break;
  }
}

// Everything a call needs, worked out once per batch so that the timed loop
// only issues calls (at 8 B a call takes a fraction of a microsecond, and
// per-call lookups would show in the figure).
struct MpiCall {
  Op op = Op::allreduce;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op reduction = MPI_OP_NULL;
  int count = 0;
  int root = 0;
  bool is_root = false;
  bool in_place = false;
  void* send = nullptr;
  void* recv = nullptr;
  int to = 0;
  int from = 0;
};

namespace {

// Hands `body` a callable that issues the call once, picked per op here so
// that the dispatch happens once per batch, not once per call.
template <typename Body>
decltype(auto) with_call(const MpiCall& c, Body&& body) {
  constexpr int tag = 7;
  void* send = c.in_place ? MPI_IN_PLACE : c.send;
  switch (c.op) {
    case Op::allreduce:
      return body([&] { FB_MPI_CHECK(MPI_Allreduce(send, c.recv, c.count, c.type, c.reduction, c.comm)); });
    case Op::reduce: {
      void* source = (c.in_place && c.is_root) ? MPI_IN_PLACE : (c.in_place ? c.recv : c.send);
      void* target = c.is_root ? c.recv : nullptr;
      return body([&] { FB_MPI_CHECK(MPI_Reduce(source, target, c.count, c.type, c.reduction, c.root, c.comm)); });
    }
    case Op::reducescatter:
      return body([&] { FB_MPI_CHECK(MPI_Reduce_scatter_block(send, c.recv, c.count, c.type, c.reduction, c.comm)); });
    case Op::allgather:
      if (c.in_place)
        return body([&] { FB_MPI_CHECK(MPI_Allgather(MPI_IN_PLACE, 0, c.type, c.recv, c.count, c.type, c.comm)); });
      return body([&] { FB_MPI_CHECK(MPI_Allgather(c.send, c.count, c.type, c.recv, c.count, c.type, c.comm)); });
    case Op::alltoall:
      if (c.in_place)
        return body([&] { FB_MPI_CHECK(MPI_Alltoall(MPI_IN_PLACE, 0, c.type, c.recv, c.count, c.type, c.comm)); });
      return body([&] { FB_MPI_CHECK(MPI_Alltoall(c.send, c.count, c.type, c.recv, c.count, c.type, c.comm)); });
    case Op::broadcast: {
      // Out of place the root sends from its send buffer and the others
      // receive into their receive buffers; in place everyone uses one buffer.
      void* buffer = (!c.in_place && c.is_root) ? c.send : c.recv;
      return body([&] { FB_MPI_CHECK(MPI_Bcast(buffer, c.count, c.type, c.root, c.comm)); });
    }
    case Op::sendrecv:
      if (c.in_place)
        return body([&] {
          FB_MPI_CHECK(
              MPI_Sendrecv_replace(c.recv, c.count, c.type, c.to, tag, c.from, tag, c.comm, MPI_STATUS_IGNORE));
        });
      return body([&] {
        FB_MPI_CHECK(MPI_Sendrecv(c.send, c.count, c.type, c.to, tag, c.recv, c.count, c.type, c.from, tag, c.comm,
                                  MPI_STATUS_IGNORE));
      });
  }
  throw SystemError(fmt::format("unknown op {}", static_cast<int>(c.op)));
}

void issue(const MpiCall& c) {
  with_call(c, [](const auto& call) { call(); });
}

}  // namespace

MpiCall MpiTransport::resolve(const OpSpec& spec) {
  MpiCall c;
  c.op = spec.op;
  c.comm = native_handle(*comm_);
  c.type = mpi_datatype(spec.dtype);
  c.reduction = mpi_op(spec.redop);
  c.count = mpi_count(spec.counts.param);
  c.root = spec.root;
  c.is_root = rank_ == spec.root;
  c.in_place = spec.placement == Placement::in_place;
  c.send = send_.bytes().data();
  c.recv = recv_.bytes().data();
  c.to = (rank_ + 1) % size_;
  c.from = (rank_ - 1 + size_) % size_;
  return c;
}

void MpiTransport::run_once(const OpSpec& spec) {
  Watchdog::note_step(fabricbench::name(spec.op).data(), spec.counts.bytes);  // a literal: kept by pointer
  issue(resolve(spec));
}

std::span<std::byte> MpiTransport::output(const OpSpec& spec) {
  const std::size_t elt = element_size(spec.dtype);
  // Out-of-place broadcast: the root's data never leaves its send buffer.
  if (spec.op == Op::broadcast && spec.placement == Placement::out_of_place && rank() == spec.root)
    return send_.bytes().first(spec.counts.recv * elt);
  return recv_.bytes().first(spec.counts.recv * elt);
}

std::uint64_t MpiTransport::verify(const OpSpec& spec) {
  return pattern::count_wrong(spec.op, spec.dtype, spec.redop, rank(), size(), spec.root, spec.counts, output(spec));
}

BatchTiming MpiTransport::time_batch(const OpSpec& spec, int iters, bool per_iteration) {
  Watchdog::note_step(fabricbench::name(spec.op).data(),
                      spec.counts.bytes);  // once per batch: lock-free, outside the clock
  const MpiCall call = resolve(spec);
  return with_call(call, [iters, per_iteration](const auto& issue_once) {
    BatchTiming timing;
    if (!per_iteration) {
      const double start = MPI_Wtime();
      for (int i = 0; i < iters; ++i) issue_once();
      timing.seconds = MPI_Wtime() - start;
      return timing;
    }
    timing.per_iteration.resize(static_cast<std::size_t>(std::max(iters, 0)));
    const double start = MPI_Wtime();
    double previous = start;
    for (double& sample : timing.per_iteration) {
      issue_once();
      const double now = MPI_Wtime();
      sample = now - previous;
      previous = now;
    }
    timing.seconds = previous - start;
    return timing;
  });
}

void MpiTransport::barrier() { comm_->barrier(); }

double MpiTransport::time_p2p(const P2PSpec& spec, int iters) {
  if (size_ != 2) throw SystemError(fmt::format("point-to-point tests need a group of 2 ranks, not {}", size_));
  if (send_.size() < spec.bytes || recv_.size() < spec.bytes || spec.bytes == 0)
    throw SystemError(fmt::format("point-to-point buffers not prepared for {} B", spec.bytes));
  constexpr int tag = 11;
  constexpr int ack_tag = 12;
  const MPI_Comm comm = native_handle(*comm_);
  const int peer = 1 - rank_;
  const bool first = rank_ == 0;
  const int count = mpi_count(spec.bytes);
  const int window = std::max(spec.window, 1);
  void* send = send_.bytes().data();
  void* recv = recv_.bytes().data();
  std::vector<MPI_Request> requests(2 * static_cast<std::size_t>(window), MPI_REQUEST_NULL);
  const auto post = [&](bool sending, bool receiving) {
    int n = 0;
    for (int w = 0; w < window && receiving; ++w)
      FB_MPI_CHECK(MPI_Irecv(recv, count, MPI_BYTE, peer, tag, comm, &requests[static_cast<std::size_t>(n++)]));
    for (int w = 0; w < window && sending; ++w)
      FB_MPI_CHECK(MPI_Isend(send, count, MPI_BYTE, peer, tag, comm, &requests[static_cast<std::size_t>(n++)]));
    FB_MPI_CHECK(MPI_Waitall(n, requests.data(), MPI_STATUSES_IGNORE));
  };

  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    switch (spec.test) {
      case P2PTest::latency:
        if (first) {
          FB_MPI_CHECK(MPI_Send(send, count, MPI_BYTE, peer, tag, comm));
          FB_MPI_CHECK(MPI_Recv(recv, count, MPI_BYTE, peer, tag, comm, MPI_STATUS_IGNORE));
        } else {
          FB_MPI_CHECK(MPI_Recv(recv, count, MPI_BYTE, peer, tag, comm, MPI_STATUS_IGNORE));
          FB_MPI_CHECK(MPI_Send(send, count, MPI_BYTE, peer, tag, comm));
        }
        break;
      case P2PTest::bandwidth:
        post(first, !first);
        if (first)
          FB_MPI_CHECK(MPI_Recv(recv, 1, MPI_BYTE, peer, ack_tag, comm, MPI_STATUS_IGNORE));
        else
          FB_MPI_CHECK(MPI_Send(send, 1, MPI_BYTE, peer, ack_tag, comm));
        break;
      case P2PTest::bibandwidth:
        post(true, true);
        break;
    }
  }
  return MPI_Wtime() - start;
}

std::unique_ptr<Transport> MpiTransport::split(const Comm& sub, int color, int /*key*/) {
  // MPI needs nothing beyond the split communicator itself.
  if (color < 0 || sub.empty()) return nullptr;
  return std::make_unique<MpiTransport>(sub);
}

#endif  // FABRICBENCH_HAVE_MPI

AlgorithmChoice MpiTransport::capture_choice(const OpSpec& /*spec*/) { return mpi_library_choice(); }

}  // namespace fabricbench
