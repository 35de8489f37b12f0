#pragma once
// Private to src/: MPI with its C++ bindings skipped, and the check macro
// that turns an MPI error code into a SystemError naming the call, file:line,
// the MPI error string, host and rank.

#if FABRICBENCH_HAVE_MPI
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <string>

#include "fabricbench/comm/comm.hpp"

namespace fabricbench {

[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);
MPI_Comm native_handle(const Comm& comm);

}  // namespace fabricbench

#define FB_MPI_CHECK(call)                                                   \
  do {                                                                       \
    const int fb_mpi_rc_ = (call);                                           \
    if (fb_mpi_rc_ != MPI_SUCCESS) {                                         \
      ::fabricbench::throw_mpi_error(fb_mpi_rc_, #call, __FILE__, __LINE__); \
    }                                                                        \
  } while (false)
#endif
