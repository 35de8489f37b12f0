// A fixture for check_layers.py: the engine may not use comm's internals,
// nor the topology probes (the records carry what it needs).
#include "fabricbench/comm/detail/local_comm_backend.hpp"
#include "fabricbench/records/pairs.hpp"
#include "fabricbench/topology/topology_probe.hpp"
