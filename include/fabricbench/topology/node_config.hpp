#pragma once
// Configuration drift, found before the first collective: the software and
// settings each rank runs with (NCCL, CUDA, rdma-core and NIC firmware
// versions, the NCCL plugins it would load, the NCCL/UCX/Open MPI/libfabric
// environment, nccl.conf, the locked-memory limit, the interfaces NCCL would
// use and their MTU, IB partition keys and GID types), and the rules that
// name what is known to hurt. Every rank reports; ranks of one node with the
// same record send it once; rank 0 compares.
//
// The probe reads only the roots it is given and the environment it is
// passed, so tests run it on fixture trees with hand-written environments.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/comm/comm.hpp"
#include "fabricbench/comm/layout.hpp"
#include "fabricbench/records/nccl_settings.hpp"
#include "fabricbench/records/topology.hpp"
#include "fabricbench/topology/sysfs_probe.hpp"

namespace fabricbench {

// What the linked libraries report about themselves (empty when not built
// with them, or when they cannot tell).
struct RuntimeVersions {
  std::optional<std::string> nccl;          // ncclGetVersion, "2.21.5"
  std::optional<std::string> cuda_driver;   // cudaDriverGetVersion, "12.4"
  std::optional<std::string> cuda_runtime;  // cudaRuntimeGetVersion
};

// This process's: the libraries' own answers where built with them.
RuntimeVersions runtime_versions();

// This process's environment, as `environ` holds it ("NAME=value").
std::vector<std::string> process_environment();

// The soft RLIMIT_MEMLOCK of this process: empty when unlimited.
struct MemlockLimit {
  std::optional<std::uint64_t> bytes;
};
std::optional<MemlockLimit> memlock_limit();
// The soft "Max locked memory" of a /proc/<pid>/limits text; empty when the
// line is missing or odd.
std::optional<MemlockLimit> parse_memlock_limit(const std::string& limits);
// This process's limit as `roots` see it: getrlimit under the real /proc,
// else <procfs>/self/limits of the tree (a fixture's, or none).
std::optional<MemlockLimit> memlock_limit(const ProbeRoots& roots);

struct ConfigInputs {
  ProbeRoots roots;  // other absolute paths (library dirs, nccl.conf, ofed_info) are read under roots.etc/..
  std::vector<std::string> environment;  // "NAME=value"
  std::optional<MemlockLimit> memlock;   // empty: unknown
  RuntimeVersions runtime;
};

// One rank's record. Never throws for odd or missing facts: they stay empty
// and `notes` says why.
NodeConfig probe_config(const ConfigInputs& inputs);

// Collective over `world`: every rank probes its own record; ranks of one
// node whose records are identical send it once; every rank gets them all,
// by node and first rank. A record that does not read is left out with a
// line in `notes`.
std::vector<NodeConfig> gather_configuration(const Comm& world, const Layout& layout, const ConfigInputs& inputs,
                                             std::vector<std::string>& notes);

// The records as each world rank sent them (empty from ranks whose node
// sent the same record from a lower rank), with `fingerprint_of_rank` to
// assign the silent ranks. A record that does not parse is skipped with a
// note in `notes`.
std::vector<NodeConfig> configs_from_records(const std::vector<std::string>& records,
                                             const std::vector<std::uint64_t>& fingerprint_of_rank,
                                             const Layout& layout, std::vector<std::string>& notes);

}  // namespace fabricbench
