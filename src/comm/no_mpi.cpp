// A build without MPI: the world is this process alone (or a group of
// local_comm.hpp, made explicitly), and there is no library to start.
#include "fabricbench/comm/comm.hpp"
#include "fabricbench/comm/detail/backend.hpp"

namespace fabricbench {

std::unique_ptr<detail::CommBackend> detail::make_world_backend() { return make_single_backend(); }

MpiSession::MpiSession(int* /*argc*/, char*** /*argv*/) {}
MpiSession::~MpiSession() = default;
bool built_with_mpi() { return false; }
std::string mpi_library_version() { return {}; }

}  // namespace fabricbench
