#pragma once
// A fixture for check_layers.py: a private header belongs in
// include/fabricbench/comm/detail/, not beside the sources.
