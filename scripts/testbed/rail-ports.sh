#!/usr/bin/env bash
# rail-ports.sh - give each local rank ("rail") of an Open MPI job its own
# block of TCP BTL listening ports, so that `testbed.sh throttle-rail` can tell
# the rails of a host apart on its one link.
#
#     testbed.sh mpirun -np 8 scripts/testbed/rail-ports.sh PROGRAM ARGS...
#
# Rail r (OMPI_COMM_WORLD_LOCAL_RANK = r) listens on ports
# RAIL_PORT_BASE + RAIL_PORT_SPAN*r .. + RAIL_PORT_SPAN-1.  A TCP BTL
# connection always has the accepting rank's listening port at one end (the
# connecting end gets an ephemeral port, 32768 and up), so every connection
# between two ranks of rail r carries a rail-r port.
#
# testbed.sh sources this file for the port numbers (one place for both);
# only when executed does it act as the wrapper.

RAIL_PORT_BASE=20480 # a multiple of RAIL_PORT_SPAN (tc matches port/mask)
RAIL_PORT_SPAN=128   # a power of two
RAIL_MAX=64          # rails 0..63: ports 20480..28671, below the ephemeral range

# First port of rail $1's block.
rail_port_min() { echo $((RAIL_PORT_BASE + RAIL_PORT_SPAN * $1)); }

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    set -euo pipefail
    die() {
        echo "rail-ports.sh: $*" >&2
        exit 1
    }
    [[ $# -ge 1 ]] || die "usage: rail-ports.sh PROGRAM [ARGS...] (as the program of mpirun)"
    rail=${OMPI_COMM_WORLD_LOCAL_RANK:-}
    # Without a local rank the ports would stay unset and a rail throttle
    # would silently miss this process: refuse instead.
    [[ $rail =~ ^[0-9]+$ ]] || die "OMPI_COMM_WORLD_LOCAL_RANK is not set: run me as the program of Open MPI's mpirun"
    ((rail < RAIL_MAX)) || die "local rank $rail: at most $RAIL_MAX rails have a port block"
    # mpirun's --mca settings reach the ranks as OMPI_MCA_* variables too;
    # these replace them for this process.
    export OMPI_MCA_btl_tcp_port_min_v4
    export OMPI_MCA_btl_tcp_port_range_v4=$RAIL_PORT_SPAN
    OMPI_MCA_btl_tcp_port_min_v4=$(rail_port_min "$rail")
    exec "$@"
fi
