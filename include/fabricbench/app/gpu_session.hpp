#pragma once
// Choosing and starting the transport of a run, and the runs without a
// launcher: one thread per local GPU (`--gpus N`), or processes meeting in a
// folder (FABRICBENCH_BOOTSTRAP, see local_comm.hpp).

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fabricbench/comm/comm.hpp"
#include "fabricbench/comm/layout.hpp"
#include "fabricbench/core/config.hpp"
#include "fabricbench/transport/transport.hpp"

namespace fabricbench {

// "no CUDA device visible on <host> (<reason>); use --transport mpi"
std::string no_device_message(const std::string& host, const std::string& reason);

// Collective over `world`: the transport for config.transport. nccl: selects
// this rank's GPU (device_select.hpp), refuses GPUs shared by ranks of a node
// unless allowed, and starts NCCL; with no GPU or driver throws UsageError
// with no_device_message. auto: nccl when built with it and every rank sees a
// GPU, else mpi with a one-line notice on rank 0's stderr; but a UsageError
// on every rank when a node's PCI bus holds NVIDIA GPUs the run cannot use
// (CUDA sees none, or the build has no CUDA), except for topo.
std::unique_ptr<Transport> make_transport_for(const RunConfig& config, const Comm& world, const Layout& layout);

// Collective: what is recorded about the GPUs and GPU libraries of a run,
// merged into ToolInfo::libraries (driver, runtime, NCCL at run time, and
// how NCCL's algorithm and protocol choice was or was not learnt), and one
// "rank R: host, GPU index, name, PCI bus id, UUID" line per rank. Empty for
// other transports.
struct GpuRecord {
  std::map<std::string, std::string> libraries;
  std::vector<std::string> devices;
};
GpuRecord gather_gpu_record(const Transport& transport, const Comm& world);

// Whether the run forms its own group without MPI (--gpus, FABRICBENCH_BOOTSTRAP).
bool wants_local_group(const RunConfig& config);
// Runs `body` once per member of that group (threads, or this process) and
// returns the exit code: the first member's, or the failing member's. Errors
// print one line; a failing member fails the whole group. --gpus with
// --allow-shared-gpu is refused (exit 2, one line) before any GPU is
// touched: NCCL refuses two ranks on one GPU in one process.
int run_local_group(const RunConfig& config, const std::function<int(const Comm&)>& body);

}  // namespace fabricbench
