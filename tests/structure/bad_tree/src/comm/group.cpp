// A fixture for check_layers.py: comm may not know the app above it, nor
// keep a private header beside its sources.
#include "fabricbench/comm/comm.hpp"
#include "fabricbench/app/app.hpp"
#include "fabricbench/core/types.hpp"
#include "group_state.hpp"
