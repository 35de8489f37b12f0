#pragma once
// A fixture for check_layers.py: output may not use comm's internals.

#include "fabricbench/comm/detail/local_comm_backend.hpp"
