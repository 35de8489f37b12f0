#pragma once
// Transport: the backend seam. The sweep engine, statistics, analysis and
// writers never know which transport ran. A transport owns its buffers, fills
// and verifies the data pattern, and times batches of one operation.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/comm/comm.hpp"
#include "fabricbench/core/types.hpp"
#include "fabricbench/transport/algorithm_choice.hpp"

namespace fabricbench {

// One operation as it will be issued on every rank of the group.
struct OpSpec {
  Op op = Op::allreduce;
  DType dtype = DType::float32;
  RedOp redop = RedOp::sum;
  Placement placement = Placement::out_of_place;
  int root = 0;
  Counts counts;
};

// Seconds for a batch of `iters` back-to-back operations on this rank, and
// each iteration's own time.
struct BatchTiming {
  double seconds = 0;
  std::vector<double> per_iteration;
};

// One point-to-point test on a group of exactly two ranks, each iteration as
// the OSU micro-benchmarks do it:
//  latency      rank 0 sends `bytes` and waits for the same back from rank 1
//               (one round trip);
//  bandwidth    rank 0 sends `window` messages at once, rank 1 receives them
//               and answers with a one-byte acknowledgement;
//  bibandwidth  both ranks send `window` messages to each other at once.
// Every message of a window uses the same buffer, as osu_bw does: the check
// of the data is a separate exchange (the send/recv op at the same size).
struct P2PSpec {
  P2PTest test = P2PTest::latency;
  std::size_t bytes = 0;
  int window = 1;
};

// The collective library's own log of how this rank's world communicator
// was made and connected (NCCL's INIT, NET, ENV and GRAPH lines), to be read
// by transport/nccl_log.hpp; `device` picks this rank's lines where ranks
// share a process; `note` says why the text is empty or partial.
struct ConnectionLog {
  std::string text;
  std::optional<int> device;
  std::string note;
};

class Transport {
 public:
  virtual ~Transport() = default;
  Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  [[nodiscard]] virtual std::string_view name() const = 0;
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;

  // Why this transport cannot run the combination, or nullopt when it can.
  [[nodiscard]] virtual std::optional<std::string> unsupported(Op op, DType dtype, RedOp redop) const = 0;

  // Make buffers ready for `spec` (grows, never shrinks, page-aligned).
  virtual void prepare(const OpSpec& spec) = 0;
  // Write this rank's pattern input (and garbage where the output will be).
  virtual void fill(const OpSpec& spec) = 0;
  // Issue the operation once and wait for it.
  virtual void run_once(const OpSpec& spec) = 0;
  // Wrong elements in this rank's output after run_once on filled buffers.
  [[nodiscard]] virtual std::uint64_t verify(const OpSpec& spec) = 0;
  // barrier is the caller's job; time `iters` back-to-back operations.
  // With `per_iteration`, each iteration's own time is taken too, which costs
  // a clock read (MPI) or an event (CUDA) per iteration inside the batch;
  // without it BatchTiming::per_iteration stays empty.
  virtual BatchTiming time_batch(const OpSpec& spec, int iters, bool per_iteration) = 0;
  // What one such per-iteration stamp adds to an iteration (s): the sweep
  // stamps inside its timed batches only where that is under 1% of an
  // iteration. The default is an event record between two GPU operations,
  // taken as 0.5 us (so stamps go inline from 50 us an iteration).
  [[nodiscard]] virtual double stamp_cost_s() const { return 0.5e-6; }
  virtual void barrier() = 0;
  // Seconds on this rank for `iters` iterations of `spec`, on buffers made
  // ready by prepare() with the send/recv op of at least spec.bytes; only on
  // a group of two ranks. The barrier is the caller's job.
  virtual double time_p2p(const P2PSpec& spec, int iters) = 0;

  // Collective over this transport's group: a transport for the sub-group
  // `sub`, which the caller split from this group's Comm with (color, key).
  // Members with a negative color get nullptr. The sub-transport must not
  // outlive `sub`.
  [[nodiscard]] virtual std::unique_ptr<Transport> split(const Comm& sub, int color, int key) = 0;

  // What the library chose for `spec` (algorithm_choice.hpp), as far as this
  // transport can see it. Collective over the group, after the point was
  // measured: the NCCL transport runs the op once more with NCCL's tuning log
  // switched on (the choice is known on the group's rank 0). A transport
  // that cannot see the choice says why in the note.
  [[nodiscard]] virtual AlgorithmChoice capture_choice(const OpSpec& spec) = 0;

  // What a run records about the device this rank drives ("host GPU 0 <name>
  // <bus id> <uuid> (compute 9.0)") and the libraries behind the transport
  // (name -> version); a host transport has no device (nullopt) and adds none.
  [[nodiscard]] virtual std::optional<std::string> device_text() const { return std::nullopt; }
  // What the library logged while it made and connected this transport's
  // communicator so far (connection_log's record); nullopt on a transport
  // whose library logs nothing of the kind (the MPI host transport). Not
  // collective; call it between operations.
  [[nodiscard]] virtual std::optional<ConnectionLog> connection_log() { return std::nullopt; }
  [[nodiscard]] virtual std::map<std::string, std::string> libraries() const { return {}; }
};

}  // namespace fabricbench
