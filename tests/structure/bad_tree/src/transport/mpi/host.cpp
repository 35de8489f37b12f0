// A fixture for check_layers.py: the MPI transport may not use the NCCL one.
#include "fabricbench/transport/nccl/nccl_transport.hpp"
#include "fabricbench/transport/transport.hpp"
