// make_topology_fixture NAME DIR [HOSTNAME]: writes a topology fixture tree
// (DIR/sys, DIR/proc, DIR/etc) for the end-to-end tests.

#include <exception>
#include <iostream>
#include <string>

#include "fixture_tree.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: make_topology_fixture NAME DIR [HOSTNAME]\n";
    return 2;
  }
  try {
    fabricbench::testing::write_fixture(argv[1], argv[2], argc > 3 ? argv[3] : argv[1]);
  } catch (const std::exception& e) {
    std::cerr << "make_topology_fixture: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
