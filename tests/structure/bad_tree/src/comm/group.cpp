// A fixture for check_layers.py: comm may not know the app above it.
#include "fabricbench/comm/comm.hpp"
#include "fabricbench/app/app.hpp"
#include "fabricbench/core/types.hpp"
