#include "fabricbench/app/build_info.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fabricbench/comm/comm.hpp"
#include "fabricbench_git.h"

#if FABRICBENCH_HAVE_MPI
#include "fabricbench/comm/mpi_check.hpp"
#endif
#if FABRICBENCH_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

namespace fabricbench {

ToolInfo tool_info() {
  ToolInfo info;
  info.version = FABRICBENCH_VERSION;
  info.git = FABRICBENCH_GIT;
#if FABRICBENCH_HAVE_MPI
  info.transports.emplace_back("mpi");
#if defined(OMPI_MAJOR_VERSION)
  info.libraries["mpi_built"] = fmt::format("Open MPI {}.{}.{} (MPI {}.{})", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                                            OMPI_RELEASE_VERSION, MPI_VERSION, MPI_SUBVERSION);
#else
  info.libraries["mpi_built"] = fmt::format("MPI {}.{}", MPI_VERSION, MPI_SUBVERSION);
#endif
  info.libraries["mpi_runtime"] = mpi_library_version();
#endif
#if FABRICBENCH_HAVE_CUDA
  info.transports.emplace_back("nccl");
  info.libraries["cuda_built"] = fmt::format("{}.{}", CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10);
  info.libraries["nccl_built"] = fmt::format("{}.{}.{}", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
#endif
  return info;
}

std::string version_text() {
  const ToolInfo info = tool_info();
  std::string text = fmt::format("fabricbench {} (git {})\n", info.version, info.git);
  text += fmt::format("transports: {}\n",
                      info.transports.empty() ? "none" : fmt::format("{}", fmt::join(info.transports, ", ")));
  const auto lib = [&info](const char* key) {
    const auto it = info.libraries.find(key);
    return it == info.libraries.end() ? std::string("not built in") : it->second;
  };
  text += fmt::format("MPI:  built against {}; running {}\n", lib("mpi_built"), lib("mpi_runtime"));
  text += fmt::format("CUDA: built against {}\n", lib("cuda_built"));
  text += fmt::format("NCCL: built against {}\n", lib("nccl_built"));
  return text;
}

}  // namespace fabricbench
