#include "fabricbench/gpu_session.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "fabricbench/app.hpp"
#include "fabricbench/device_select.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/local_comm.hpp"
#include "fabricbench/mpi_transport.hpp"
#include "fabricbench/text_safety.hpp"

#if FABRICBENCH_HAVE_CUDA
#include "fabricbench/cuda_support.hpp"
#include "fabricbench/nccl_transport.hpp"
#endif

namespace fabricbench {
namespace {

// The first non-empty message of any rank, on every rank: usage errors are
// raised everywhere alike so the whole job exits 2 together.
void agree_on_error(const Comm& world, const std::string& mine) {
  for (const std::string& m : world.allgather(mine))
    if (!m.empty()) throw UsageError(m);
}

std::chrono::milliseconds timeout_of(const RunConfig& config) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(config.gpu.timeout_s * 1000.0));
}

std::unique_ptr<Transport> host_transport(const Comm& world) {
  if (is_local_group(world))
    throw UsageError("--transport mpi needs mpirun; without a launcher only the nccl transport runs");
  return make_transport(TransportChoice::mpi, world);
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
    FB_CUDA_CHECK(cudaSetDevice(chosen.device));
    mine = fmt::format("{}|{}", layout.node, describe_device(chosen.device).uuid);
  }
  const std::vector<std::string> all = world.allgather(mine);
  std::string error;
  if (!config.gpu.allow_shared) {
    for (std::size_t r = 0; r < all.size(); ++r)
      for (std::size_t q = r + 1; q < all.size(); ++q)
        if (all[r] == all[q] && error.empty())
          error = fmt::format(
              "ranks {} and {} on {} drive the same GPU ({}): run one rank per GPU, or pass "
              "--allow-shared-gpu (a functional check only; ranks sharing a GPU measure each other)",
              r, q, layout.hostnames.at(static_cast<std::size_t>(layout.node)), all[r].substr(all[r].find('|') + 1));
  }
  agree_on_error(world, error);
  NcclOptions options;
  options.device = chosen.device;
  options.graph = config.gpu.graph;
  options.timeout = timeout_of(config);
  return std::make_unique<NcclTransport>(world, options);
}
#endif

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
  if (world.rank() == 0)
    std::cerr << "fabricbench: notice: " << first_missing.substr(0, first_missing.find(';'))
              << "; using the mpi transport\n";
  return host_transport(world);
#else
  (void)layout;
  if (config.transport == TransportChoice::nccl) return make_transport(TransportChoice::nccl, world);
  return host_transport(world);
#endif
}

GpuRecord gather_gpu_record(const Transport& transport, const Comm& world) {
  GpuRecord record;
#if FABRICBENCH_HAVE_CUDA
  const auto* nccl = dynamic_cast<const NcclTransport*>(&transport);
  if (nccl == nullptr) return record;
  const GpuDescription& g = nccl->gpu();
  record.devices =
      world.allgather(fmt::format("rank {}: {} GPU {} {} {} {} (compute {}.{})", world.rank(), this_hostname(), g.index,
                                  g.name, g.pci_bus_id, g.uuid, g.cc_major, g.cc_minor));
  record.libraries["cuda_driver"] = cuda_driver_version();
  record.libraries["cuda_runtime"] = cuda_runtime_version();
  record.libraries["nccl_runtime"] = nccl_runtime_version();
  record.libraries["nccl_algorithm_protocol"] =
      "not recorded: NCCL reports its per-op algorithm and protocol only in its debug log; run with "
      "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING to see them";
#else
  (void)transport;
  (void)world;
#endif
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
    try {
      return body(comm);
    } catch (const UsageError& e) {
      if (comm.rank() == 0) std::cerr << "fabricbench: error: " << terminal_safe(e.what()) << '\n';
      return exit_usage;
    } catch (const std::exception& e) {
      std::cerr << fmt::format("fabricbench: error on {} rank {}: {}\n", this_hostname(), comm.rank(),
                               terminal_safe(e.what()));
      fail_group(comm, fmt::format("rank {} failed: {}", comm.rank(), e.what()));
      return exit_error;
    }
  };
  if (config.gpu.gpus == 0) {
    std::optional<Comm> mine;
    try {
      mine = file_comm_from_environment(timeout);
    } catch (const UsageError& e) {
      std::cerr << "fabricbench: error: " << terminal_safe(e.what()) << '\n';
      return exit_usage;
    }
    return guarded(*mine);
  }
  if (std::getenv("FABRICBENCH_BOOTSTRAP") != nullptr) {  // NOLINT(concurrency-mt-unsafe)
    std::cerr << "fabricbench: error: --gpus and FABRICBENCH_BOOTSTRAP cannot be combined\n";
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
