#include "fabricbench/app/gpu_session.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "fabricbench/app/exit_status.hpp"
#include "fabricbench/comm/local_comm.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/topology/sysfs_probe.hpp"
#include "fabricbench/transport/cuda/device_select.hpp"
#include "fabricbench/transport/mpi/mpi_transport.hpp"

#if FABRICBENCH_HAVE_CUDA
#include "fabricbench/transport/cuda/cuda_support.hpp"
#include "fabricbench/transport/nccl/nccl_transport.hpp"
#endif

namespace fabricbench {
namespace {

std::chrono::milliseconds timeout_of(const RunConfig& config) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(config.gpu.timeout_s * 1000.0));
}

std::unique_ptr<Transport> host_transport(const Comm& world) {
  if (is_local_group(world))
    throw UsageError("--transport mpi needs mpirun; without a launcher only the nccl transport runs");
#if FABRICBENCH_HAVE_MPI
  return std::make_unique<MpiTransport>(world);
#else
  throw UsageError("no transport: this build has neither MPI nor NCCL (configure with FABRICBENCH_MPI=ON)");
#endif
}

// The first non-empty message of any rank, on every rank: usage errors are
// raised everywhere alike so the whole job exits 2 together.
void agree_on_error(const Comm& world, const std::string& mine) {
  for (const std::string& m : world.allgather(mine))
    if (!m.empty()) throw UsageError(m);
}

#if FABRICBENCH_HAVE_CUDA

std::unique_ptr<Transport> start_nccl(const RunConfig& config, const Comm& world, const Layout& layout, int visible) {
  DeviceSelectionInput in;
  in.group_local_rank = layout.local_rank;
  in.group_local_ranks = layout.ranks_per_node.at(static_cast<std::size_t>(layout.node));
  in.visible_devices = visible;
  in.allow_shared = config.gpu.allow_shared;
  // Threads of one process are not launched ranks: the launcher's variables
  // describe the process, not them.
  if (config.gpu.gpus == 0) in.getenv = process_getenv;
  const DeviceSelection chosen = select_device(in);
  agree_on_error(world, chosen.error.empty()
                            ? std::string()
                            : fmt::format("{} (rank {} on {})", chosen.error, world.rank(), this_hostname()));
  // Sharing is decided by UUID: launchers may give each rank its own device
  // 0. NCCL itself refuses one GPU twice in a communicator unless the ranks
  // claim distinct hosts (NCCL_HOSTID), which is the functional check mode.
  std::string mine;
  {
    const ErrorRankScope scope(world.rank());
    mine = describe_device(chosen.device).uuid;
  }
  const std::vector<std::string> uuids = world.allgather(mine);
  std::string error;
  if (!config.gpu.allow_shared) {
    const std::vector<int>& node_of = layout.node_of_rank;
    for (std::size_t r = 0; r < uuids.size(); ++r)
      for (std::size_t q = r + 1; q < uuids.size(); ++q)
        if (node_of.at(r) == node_of.at(q) && uuids[r] == uuids[q] && error.empty())
          error = fmt::format(
              "ranks {} and {} on {} drive the same GPU ({}): run one rank per GPU, or pass "
              "--allow-shared-gpu (a functional check only; ranks sharing a GPU measure each other)",
              r, q, layout.hostnames.at(static_cast<std::size_t>(layout.node)), uuids[r]);
  }
  agree_on_error(world, error);
  NcclOptions options;
  // Threads of one process (--gpus) share NCCL's log settings: not captured.
  options.capture_connections = config.gpu.gpus == 0;
  options.diagnostics = config.gpu.nccl_diagnostics;
  options.device = chosen.device;
  options.graph = config.gpu.graph;
  options.timeout = timeout_of(config);
  return std::make_unique<NcclTransport>(world, options);
}
#endif

// --gpus N makes N communicator slots and threads: the count is checked
// against the devices the process sees before any of them is made. "" when
// it fits.
std::string gpu_count_error(int gpus) {
#if FABRICBENCH_HAVE_CUDA
  const DeviceProbe probe = probe_devices();
  if (probe.count == 0) return no_device_message(this_hostname(), probe.reason);
  if (gpus <= probe.count) return "";
  return fmt::format("--gpus {}: {} has {} visible CUDA device{} (one thread drives each)", gpus, this_hostname(),
                     probe.count, probe.count == 1 ? "" : "s");
#else
  return fmt::format("--gpus {}: this build has no NCCL transport (built without CUDA and NCCL)", gpus);
#endif
}

// "" unless this node's PCI bus (as the run reads it: --sysfs-root) holds
// NVIDIA GPUs that the run cannot use: the message then says how many, why
// they are out of reach (`cuda`: CUDA's own reason, or that the build has
// none) and what to do. `topo` is exempt: it shows the GPUs it found and
// whether CUDA saw them, and reading a fixture tree is one of its uses.
std::string unusable_gpus_message(const RunConfig& config, const std::string& cuda) {
  if (config.command == Command::topo) return "";
  std::vector<std::string> notes;
  const std::size_t count = probe_pci_gpus(probe_roots(config.sysfs_root, config.procfs_root), notes).size();
  if (count == 0) return "";
  return fmt::format(
      "{} has {} NVIDIA GPU{} on its PCI bus but {}: a run on host memory would not measure them; check the driver "
      "(nvidia-smi), CUDA_VISIBLE_DEVICES and the job's GPU request (Slurm --gpus-per-node, a pod's nvidia.com/gpu "
      "limit), or pass --transport mpi to measure host memory on purpose",
      this_hostname(), count, count == 1 ? "" : "s", cuda);
}

}  // namespace

std::string no_device_message(const std::string& host, const std::string& reason) {
  return fmt::format("no CUDA device visible on {} ({}); use --transport mpi", host, reason);
}

std::unique_ptr<Transport> make_transport_for(const RunConfig& config, const Comm& world, const Layout& layout) {
  if (config.transport == TransportChoice::mpi) return host_transport(world);
#if FABRICBENCH_HAVE_CUDA
  const DeviceProbe probe = probe_devices();
  const std::string missing = probe.count > 0 ? std::string() : no_device_message(this_hostname(), probe.reason);
  std::string first_missing;
  for (const std::string& m : world.allgather(missing))
    if (!m.empty() && first_missing.empty()) first_missing = m;
  if (first_missing.empty()) return start_nccl(config, world, layout, probe.count);
  if (config.transport == TransportChoice::nccl || is_local_group(world)) throw UsageError(first_missing);
  // auto never falls back to host memory on a node whose GPUs CUDA cannot see.
  agree_on_error(world, probe.count > 0
                            ? std::string()
                            : unusable_gpus_message(config, fmt::format("CUDA sees none ({})", probe.reason)));
  if (world.rank() == 0)
    std::cerr << "fabricbench: notice: " << first_missing.substr(0, first_missing.find(';'))
              << "; using the mpi transport\n";
  return host_transport(world);
#else
  (void)layout;
  if (config.transport == TransportChoice::nccl)
    throw UsageError(
        "--transport nccl: this build has no NCCL transport (built without CUDA and NCCL); "
        "use --transport mpi");
  agree_on_error(world,
                 unusable_gpus_message(config, "this build has no NCCL transport (build it with CUDA and NCCL)"));
  return host_transport(world);
#endif
}

GpuRecord gather_gpu_record(const Transport& transport, const Comm& world) {
  GpuRecord record;
  // Every rank runs the same kind of transport, so all or none gather.
  const std::optional<std::string> device = transport.device_text();
  if (!device) return record;
  record.devices = world.allgather(fmt::format("rank {}: {}", world.rank(), *device));
  record.libraries = transport.libraries();
  return record;
}

bool wants_local_group(const RunConfig& config) {
  const char* bootstrap = std::getenv("FABRICBENCH_BOOTSTRAP");  // NOLINT(concurrency-mt-unsafe): before threads
  return config.gpu.gpus > 0 || (bootstrap != nullptr && *bootstrap != '\0');
}

int run_local_group(const RunConfig& config, const std::function<int(const Comm&)>& body) {
  // The group's own waits get more than any GPU wait, so the GPU's deadline
  // (which names the op) fires first.
  const auto timeout = timeout_of(config) * 2 + std::chrono::seconds(60);
  const auto guarded = [&body](const Comm& comm) {
    return run_guarded([&] { return body(comm); },
                       Guard{comm.rank() == 0, fmt::format("{} rank {}", this_hostname(), comm.rank()),
                             [&comm](const std::string& message) {
                               fail_group(comm, fmt::format("rank {} failed: {}", comm.rank(), message));
                             }});
  };
  if (config.gpu.gpus > 0 && config.gpu.allow_shared) {
    // Threads of one process share one CUDA context per GPU, and NCCL refuses
    // two ranks of one communicator on one GPU of one process.
    std::cerr << "fabricbench: error: --allow-shared-gpu cannot be combined with --gpus: NCCL refuses two ranks on "
                 "one GPU in one process; start one process per rank instead (FABRICBENCH_BOOTSTRAP or mpirun)\n";
    return exit_usage;
  }
  if (config.gpu.gpus == 0) {
    // A bad bootstrap folder is a usage error of this process alone.
    return run_guarded(
        [&] {
          const std::optional<Comm> mine = file_comm_from_environment(timeout);
          return guarded(*mine);
        },
        Guard{});
  }
  if (std::getenv("FABRICBENCH_BOOTSTRAP") != nullptr) {  // NOLINT(concurrency-mt-unsafe)
    std::cerr << "fabricbench: error: --gpus and FABRICBENCH_BOOTSTRAP cannot be combined\n";
    return exit_usage;
  }
  if (const std::string error = gpu_count_error(config.gpu.gpus); !error.empty()) {
    std::cerr << "fabricbench: error: " << error << "\n";
    return exit_usage;
  }
  std::vector<Comm> members = make_thread_comms(config.gpu.gpus, timeout);
  std::vector<int> codes(members.size(), exit_ok);
  std::vector<std::thread> threads;
  threads.reserve(members.size());
  for (std::size_t r = 0; r < members.size(); ++r) threads.emplace_back([&, r] { codes[r] = guarded(members[r]); });
  for (std::thread& t : threads) t.join();
  // A usage error is everyone's; otherwise the worst code.
  if (codes.front() == exit_usage) return exit_usage;
  return *std::max_element(codes.begin(), codes.end());
}

}  // namespace fabricbench
