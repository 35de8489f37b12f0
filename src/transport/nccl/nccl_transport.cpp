#include "fabricbench/transport/nccl/nccl_transport.hpp"

#include <atomic>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "fabricbench/comm/layout.hpp"
#include "fabricbench/transport/cuda/kernels.hpp"
#include "fabricbench/transport/pattern.hpp"

namespace fabricbench {
namespace {

// Pending launches that fit behind the hold with room to spare (a stream
// queues about a thousand before a launch blocks, which with the stream held
// would never return).
constexpr int max_held_launches = 400;

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::int8:
      return ncclInt8;
    case DType::uint8:
      return ncclUint8;
    case DType::int32:
      return ncclInt32;
    case DType::int64:
      return ncclInt64;
    case DType::half:
      return ncclFloat16;
    case DType::bfloat16:
      return ncclBfloat16;
    case DType::float32:
      return ncclFloat32;
    case DType::float64:
      return ncclFloat64;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
    case DType::fp8e4m3:
      return ncclFloat8e4m3;
    case DType::fp8e5m2:
      return ncclFloat8e5m2;
#else
    case DType::fp8e4m3:
    case DType::fp8e5m2:
      break;  // refused by unsupported()
#endif
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(RedOp redop) {
  switch (redop) {
    case RedOp::sum:
      return ncclSum;
    case RedOp::prod:
      return ncclProd;
    case RedOp::min:
      return ncclMin;
    case RedOp::max:
      return ncclMax;
    case RedOp::avg:
      return ncclAvg;
  }
  return ncclSum;
}

kernels::PatternLaunch launch_of(const OpSpec& spec, int rank, int nranks) {
  return {spec.op,           spec.dtype,       spec.redop,      rank, nranks, spec.root,
          spec.counts.param, spec.counts.send, spec.counts.recv};
}

// Point-to-point ops cannot read and write one buffer at once.
bool staged(const OpSpec& spec) {
  return spec.placement == Placement::in_place && (spec.op == Op::sendrecv || spec.op == Op::alltoall);
}

ncclConfig_t nonblocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  // Non-blocking: initialization and every call return at once and are
  // polled against a deadline, so a rank that never arrives cannot hang us.
  config.blocking = 0;
  return config;
}

// Selects the device before anything else touches CUDA on this thread.
GpuDescription bind_device(int device) {
  FB_CUDA_CHECK(cudaSetDevice(device));
  return describe_device(device);
}

NcclComm init_comm(const Comm& comm, const NcclOptions& options) {
  ncclUniqueId id{};
  if (comm.rank() == 0) FB_NCCL_CHECK(ncclGetUniqueId(&id));
  comm.broadcast(std::as_writable_bytes(std::span<ncclUniqueId>(&id, 1)), 0);
  ncclConfig_t config = nonblocking_config();
  ncclComm_t raw = nullptr;
  FB_NCCL_CHECK(ncclCommInitRankConfig(&raw, comm.size(), id, comm.rank(), &config));
  NcclComm owned(raw);
  wait_comm_ready(owned, std::chrono::steady_clock::now() + options.timeout,
                  fmt::format("ncclCommInitRankConfig of {} ranks on rank {} (host {})", comm.size(), comm.rank(),
                              this_hostname()));
  return owned;
}

}  // namespace

NcclTransport::NcclTransport(const Comm& comm, const NcclOptions& options)
    : NcclTransport(comm, options, NcclComm(), bind_device(options.device)) {}

NcclTransport::NcclTransport(const Comm& comm, const NcclOptions& options, NcclComm nccl, GpuDescription gpu)
    : comm_(&comm),
      options_(options),
      rank_(comm.rank()),
      size_(comm.size()),
      gpu_(std::move(gpu)),
      nccl_(nccl.get() != nullptr ? std::move(nccl) : init_comm(comm, options)) {}

NcclTransport::~NcclTransport() {
  // Work still queued (after an error) must not outlive the buffers it uses.
  if (nccl_.get() != nullptr && stream_.get() != nullptr) {
    hold_flags_.host()[0] = 1;
    FB_CUDA_WARN(cudaStreamSynchronize(stream_.get()));
  }
}

std::optional<std::string> NcclTransport::unsupported(Op op, DType dtype, RedOp redop) const {
  // NCCL >= 2.10 has every other element type and reduction of the CLI.
  if (dtype != DType::fp8e4m3 && dtype != DType::fp8e5m2) return std::nullopt;
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 24, 0)
  (void)op;
  (void)redop;
  return fmt::format("{} needs NCCL 2.24 or newer (built against {}.{}.{})", fabricbench::name(dtype), NCCL_MAJOR,
                     NCCL_MINOR, NCCL_PATCH);
#else
  if (gpu_.cc_major < 9)
    return fmt::format("{} needs a GPU of compute capability 9.0 or newer (GPU {} is {}.{})", fabricbench::name(dtype),
                       gpu_.index, gpu_.cc_major, gpu_.cc_minor);
  // Three or two mantissa bits: NCCL's average (inputs scaled by 1/n, then
  // summed) rounds so coarsely that no exact check is possible.
  if (reduces(op) && redop == RedOp::avg)
    return fmt::format("avg on {} is not measured: its rounding leaves no exact result to check",
                       fabricbench::name(dtype));
  return std::nullopt;
#endif
}

std::chrono::steady_clock::time_point NcclTransport::deadline() const {
  return std::chrono::steady_clock::now() + options_.timeout;
}

std::string NcclTransport::describe(const OpSpec& spec) const {
  return fmt::format("{} {} {} of {} B on rank {} (host {}, GPU {} {} {})", fabricbench::name(spec.op),
                     fabricbench::name(spec.dtype), fabricbench::name(spec.placement), spec.counts.bytes, rank_,
                     this_hostname(), gpu_.index, gpu_.name, gpu_.pci_bus_id);
}

void NcclTransport::wait(cudaEvent_t event, const std::string& what) { wait_event(event, nccl_, deadline(), what); }

void NcclTransport::settle(const std::string& what) {
  FB_CUDA_CHECK(cudaEventRecord(end_.get(), stream_.get()));
  wait(end_.get(), what);
}

void NcclTransport::prepare(const OpSpec& spec) {
  const ErrorRankScope scope(rank_);
  const std::size_t elt = element_size(spec.dtype);
  const std::size_t send_bytes = std::max(spec.counts.send, spec.counts.recv) * elt;
  const std::size_t recv_bytes = std::max(spec.counts.recv, spec.counts.send) * elt;
  if (send_.size() < send_bytes) send_ = DeviceBuffer(send_bytes);
  if (recv_.size() < recv_bytes) recv_ = DeviceBuffer(recv_bytes);
}

void NcclTransport::fill(const OpSpec& spec) {
  const ErrorRankScope scope(rank_);
  const std::size_t elt = element_size(spec.dtype);
  cudaStream_t s = stream_.get();
  FB_CUDA_CHECK(kernels::fill_input(send_.get(), launch_of(spec, rank_, size_), s));
  FB_CUDA_CHECK(
      kernels::fill_value(recv_.get(), spec.dtype, recv_.size() / elt, pattern::garbage_value(spec.dtype), s));
  if (spec.placement == Placement::in_place) {
    // The input moves to where the operation reads it from.
    const std::size_t bytes = spec.counts.send * elt;
    std::byte* dst = recv_.bytes();
    if (spec.op == Op::allgather) dst += static_cast<std::size_t>(rank_) * spec.counts.param * elt;
    if (spec.op != Op::broadcast || rank_ == spec.root)
      FB_CUDA_CHECK(cudaMemcpyAsync(dst, send_.get(), bytes, cudaMemcpyDeviceToDevice, s));
  }
  settle("filling the pattern for " + describe(spec));
}

void NcclTransport::issue(const OpSpec& spec) {
  const bool in_place = spec.placement == Placement::in_place;
  const ncclDataType_t type = nccl_type(spec.dtype);
  const ncclRedOp_t op = nccl_op(spec.redop);
  const std::size_t elt = element_size(spec.dtype);
  const std::size_t count = spec.counts.param;
  ncclComm_t c = nccl_.get();
  cudaStream_t s = stream_.get();
  std::byte* send = send_.bytes();
  std::byte* recv = recv_.bytes();
  if (staged(spec)) {
    FB_CUDA_CHECK(cudaMemcpyAsync(send, recv, spec.counts.send * elt, cudaMemcpyDeviceToDevice, s));
  }
  const std::byte* source = in_place && !staged(spec) ? recv : send;
  switch (spec.op) {
    case Op::allreduce:
      FB_NCCL_CHECK(ncclAllReduce(source, recv, count, type, op, c, s));
      break;
    case Op::reduce:
      FB_NCCL_CHECK(ncclReduce(source, recv, count, type, op, spec.root, c, s));
      break;
    case Op::reducescatter:
      // In place NCCL's output is this rank's chunk of the one buffer.
      FB_NCCL_CHECK(ncclReduceScatter(source, in_place ? recv + static_cast<std::size_t>(rank_) * count * elt : recv,
                                      count, type, op, c, s));
      break;
    case Op::allgather:
      FB_NCCL_CHECK(ncclAllGather(in_place ? recv + static_cast<std::size_t>(rank_) * count * elt : send, recv, count,
                                  type, c, s));
      break;
    case Op::broadcast:
      FB_NCCL_CHECK(ncclBroadcast(source, recv, count, type, spec.root, c, s));
      break;
    case Op::alltoall:
      FB_NCCL_CHECK(ncclGroupStart());
      for (int peer = 0; peer < size_; ++peer) {
        const std::size_t offset = static_cast<std::size_t>(peer) * count * elt;
        FB_NCCL_CHECK(ncclSend(send + offset, count, type, peer, c, s));
        FB_NCCL_CHECK(ncclRecv(recv + offset, count, type, peer, c, s));
      }
      FB_NCCL_CHECK(ncclGroupEnd());
      break;
    case Op::sendrecv:
      FB_NCCL_CHECK(ncclGroupStart());
      FB_NCCL_CHECK(ncclSend(send, count, type, (rank_ + 1) % size_, c, s));
      FB_NCCL_CHECK(ncclRecv(recv, count, type, (rank_ - 1 + size_) % size_, c, s));
      FB_NCCL_CHECK(ncclGroupEnd());
      break;
  }
  // A non-blocking communicator may still be connecting (first calls).
  ncclResult_t state = ncclSuccess;
  FB_NCCL_CHECK(ncclCommGetAsyncError(c, &state));
  if (state == ncclInProgress) wait_comm_ready(nccl_, deadline(), describe(spec));
}

void NcclTransport::run_once(const OpSpec& spec) {
  const ErrorRankScope scope(rank_);
  issue(spec);
  settle(describe(spec));
}

void* NcclTransport::output(const OpSpec& spec) const {
  std::byte* recv = recv_.bytes();
  if (spec.op == Op::reducescatter && spec.placement == Placement::in_place)
    return recv + static_cast<std::size_t>(rank_) * spec.counts.param * element_size(spec.dtype);
  return recv;
}

std::uint64_t NcclTransport::verify(const OpSpec& spec) {
  const ErrorRankScope scope(rank_);
  cudaStream_t s = stream_.get();
  FB_CUDA_CHECK(cudaMemsetAsync(wrong_.get(), 0, sizeof(unsigned long long), s));
  FB_CUDA_CHECK(kernels::count_wrong(output(spec), launch_of(spec, rank_, size_),
                                     static_cast<unsigned long long*>(wrong_.get()), s));
  unsigned long long wrong = 0;
  FB_CUDA_CHECK(cudaMemcpyAsync(&wrong, wrong_.get(), sizeof(wrong), cudaMemcpyDeviceToHost, s));
  settle("verifying " + describe(spec));
  return wrong;
}

BatchTiming NcclTransport::time_batch(const OpSpec& spec, int iters, bool per_iteration) {
  const ErrorRankScope scope(rank_);
  BatchTiming timing;
  if (iters <= 0) return timing;
  const auto n = static_cast<std::size_t>(iters);
  while (marks_.size() < n) marks_.emplace_back();
  cudaStream_t s = stream_.get();
  const std::string what = describe(spec);

  GraphExec graph;
  if (options_.graph) {
    FB_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    try {
      for (std::size_t i = 0; i < n; ++i) {
        issue(spec);
        if (per_iteration) FB_CUDA_CHECK(cudaEventRecordWithFlags(marks_[i].get(), s, cudaEventRecordExternal));
      }
    } catch (...) {
      cudaGraph_t partial = nullptr;
      FB_CUDA_WARN(cudaStreamEndCapture(s, &partial));
      if (partial != nullptr) FB_CUDA_WARN(cudaGraphDestroy(partial));
      throw;
    }
    cudaGraph_t captured = nullptr;
    FB_CUDA_CHECK(cudaStreamEndCapture(s, &captured));
    graph = GraphExec(captured);
  }

  volatile int* flags = hold_flags_.host();
  const bool held = options_.graph || iters * (per_iteration ? 2 : 1) + 2 <= max_held_launches;
  flags[0] = 0;
  flags[1] = 0;
  if (held) {
    FB_CUDA_CHECK(kernels::hold(hold_flags_.device(), hold_flags_.device() + 1,
                                static_cast<std::uint64_t>(options_.timeout.count()) * 1000000U, s));
  }
  FB_CUDA_CHECK(cudaEventRecord(start_.get(), s));
  if (options_.graph) {
    FB_CUDA_CHECK(cudaGraphLaunch(graph.get(), s));
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      issue(spec);
      if (per_iteration) FB_CUDA_CHECK(cudaEventRecord(marks_[i].get(), s));
    }
  }
  FB_CUDA_CHECK(cudaEventRecord(end_.get(), s));
  std::atomic_thread_fence(std::memory_order_seq_cst);
  flags[0] = 1;
  wait(end_.get(), what);
  if (flags[1] != 0)
    throw TimeoutError(fmt::format("the stream hold expired before the batch of {} was enqueued ({})", iters, what));

  float ms = 0;
  FB_CUDA_CHECK(cudaEventElapsedTime(&ms, start_.get(), end_.get()));
  timing.seconds = static_cast<double>(ms) * 1e-3;
  if (!per_iteration) return timing;
  timing.per_iteration.resize(n);
  cudaEvent_t previous = start_.get();
  for (std::size_t i = 0; i < n; ++i) {
    FB_CUDA_CHECK(cudaEventElapsedTime(&ms, previous, marks_[i].get()));
    timing.per_iteration[i] = static_cast<double>(ms) * 1e-3;
    previous = marks_[i].get();
  }
  return timing;
}

void NcclTransport::run_held_forever(const OpSpec& spec) {
  const ErrorRankScope scope(rank_);
  cudaStream_t s = stream_.get();
  hold_flags_.host()[0] = 0;
  hold_flags_.host()[1] = 0;
  FB_CUDA_CHECK(kernels::hold(hold_flags_.device(), hold_flags_.device() + 1,
                              static_cast<std::uint64_t>(options_.timeout.count()) * 2000000U, s));
  issue(spec);
  FB_CUDA_CHECK(cudaEventRecord(end_.get(), s));
  wait(end_.get(), describe(spec));
}

void NcclTransport::barrier() { comm_->barrier(); }

std::unique_ptr<Transport> NcclTransport::split(const Comm& sub, int color, int key) {
  const ErrorRankScope scope(rank_);
  ncclConfig_t config = nonblocking_config();
  ncclComm_t raw = nullptr;
  FB_NCCL_CHECK(ncclCommSplit(nccl_.get(), color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &raw, &config));
  wait_comm_ready(nccl_, deadline(), fmt::format("ncclCommSplit on rank {} (host {})", rank_, this_hostname()));
  if (color < 0 || raw == nullptr) return nullptr;
  NcclComm owned(raw);
  wait_comm_ready(owned, deadline(), fmt::format("ncclCommSplit on rank {} (host {})", rank_, this_hostname()));
  return std::unique_ptr<Transport>(new NcclTransport(sub, options_, std::move(owned), gpu_));
}

std::optional<std::string> NcclTransport::device_text() const {
  return fmt::format("{} GPU {} {} {} {} (compute {}.{})", this_hostname(), gpu_.index, gpu_.name, gpu_.pci_bus_id,
                     gpu_.uuid, gpu_.cc_major, gpu_.cc_minor);
}

std::map<std::string, std::string> NcclTransport::libraries() const {
  return {{"cuda_driver", cuda_driver_version()},
          {"cuda_runtime", cuda_runtime_version()},
          {"nccl_runtime", nccl_runtime_version()},
          {"nccl_algorithm_protocol",
           "not recorded: NCCL reports its per-op algorithm and protocol only in its debug log; run with "
           "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING to see them"}};
}

}  // namespace fabricbench
