#include "fabricbench/transport/nccl/nccl_transport.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <type_traits>

#include <fmt/format.h>

#include "fabricbench/comm/layout.hpp"
#include "fabricbench/transport/cuda/gpu_wait.hpp"
#include "fabricbench/transport/cuda/kernels.hpp"
#include "fabricbench/transport/pattern.hpp"

namespace fabricbench {
// NCCL 2.31's diagnostics (NCCL_RUN_DIAGNOSTICS, NCCL_RUN_RAS_DIAGNOSTICS)
// print "host:pid NCCL DIAG ..." to stdout, outside NCCL's logger
// (src/include/diagnostics_log.h): while a communicator is made, this
// process's stdout goes to a private file, so the table's stream stays
// clean and the lines reach the connection log. Restored on every path.
class StdoutToFile {
 public:
  explicit StdoutToFile(std::string path) : path_(std::move(path)) {
    std::fflush(stdout);
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return;
    saved_ = ::dup(STDOUT_FILENO);
    if (saved_ < 0 || ::dup2(fd, STDOUT_FILENO) < 0) {
      if (saved_ >= 0) ::close(saved_);
      saved_ = -1;
    }
    ::close(fd);
  }
  StdoutToFile(const StdoutToFile&) = delete;
  StdoutToFile& operator=(const StdoutToFile&) = delete;
  ~StdoutToFile() {
    restore();
    ::unlink(path_.c_str());
  }
  // Puts stdout back and returns what was written to it meanwhile.
  std::string finish() {
    restore();
    return take_private_file(path_, std::size_t{1} << 20);
  }

 private:
  void restore() noexcept {
    if (saved_ < 0) return;
    std::fflush(stdout);
    ::dup2(saved_, STDOUT_FILENO);
    ::close(saved_);
    saved_ = -1;
  }
  std::string path_;
  int saved_ = -1;
};

namespace {

// How long a hold may last on the host's side before the watchdog releases
// it: far beyond any enqueue of a batch that fits (milliseconds), short
// enough that a blocked launch costs little.
constexpr auto hold_watchdog = std::chrono::seconds(2);

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

// Point-to-point ops cannot read and write one buffer at once: the checked
// run stages the input into the send buffer.
bool p2p_in_place(const OpSpec& spec) {
  return spec.placement == Placement::in_place && (spec.op == Op::sendrecv || spec.op == Op::alltoall);
}

ncclConfig_t comm_config(bool blocking) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = blocking ? 1 : 0;
  return config;
}

// The control communicator: non-blocking, so its initialization is polled
// against the deadline and a rank that never arrives cannot hang us.
NcclComm init_control(const Comm& comm, const NcclOptions& options) {
  ncclUniqueId id{};
  if (comm.rank() == 0) FB_NCCL_CHECK(ncclGetUniqueId(&id));
  comm.broadcast(std::as_writable_bytes(std::span<ncclUniqueId>(&id, 1)), 0);
  ncclConfig_t config = comm_config(false);
  ncclComm_t raw = nullptr;  // set before the call returns (ncclCommInitRankDev)
  FB_NCCL_CHECK(ncclCommInitRankConfig(&raw, comm.size(), id, comm.rank(), &config));
  NcclComm owned(raw, false, options.timeout);
  wait_comm_ready(owned, std::chrono::steady_clock::now() + options.timeout,
                  fmt::format("ncclCommInitRankConfig of {} ranks on rank {} (host {})", comm.size(), comm.rank(),
                              this_hostname()));
  return owned;
}

// NCCL's ncclResetDebugInit, looked up rather than linked: NCCL exports it
// without declaring it in nccl.h.
NcclLogCapture::Reset nccl_debug_reset() {
  using ResetFn = void (*)();
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): dlsym's void* to a function
  const auto reset = reinterpret_cast<ResetFn>(::dlsym(RTLD_DEFAULT, "ncclResetDebugInit"));
  return reset == nullptr ? NcclLogCapture::Reset{} : NcclLogCapture::Reset{[reset] { reset(); }};
}

// --nccl-diagnostics: asks NCCL to run them when its communicators are made
// (NCCL reads each variable once, so every later communicator runs them too).
void ask_for_diagnostics(const NcclOptions& options) {
  if (!options.capture_connections || !options.diagnostics) return;
  // NOLINTBEGIN(concurrency-mt-unsafe): this rank is alone in its process, before NCCL starts
  ::setenv("NCCL_RUN_DIAGNOSTICS", "1", 1);
  ::setenv("NCCL_RUN_RAS_DIAGNOSTICS", "1", 1);
  // NOLINTEND(concurrency-mt-unsafe)
}

// The connection log's capture, begun (NCCL's lines of the control
// communicator's making go into it); nullptr when not asked for.
std::unique_ptr<NcclLogCapture> begin_connection_capture(const NcclOptions& options) {
  if (!options.capture_connections) return nullptr;
  ask_for_diagnostics(options);
  auto capture = std::make_unique<NcclLogCapture>(
      nccl_debug_reset(),
      // NOLINTNEXTLINE(concurrency-mt-unsafe): this rank is alone in its process, before NCCL starts
      [](const char* name) { return std::getenv(name); }, "INIT,NET,ENV,GRAPH");
  capture->begin();
  return capture;
}

// The most of NCCL's connection log a rank keeps.
constexpr std::size_t max_connection_log_bytes = std::size_t{4} << 20;

// Holds a stream's hold kernel open until release(), or until the watchdog
// releases it. Releasing is idempotent and happens on every path out of the
// scope.
class HoldWatch {
 public:
  HoldWatch(volatile int* release_flag, bool active) : flag_(release_flag) {
    if (!active) return;
    thread_ = std::thread([this] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!changed_.wait_for(lock, hold_watchdog, [this] { return done_; })) {
        fired_ = true;
        open();
      }
    });
  }
  HoldWatch(const HoldWatch&) = delete;
  HoldWatch& operator=(const HoldWatch&) = delete;
  ~HoldWatch() { release(); }

  void release() noexcept {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
    open();
  }
  // Whether the watchdog released the hold (valid after release()).
  [[nodiscard]] bool fired() const { return fired_; }

 private:
  void open() noexcept {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    flag_[0] = 1;
  }
  volatile int* flag_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool done_ = false;
  bool fired_ = false;
  std::thread thread_;
};

}  // namespace

NcclTransport::NcclTransport(const Comm& comm, const NcclOptions& options) : NcclTransport(comm, options, NcclComm()) {}

NcclTransport::NcclTransport(const Comm& comm, const NcclOptions& options, NcclComm control)
    : member_device_(std::in_place, options.device),
      comm_(&comm),
      options_(options),
      rank_(comm.rank()),
      size_(comm.size()),
      gpu_(describe_device(options.device)),
      connection_capture_(begin_connection_capture(options)),
      diagnostics_stdout_(diagnostics_stdout()),
      // NOLINTNEXTLINE(concurrency-mt-unsafe): read once, before this transport's threads
      hold_allowed_(!launch_blocking([](const char* name) { return std::getenv(name); })),
      control_(control.get() != nullptr ? std::move(control) : init_control(comm, options)) {
  const ErrorRankScope scope(rank_);
  FB_NCCL_CHECK(ncclGetVersion(&nccl_version_));
  if (options_.graph) {
    nccl_memory_ = nccl_memory();
    if (!nccl_memory_.available() && rank_ == 0)
      std::fputs(fmt::format("fabricbench: note: --graph: NCCL {} has no ncclMemAlloc (2.19 and newer): buffers come "
                             "from cudaMalloc, which NCCL cannot register for NVLS when a graph is captured\n",
                             nccl_version_)
                     .c_str(),
                 stderr);
  }
  split_measuring();
  if (diagnostics_stdout_) connection_text_ += std::exchange(diagnostics_stdout_, nullptr)->finish();
  // Paused until the next step that connects (logging_connections).
  if (connection_capture_) connection_text_ += connection_capture_->finish();
  member_device_.reset();
}

template <class Step>
decltype(auto) NcclTransport::logging_connections(bool connects, Step&& step) {
  if (!connects || !connection_capture_ || !connection_capture_->available() ||
      connection_text_.size() >= max_connection_log_bytes)
    return step();
  connection_capture_->begin();
  const auto pause = [this] { connection_text_ += connection_capture_->finish(); };
  try {
    if constexpr (std::is_void_v<decltype(step())>) {
      step();
      pause();
    } else {
      decltype(auto) result = step();
      pause();
      return result;
    }
  } catch (...) {
    pause();
    throw;
  }
}

std::unique_ptr<StdoutToFile> NcclTransport::diagnostics_stdout() const {
  if (!connection_capture_ || !options_.diagnostics || !connection_capture_->available()) return nullptr;
  return std::make_unique<StdoutToFile>(connection_capture_->file() + ".stdout");
}

std::optional<ConnectionLog> NcclTransport::connection_log() {
  ConnectionLog log;
  if (!connection_capture_) {
    log.note =
        "not captured: several ranks share this process (--gpus), and NCCL's log settings are the process's "
        "environment, which their threads read";
    return log;
  }
  if (!connection_capture_->available()) {
    log.note = connection_capture_->reason();
    return log;
  }
  log.text = connection_text_;
  if (connection_text_.size() >= max_connection_log_bytes)
    log.note = fmt::format("NCCL's connection log stopped at {} MiB", max_connection_log_bytes >> 20);
  else if (options_.diagnostics && nccl_version_ < 23100)
    log.note = fmt::format("--nccl-diagnostics: NCCL {} has none (2.31 and newer)", nccl_version_);
  return log;
}

void NcclTransport::split_measuring() {
  ncclConfig_t config = comm_config(true);
  split_slot_ = nullptr;
  const std::string what =
      fmt::format("ncclCommSplit of the measuring communicator on rank {} (host {})", rank_, this_hostname());
  FB_NCCL_CHECK(ncclCommSplit(control_.get(), 0, rank_, &split_slot_, &config));
  try {
    // The split runs on NCCL's thread and reports through the parent.
    wait_comm_ready(control_, deadline(), what);
  } catch (...) {
    // The parent's abort has joined NCCL's thread: the slot no longer changes.
    if (split_slot_ != nullptr) FB_NCCL_WARN(ncclCommAbort(std::exchange(split_slot_, nullptr)));
    throw;
  }
  if (split_slot_ == nullptr) throw SystemError(fmt::format("{} finished without a communicator", what));
  nccl_ = NcclComm(std::exchange(split_slot_, nullptr), true, options_.timeout);
}

NcclTransport::~NcclTransport() {
  try {
    member_device_.emplace(gpu_.index);
    const ErrorRankScope scope(rank_);
    // Work still queued (after an error) must not outlive the buffers it
    // uses; a stream that does not drain within the deadline (a dead peer)
    // has its communicators aborted, which ends NCCL's kernels.
    hold_flags_.host()[0] = 1;
    if (nccl_.get() != nullptr && stream_.get() != nullptr) {
      FB_CUDA_CHECK(cudaEventRecord(end_.get(), stream_.get()));
      if (!wait_event_until(end_.get(), deadline())) {
        std::fprintf(stderr, "fabricbench: warning: rank %d's GPU stream did not drain within %lld ms; aborting NCCL\n",
                     rank_, static_cast<long long>(options_.timeout.count()));
        nccl_.abort();
        control_.abort();
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fabricbench: warning: %s; aborting NCCL\n", e.what());
    nccl_.abort();
    control_.abort();
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
  // Built against 2.24+, but the library loaded may be older: its own
  // version decides, or ncclFloat8* would be refused at the first call.
  if (nccl_version_ < 22400)
    return fmt::format("{} needs NCCL 2.24 or newer (the loaded NCCL is {}.{}.{})", fabricbench::name(dtype),
                       nccl_version_ / 10000, nccl_version_ / 100 % 100, nccl_version_ % 100);
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

void NcclTransport::wait(cudaEvent_t event, const std::string& what) {
  // A hold still spinning is released before the communicator is aborted
  // (cuda_support.hpp, wait_event); releasing one that is not running is
  // harmless, as every held batch resets the flag first.
  volatile int* release = hold_flags_.host();
  wait_event(event, nccl_, deadline(), what, [release] {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    release[0] = 1;
  });
}

void NcclTransport::settle(const std::string& what) {
  FB_CUDA_CHECK(cudaEventRecord(end_.get(), stream_.get()));
  wait(end_.get(), what);
}

void NcclTransport::prepare(const OpSpec& spec) {
  const ErrorRankScope scope(rank_);
  const DeviceGuard device(gpu_.index);
  const std::size_t elt = element_size(spec.dtype);
  const std::size_t send_bytes = std::max(spec.counts.send, spec.counts.recv) * elt;
  const std::size_t recv_bytes = std::max(spec.counts.recv, spec.counts.send) * elt;
  // Graph capture: NCCL's allocator, so NCCL can register the buffers
  // (NVLS zero-copy) as nccl-tests -G does; else plain cudaMalloc, as
  // nccl-tests allocates by default.
  const auto buffer = [this](std::size_t bytes) {
    return nccl_memory_.available() ? DeviceBuffer(bytes, nccl_memory_) : DeviceBuffer(bytes);
  };
  // At least 128 MiB each (above the L2 of any GPU so far: 60 MB on H200),
  // so the per-iteration rotation has slots from the smallest size on, as
  // nccl-tests sizes its buffers for the largest size before the first.
  constexpr std::size_t rotation_floor = std::size_t{128} << 20;
  if (send_.size() < send_bytes) send_ = buffer(std::max(send_bytes, rotation_floor));
  if (recv_.size() < recv_bytes) recv_ = buffer(std::max(recv_bytes, rotation_floor));
}

void NcclTransport::fill(const OpSpec& spec) {
  const ErrorRankScope scope(rank_);
  const DeviceGuard device(gpu_.index);
  const std::size_t elt = element_size(spec.dtype);
  cudaStream_t s = stream_.get();
  FB_CUDA_CHECK(kernels::fill_input(send_.get(), launch_of(spec, rank_, size_), s));
  FB_CUDA_CHECK(kernels::fill_value(recv_.get(), spec.dtype, std::max(spec.counts.recv, spec.counts.send),
                                    pattern::garbage_value(spec.dtype), s));  // only what this point uses
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

std::size_t NcclTransport::rotation_offset(const OpSpec& spec, std::size_t iteration) const {
  // As nccl-tests' startColl: each timed iteration uses the next slot of
  // the buffers, so a small message does not sit in L2 from one iteration
  // to the next. Slots are whole 4 KiB pages of the point's larger side.
  const std::size_t elt = element_size(spec.dtype);
  const std::size_t used = std::max(spec.counts.send, spec.counts.recv) * elt;
  const std::size_t slot = (used + 4095) / 4096 * 4096;
  const std::size_t slots = slot > 0 ? std::min(send_.size(), recv_.size()) / slot : 1;
  return slots > 1 ? slot * (iteration % slots) : 0;
}

void NcclTransport::issue(const OpSpec& spec, bool timed, std::size_t offset) {
  const bool in_place = spec.placement == Placement::in_place;
  const ncclDataType_t type = nccl_type(spec.dtype);
  const ncclRedOp_t op = nccl_op(spec.redop);
  const std::size_t elt = element_size(spec.dtype);
  const std::size_t count = spec.counts.param;
  ncclComm_t c = nccl_.get();
  cudaStream_t s = stream_.get();
  std::byte* send = send_.bytes() + offset;
  std::byte* recv = recv_.bytes() + offset;
  // Checked in place, send/recv and all-to-all stage the input first; timed,
  // they pass the one buffer twice, as nccl-tests' in-place columns do.
  const bool staged = !timed && p2p_in_place(spec);
  if (staged) FB_CUDA_CHECK(cudaMemcpyAsync(send, recv, spec.counts.send * elt, cudaMemcpyDeviceToDevice, s));
  const bool one_buffer = in_place && !staged;
  const std::byte* source = one_buffer ? recv : send;
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
        const std::size_t chunk = static_cast<std::size_t>(peer) * count * elt;
        FB_NCCL_CHECK(ncclSend(source + chunk, count, type, peer, c, s));
        FB_NCCL_CHECK(ncclRecv(recv + chunk, count, type, peer, c, s));
      }
      FB_NCCL_CHECK(ncclGroupEnd());
      break;
    case Op::sendrecv:
      FB_NCCL_CHECK(ncclGroupStart());
      FB_NCCL_CHECK(ncclSend(source, count, type, (rank_ + 1) % size_, c, s));
      FB_NCCL_CHECK(ncclRecv(recv, count, type, (rank_ - 1 + size_) % size_, c, s));
      FB_NCCL_CHECK(ncclGroupEnd());
      break;
  }
  // The measuring communicator is blocking: its calls return when enqueued.
  // One that was not would still be connecting here.
  if (!nccl_.blocking()) wait_comm_ready(nccl_, deadline(), describe(spec));
}

void NcclTransport::run_once(const OpSpec& spec) {
  logging_connections(true, [&] { run_plain(spec); });
}

void NcclTransport::run_plain(const OpSpec& spec) {
  const ErrorRankScope scope(rank_);
  const DeviceGuard device(gpu_.index);
  issue(spec, false);
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
  const DeviceGuard device(gpu_.index);
  cudaStream_t s = stream_.get();
  FB_CUDA_CHECK(cudaMemsetAsync(wrong_.get(), 0, sizeof(unsigned long long), s));
  FB_CUDA_CHECK(kernels::count_wrong(output(spec), launch_of(spec, rank_, size_),
                                     static_cast<unsigned long long*>(wrong_.get()), s));
  unsigned long long wrong = 0;
  FB_CUDA_CHECK(cudaMemcpyAsync(&wrong, wrong_.get(), sizeof(wrong), cudaMemcpyDeviceToHost, s));
  settle("verifying " + describe(spec));
  return wrong;
}

bool NcclTransport::enqueue_batch(const OpSpec& spec, int iters, bool per_iteration, const cudaGraphExec_t graph) {
  cudaStream_t s = stream_.get();
  volatile int* flags = hold_flags_.host();
  int limit = held_iteration_limit(spec.op, size_, per_iteration);
  if (hold_limit_ > 0) limit = std::min(limit, hold_limit_);
  // The first batch of a new operation, size or placement (the sweep's
  // warm-up) is not held: NCCL connects lazily on first use, and its
  // connection setup may wait on work queued behind the hold.
  const TimedKind kind{spec.op, spec.dtype, spec.placement, spec.counts.bytes};
  const bool first = !last_timed_ || !(*last_timed_ == kind);
  last_timed_ = kind;
  const bool held = hold_allowed_ && !first && (graph != nullptr || iters <= limit);
  flags[0] = 0;
  flags[1] = 0;
  // Released on every way out of this scope, errors included.
  HoldWatch watch(flags, held);
  if (held) {
    FB_CUDA_CHECK(kernels::hold(hold_flags_.device(), hold_flags_.device() + 1,
                                static_cast<std::uint64_t>(options_.timeout.count()) * 1000000U, s));
  }
  FB_CUDA_CHECK(cudaEventRecord(start_.get(), s));
  if (graph != nullptr) {
    FB_CUDA_CHECK(cudaGraphLaunch(graph, s));
  } else {
    for (int i = 0; i < iters; ++i) {
      issue(spec, true, rotation_offset(spec, static_cast<std::size_t>(i)));
      if (per_iteration) FB_CUDA_CHECK(cudaEventRecord(marks_[static_cast<std::size_t>(i)].get(), s));
    }
  }
  FB_CUDA_CHECK(cudaEventRecord(end_.get(), s));
  // No rank starts its clock before every rank has enqueued: otherwise one
  // rank's first iteration would include the others' enqueue.
  comm_->barrier();
  watch.release();
  if (!watch.fired()) return false;
  // Something blocked while held: hold at most half as many from now on.
  hold_limit_ = std::max(1, std::min(iters, limit) / 2);
  return true;
}

BatchTiming NcclTransport::time_batch(const OpSpec& spec, int iters, bool per_iteration) {
  // The first batch of a new kind is not held, and NCCL connects in it.
  const TimedKind kind{spec.op, spec.dtype, spec.placement, spec.counts.bytes};
  const bool connects = !last_timed_ || !(*last_timed_ == kind);
  return logging_connections(connects, [&] { return timed_batch(spec, iters, per_iteration); });
}

BatchTiming NcclTransport::timed_batch(const OpSpec& spec, int iters, bool per_iteration) {
  const ErrorRankScope scope(rank_);
  const DeviceGuard device(gpu_.index);
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
        issue(spec, true, rotation_offset(spec, i));
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

  // A batch whose hold the watchdog had to release counted some enqueue or
  // waiting time: every rank measures it once more (the decision is
  // collective, so every rank issues the same number of operations).
  for (int attempt = 1;; ++attempt) {
    std::uint64_t released_early = enqueue_batch(spec, iters, per_iteration, graph.get()) ? 1 : 0;
    wait(end_.get(), what);
    if (hold_flags_.host()[1] != 0)
      throw TimeoutError(fmt::format("the stream hold expired before the batch of {} was enqueued ({})", iters, what));
    comm_->allreduce_sum(std::span<std::uint64_t>(&released_early, 1));
    if (released_early == 0) break;
    if (attempt == 2) {
      if (rank_ == 0)
        std::fputs(fmt::format("fabricbench: warning: a stream hold was released by its watchdog twice ({}); this "
                               "batch includes some enqueue time\n",
                               what)
                       .c_str(),
                   stderr);
      break;
    }
  }

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

// Not held: the sends and receives of a window wait on each other across the
// pair, and the batch is short next to the time it measures at the sizes a
// point-to-point sweep reaches; the warm-up makes NCCL's connections.
double NcclTransport::time_p2p(const P2PSpec& spec, int iters) {
  const ErrorRankScope scope(rank_);
  const DeviceGuard device(gpu_.index);
  if (size_ != 2) throw SystemError(fmt::format("point-to-point tests need a group of 2 ranks, not {}", size_));
  if (send_.size() < spec.bytes || recv_.size() < spec.bytes || spec.bytes == 0)
    throw SystemError(fmt::format("point-to-point buffers not prepared for {} B", spec.bytes));
  ncclComm_t c = nccl_.get();
  cudaStream_t s = stream_.get();
  const int peer = 1 - rank_;
  const bool first = rank_ == 0;
  const int window = std::max(spec.window, 1);
  const std::byte* send = send_.bytes();
  std::byte* recv = recv_.bytes();
  const std::string what = fmt::format(
      "{} of {} B x {} on rank {} (host {}, GPU {} {} {})", fabricbench::name(spec.test), spec.bytes,
      spec.test == P2PTest::latency ? 1 : window, rank_, this_hostname(), gpu_.index, gpu_.name, gpu_.pci_bus_id);
  const auto post = [&](bool sending, bool receiving) {
    FB_NCCL_CHECK(ncclGroupStart());
    for (int w = 0; w < window && receiving; ++w) FB_NCCL_CHECK(ncclRecv(recv, spec.bytes, ncclUint8, peer, c, s));
    for (int w = 0; w < window && sending; ++w) FB_NCCL_CHECK(ncclSend(send, spec.bytes, ncclUint8, peer, c, s));
    FB_NCCL_CHECK(ncclGroupEnd());
  };

  FB_CUDA_CHECK(cudaEventRecord(start_.get(), s));
  for (int i = 0; i < iters; ++i) {
    switch (spec.test) {
      case P2PTest::latency:
        if (first) {
          FB_NCCL_CHECK(ncclSend(send, spec.bytes, ncclUint8, peer, c, s));
          FB_NCCL_CHECK(ncclRecv(recv, spec.bytes, ncclUint8, peer, c, s));
        } else {
          FB_NCCL_CHECK(ncclRecv(recv, spec.bytes, ncclUint8, peer, c, s));
          FB_NCCL_CHECK(ncclSend(send, spec.bytes, ncclUint8, peer, c, s));
        }
        break;
      case P2PTest::bandwidth:
        post(first, !first);
        if (first)
          FB_NCCL_CHECK(ncclRecv(recv, 1, ncclUint8, peer, c, s));
        else
          FB_NCCL_CHECK(ncclSend(send, 1, ncclUint8, peer, c, s));
        break;
      case P2PTest::bibandwidth:
        post(true, true);
        break;
    }
  }
  FB_CUDA_CHECK(cudaEventRecord(end_.get(), s));
  if (!nccl_.blocking()) wait_comm_ready(nccl_, deadline(), what);
  wait(end_.get(), what);
  float ms = 0;
  FB_CUDA_CHECK(cudaEventElapsedTime(&ms, start_.get(), end_.get()));
  return static_cast<double>(ms) * 1e-3;
}

void NcclTransport::run_held_forever(const OpSpec& spec) {
  const ErrorRankScope scope(rank_);
  const DeviceGuard device(gpu_.index);
  cudaStream_t s = stream_.get();
  volatile int* flags = hold_flags_.host();
  flags[0] = 0;
  flags[1] = 0;
  FB_CUDA_CHECK(kernels::hold(hold_flags_.device(), hold_flags_.device() + 1,
                              static_cast<std::uint64_t>(options_.timeout.count()) * 2000000U, s));
  // Whatever ends the wait, the hold ends with it: the spin kernel must not
  // run on to its own expiry.
  struct Release {
    volatile int* flag;
    ~Release() { flag[0] = 1; }
  } release{flags};
  issue(spec, true);
  FB_CUDA_CHECK(cudaEventRecord(end_.get(), s));
  wait(end_.get(), describe(spec));
}

void NcclTransport::barrier() { comm_->barrier(); }

std::unique_ptr<Transport> NcclTransport::split(const Comm& sub, int color, int key) {
  const ErrorRankScope scope(rank_);
  const DeviceGuard device(gpu_.index);
  // Non-blocking, like every control communicator: its own split of a
  // measuring communicator is polled as this one is.
  ncclConfig_t config = comm_config(false);
  const std::string what = fmt::format("ncclCommSplit on rank {} (host {})", rank_, this_hostname());
  split_slot_ = nullptr;
  // NCCL runs its diagnostics again for every communicator once asked.
  std::unique_ptr<StdoutToFile> diagnostics = diagnostics_stdout();
  FB_NCCL_CHECK(ncclCommSplit(control_.get(), color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &split_slot_, &config));
  try {
    wait_comm_ready(control_, deadline(), what);
  } catch (...) {
    if (split_slot_ != nullptr) FB_NCCL_WARN(ncclCommAbort(std::exchange(split_slot_, nullptr)));
    throw;
  }
  if (color < 0) return nullptr;
  if (split_slot_ == nullptr) throw SystemError(fmt::format("{} finished without a communicator", what));
  NcclComm owned(std::exchange(split_slot_, nullptr), false, options_.timeout);
  wait_comm_ready(owned, deadline(), what);
  if (diagnostics) connection_text_ += diagnostics->finish();
  // The connection log is the world communicator's: a sub-group's is not kept.
  NcclOptions sub_options = options_;
  sub_options.capture_connections = false;
  return std::unique_ptr<Transport>(new NcclTransport(sub, sub_options, std::move(owned)));
}

AlgorithmChoice NcclTransport::capture_choice(const OpSpec& spec) {
  if (nccl_function_name(spec.op).empty()) return point_to_point_choice(spec.op);
  if (rank_ == 0 && !log_capture_) {
    log_capture_ = std::make_unique<NcclLogCapture>(
        nccl_debug_reset(),
        // NOLINTNEXTLINE(concurrency-mt-unsafe): read on this thread, between operations
        [](const char* name) { return std::getenv(name); });
  }
  // Every rank takes part, so the group issues the same operations; the
  // barriers keep the other ranks of this process out of NCCL while rank 0
  // changes the environment NCCL's log reads.
  const bool capturing = rank_ == 0 && log_capture_->available();
  comm_->barrier();
  if (capturing) log_capture_->begin();
  comm_->barrier();
  std::string log;
  try {
    run_plain(spec);  // connected already: the connection log stays paused
  } catch (...) {
    if (capturing) (void)log_capture_->finish();
    throw;
  }
  if (capturing) log = log_capture_->finish();
  comm_->barrier();
  if (rank_ != 0) return {std::nullopt, std::nullopt, "read on the group's first rank"};
  if (!capturing) return {std::nullopt, std::nullopt, log_capture_->reason()};
  return choice_from_nccl_log(log, spec.op);
}

std::optional<std::string> NcclTransport::device_text() const {
  return fmt::format("{} GPU {} {} {} {} (compute {}.{})", this_hostname(), gpu_.index, gpu_.name, gpu_.pci_bus_id,
                     gpu_.uuid, gpu_.cc_major, gpu_.cc_minor);
}

std::map<std::string, std::string> NcclTransport::libraries() const {
  return {{"cuda_driver", cuda_driver_version()},
          {"cuda_runtime", cuda_runtime_version()},
          {"nccl_runtime", nccl_runtime_version()}};
}

}  // namespace fabricbench
