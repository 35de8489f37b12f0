#pragma once
// A fixture for check_layers.py: a printer may not compile against what
// measures.

#include "fabricbench/engine/sweep.hpp"
