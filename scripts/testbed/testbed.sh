#!/usr/bin/env bash
# testbed.sh - a multi-host MPI test bed on one Linux machine.
#
# Each "host" is a network namespace (fbh0, fbh1, ...) with one veth link into
# a Linux bridge in the root namespace, an address <subnet>.(10+i)/24 and, for
# every command run in it, a private UTS namespace whose hostname is the node
# name (node0, node1, ...).  Open MPI therefore sees K distinct hosts: ranks on
# different hosts talk TCP over the veth/bridge (which `tc` can throttle) and
# ranks on the same host use shared memory (vader).
#
# See README.md next to this file for the reasons behind each mechanism.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
SELF=$SCRIPT_DIR/$(basename "${BASH_SOURCE[0]}")
# The rails' TCP port blocks (RAIL_PORT_BASE, RAIL_PORT_SPAN, RAIL_MAX,
# rail_port_min): the same numbers the rank wrapper rail-ports.sh sets.
# shellcheck source=SCRIPTDIR/rail-ports.sh
source "$SCRIPT_DIR/rail-ports.sh"

PREFIX=${FB_TESTBED_PREFIX:-fbh}
HOSTPREFIX=${FB_TESTBED_HOSTPREFIX:-node}
STATE=${FB_TESTBED_STATE:-/tmp/fabricbench-testbed-$PREFIX}
# Bridge and bridge-side veth names are derived from the prefix so that two
# test beds with different prefixes can coexist.  Interface names are limited
# to 15 characters, hence the short suffixes.
BRIDGE=${PREFIX}br
# 'uplink' puts a group of hosts on a second bridge (a leaf switch) joined to
# the main one by one shaped veth pair: <prefix>u0 on the main bridge,
# <prefix>u1 on the second.
BRIDGE2=${PREFIX}b2
UPLINK_MAIN=${PREFIX}u0
UPLINK_LEAF=${PREFIX}u1
# Default shaping parameters for tbf; burst must hold at least rate/HZ bytes
# and a full 64 KiB GSO segment, latency bounds the queue (too small a queue
# drops packets and measures TCP loss recovery instead of the rate).
TBF_BURST=${FB_TESTBED_BURST:-256kb}
TBF_LATENCY=${FB_TESTBED_LATENCY:-100ms}

usage() {
    cat <<EOF
usage: testbed.sh COMMAND [ARGS]

  up K [--subnet A.B.C] [--slots S]   create K hosts ${PREFIX}0..${PREFIX}\$((K-1)) named ${HOSTPREFIX}0..
  down                                remove everything 'up' created (idempotent)
  status                              show hosts, addresses and qdiscs
  exec HOST CMD...                    run CMD inside HOST (netns + own hostname)
  mpirun [ARGS...]                    run Open MPI mpirun from host 0 across the test bed
  selftest [--np N] [ARGS...]         build and run selftest.c (allreduce + ping-pong)
  throttle HOST RATE                  limit HOST's link to RATE (tc rate, e.g. 200mbit), both directions
  throttle-pair HOSTA HOSTB RATE      limit only traffic between HOSTA and HOSTB
  throttle-rail HOST RAIL RATE        limit HOST's TCP traffic of rail RAIL (local rank) to RATE, both
                                      directions; the ranks must be started through rail-ports.sh:
                                      testbed.sh mpirun -np N scripts/testbed/rail-ports.sh PROG ARGS...
  slow-group RATE HOST...             limit traffic between the listed hosts and all others to RATE
                                      with no token bucket (within the group and among the others:
                                      unshaped); at a low RATE every message across queues: a latency
                                      island
  uplink RATE HOST...                 move the listed hosts onto a second bridge joined to the others
                                      by ONE link of RATE (both directions): a leaf switch with an
                                      oversubscribed uplink; all traffic across shares RATE
  loss HOST PERCENT                   drop PERCENT% of HOST's packets at random, both directions
                                      (nftables in the host's namespace: this kernel has no netem)
  unthrottle [HOST]                   remove shaping and loss from HOST (default: all hosts); without
                                      HOST, or with a host behind the uplink, remove the uplink too
  run K [--subnet A.B.C] [--slots S] -- CMD...
                                      up, run CMD, always down; exit with CMD's status

HOST is a node name (${HOSTPREFIX}3), a namespace name (${PREFIX}3) or an index (3).
Environment: FB_TESTBED_PREFIX (default fbh), FB_TESTBED_HOSTPREFIX (default node),
FB_TESTBED_STATE (default /tmp/fabricbench-testbed-\$FB_TESTBED_PREFIX),
FB_TESTBED_BURST / FB_TESTBED_LATENCY (tbf parameters, default 256kb / 100ms).
EOF
}

die() {
    echo "testbed.sh: $*" >&2
    exit 1
}

require_root() {
    if [[ $(id -u) -ne 0 ]]; then
        echo "testbed.sh: must run as root (creates network namespaces, veths and a bridge)" >&2
        exit 2
    fi
}

ns_name() { echo "${PREFIX}$1"; }
host_name() { echo "${HOSTPREFIX}$1"; }
veth_name() { echo "${PREFIX}v$1"; }

# Load what 'up' recorded; everything except 'up' works on an existing bed.
load_state() {
    [[ -r $STATE/config ]] || die "test bed '$PREFIX' is not up (no $STATE/config)"
    local key val
    while IFS='=' read -r key val; do
        case "$key" in
            K) K=$val ;;
            SUBNET) SUBNET=$val ;;
            SLOTS) SLOTS=$val ;;
            HOSTPREFIX) HOSTPREFIX=$val ;;
        esac
    done <"$STATE/config"
    [[ ${K:-} =~ ^[0-9]+$ && ${SUBNET:-} =~ ^[0-9.]+$ && ${SLOTS:-} =~ ^[0-9]+$ ]] ||
        die "corrupt $STATE/config"
}

# HOST argument -> index (accepts node name, namespace name or bare index).
host_index() {
    local arg=$1 idx
    case "$arg" in
        "$HOSTPREFIX"[0-9]*) idx=${arg#"$HOSTPREFIX"} ;;
        "$PREFIX"[0-9]*) idx=${arg#"$PREFIX"} ;;
        *) idx=$arg ;;
    esac
    if ! [[ $idx =~ ^[0-9]+$ ]] || ((10#$idx >= K)); then
        die "unknown host '$arg' (test bed has ${HOSTPREFIX}0..${HOSTPREFIX}$((K - 1)))"
    fi
    echo "$((10#$idx))"
}

host_ip() { echo "$SUBNET.$((10 + $1))"; }

# ---------------------------------------------------------------- up / down

# Succeeds if any of the given PIDs is still running (zombies don't count:
# processes orphaned by a killed mpirun wait as zombies until init reaps them).
live_pids() {
    local pid st
    for pid in "$@"; do
        st=$(ps -o stat= -p "$pid" 2>/dev/null || true)
        [[ -n $st && $st != Z* ]] && return 0
    done
    return 1
}

cmd_down() {
    local ns veth i n
    local -a nss=() pids=()
    mapfile -t nss < <(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}[0-9]+$" || true)
    # Stop stragglers (mpirun, orted, ranks) still living in the namespaces,
    # by PID: SIGTERM first so mpirun can tear its daemons down cleanly while
    # the network still exists, SIGKILL whatever is left after a few seconds.
    for ns in "${nss[@]}"; do
        mapfile -t -O "${#pids[@]}" pids < <(ip netns pids "$ns" 2>/dev/null || true)
    done
    if [[ ${#pids[@]} -gt 0 ]]; then
        kill -TERM "${pids[@]}" 2>/dev/null || true
        for ((n = 0; n < 30; n++)); do
            live_pids "${pids[@]}" || break
            sleep 0.1
        done
        kill -KILL "${pids[@]}" 2>/dev/null || true
    fi
    # Delete the root-side veths first: that removes their peers in the
    # namespaces synchronously, whereas deleting a namespace tears its devices
    # down asynchronously and would leave the veth visible for a moment.
    for veth in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^${PREFIX}v[0-9]+$" || true); do
        ip link del "$veth" 2>/dev/null || true
    done
    # The uplink's veth pair (deleting one end deletes both) and the second
    # bridge, whether or not 'unthrottle' ran.
    ip link del "$UPLINK_MAIN" 2>/dev/null || true
    ip link del "$BRIDGE2" 2>/dev/null || true
    for ns in "${nss[@]}"; do
        ip netns del "$ns" 2>/dev/null || true
        rm -rf "/etc/netns/$ns"
    done
    # /etc/netns entries whose namespace is already gone.
    for i in /etc/netns/"${PREFIX}"[0-9]*; do
        [[ -e $i && $(basename "$i") =~ ^${PREFIX}[0-9]+$ ]] && rm -rf "$i"
    done
    rmdir /etc/netns 2>/dev/null || true
    if ip link show "$BRIDGE" >/dev/null 2>&1; then
        ip link del "$BRIDGE" 2>/dev/null || true
    fi
    # Open MPI shared-memory segments are named after the hostname; remove any
    # left behind by crashed ranks of this bed.
    if [[ -r $STATE/config ]]; then
        local hp
        hp=$(sed -n 's/^HOSTPREFIX=//p' "$STATE/config")
        if [[ -n $hp ]]; then
            rm -f /dev/shm/vader_segment."$hp"[0-9]*.* 2>/dev/null || true
        fi
    fi
    rm -rf "$STATE"
    return 0
}

cmd_up() {
    local k="" subnet=10.77.0 slots=2
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --subnet) [[ $# -ge 2 ]] || die "--subnet needs a value"; subnet=$2; shift 2 ;;
            --subnet=*) subnet=${1#*=}; shift ;;
            --slots) [[ $# -ge 2 ]] || die "--slots needs a value"; slots=$2; shift 2 ;;
            --slots=*) slots=${1#*=}; shift ;;
            -*) die "up: unknown option $1" ;;
            *) [[ -z $k ]] || die "up: unexpected argument $1"; k=$1; shift ;;
        esac
    done
    if ! [[ $k =~ ^[0-9]+$ ]] || ((10#$k < 1 || 10#$k > 200)); then die "up: K must be 1..200"; fi
    if ! [[ $slots =~ ^[0-9]+$ ]] || ((10#$slots < 1)); then die "up: --slots must be >= 1"; fi
    k=$((10#$k)) slots=$((10#$slots))
    # Only private (RFC 1918) /24s: the namespaces have no default route, so
    # nothing can leave the subnet, and a private prefix cannot shadow a real
    # destination even by mistake.
    [[ $subnet =~ ^(10\.[0-9]{1,3}\.[0-9]{1,3}|192\.168\.[0-9]{1,3}|172\.(1[6-9]|2[0-9]|3[01])\.[0-9]{1,3})$ ]] ||
        die "up: --subnet must be a private /24 prefix like 10.77.0"
    local o
    for o in ${subnet//./ }; do ((o <= 255)) || die "up: bad --subnet $subnet"; done
    command -v ip >/dev/null || die "ip (iproute2) not found: apt-get install -y iproute2"

    if ip link show "$BRIDGE" >/dev/null 2>&1 || ip link show "$BRIDGE2" >/dev/null 2>&1 || [[ -e $STATE ]] ||
        ip netns list | awk '{print $1}' | grep -qE "^${PREFIX}[0-9]+$"; then
        die "test bed '$PREFIX' already exists; run 'testbed.sh down' first"
    fi

    K=$k SUBNET=$subnet SLOTS=$slots
    # Any failure or interrupt half-way leaves partial state: tear it down.
    # The signal traps only exit; the EXIT trap then sees a non-zero status.
    trap 'exit 130' INT
    trap 'exit 143' TERM
    trap 'rc=$?; if [[ $rc -ne 0 ]]; then echo "testbed.sh: up failed or interrupted, cleaning up" >&2; cmd_down; fi' EXIT

    mkdir -p "$STATE"
    chmod 755 "$STATE"
    {
        echo "K=$K"
        echo "SUBNET=$SUBNET"
        echo "SLOTS=$SLOTS"
        echo "PREFIX=$PREFIX"
        echo "HOSTPREFIX=$HOSTPREFIX"
    } >"$STATE/config"

    {
        echo "127.0.0.1 localhost"
        echo "::1 localhost ip6-localhost ip6-loopback"
        for ((i = 0; i < K; i++)); do echo "$(host_ip "$i") $(host_name "$i")"; done
    } >"$STATE/hosts"
    : >"$STATE/hostfile"
    : >"$STATE/nodes"
    for ((i = 0; i < K; i++)); do
        echo "$(host_name "$i") slots=$SLOTS" >>"$STATE/hostfile"
        echo "$(host_name "$i") $(ns_name "$i") $(host_ip "$i")" >>"$STATE/nodes"
    done

    # The bridge stays address-less: the root namespace is not part of the
    # test subnet, so no test traffic can be routed anywhere else.
    ip link add "$BRIDGE" type bridge
    echo 1 >"/proc/sys/net/ipv6/conf/$BRIDGE/disable_ipv6" 2>/dev/null || true
    ip link set "$BRIDGE" up

    local ns veth
    for ((i = 0; i < K; i++)); do
        ns=$(ns_name "$i")
        veth=$(veth_name "$i")
        ip netns add "$ns"
        # `ip netns exec` bind-mounts every file in /etc/netns/<ns>/ over
        # /etc/<file>: this gives each host the test bed's name table.
        mkdir -p "/etc/netns/$ns"
        cp "$STATE/hosts" "/etc/netns/$ns/hosts"
        ip link add "$veth" type veth peer name eth0 netns "$ns"
        echo 1 >"/proc/sys/net/ipv6/conf/$veth/disable_ipv6" 2>/dev/null || true
        ip link set "$veth" master "$BRIDGE"
        ip link set "$veth" up
        # IPv6 off inside the host: no link-local addresses for Open MPI to
        # pick up and no router solicitations on the bridge.
        ip netns exec "$ns" sh -c 'echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6' 2>/dev/null || true
        ip -n "$ns" link set lo up
        ip -n "$ns" addr add "$(host_ip "$i")/24" dev eth0
        ip -n "$ns" link set eth0 up
    done
    trap - INT TERM EXIT
    # stderr, so that `run ... -- CMD` leaves stdout to CMD.
    echo "testbed '$PREFIX' up: $K hosts ${HOSTPREFIX}0..${HOSTPREFIX}$((K - 1)) on $SUBNET.0/24, state in $STATE" >&2
}

cmd_status() {
    load_state
    echo "state: $STATE  bridge: $BRIDGE  subnet: $SUBNET.0/24  slots/host: $SLOTS"
    local i ns where
    if ip link show "$BRIDGE2" >/dev/null 2>&1; then
        echo "uplink: $BRIDGE <-> $UPLINK_MAIN/$UPLINK_LEAF <-> $BRIDGE2, behind it: $(uplink_members | paste -sd ' ')"
        tc qdisc show dev "$UPLINK_MAIN" | sed 's/^/    into the group:   /'
        tc qdisc show dev "$UPLINK_LEAF" | sed 's/^/    out of the group: /'
    fi
    for ((i = 0; i < K; i++)); do
        ns=$(ns_name "$i")
        where=""
        [[ $(port_master "$(veth_name "$i")") != "$BRIDGE2" ]] || where=" (behind the uplink)"
        printf '%s %s %s%s\n' "$(host_name "$i")" "$ns" "$(host_ip "$i")" "$where"
        ip netns exec "$ns" tc qdisc show dev eth0 | sed 's/^/    host egress:   /'
        tc qdisc show dev "$(veth_name "$i")" | sed 's/^/    bridge egress: /'
    done
}

# ---------------------------------------------------------------- exec / mpirun

# Run "$@" inside host $1 with its own UTS namespace so hostname(1),
# gethostname(2) and MPI_Get_processor_name report the node name.  Arguments
# are passed through verbatim (no shell re-parsing).
exec_in_host() {
    local i=$1
    shift
    # Every step execs (ip netns exec, unshare without --fork, sh), so the
    # final command inherits this PID.
    # shellcheck disable=SC2016 # $1/$@ are expanded by the inner sh
    exec ip netns exec "$(ns_name "$i")" unshare --uts -- \
        sh -c 'hostname "$1" || exit 1; shift; exec "$@"' fb-exec "$(host_name "$i")" "$@"
}

cmd_exec() {
    load_state
    [[ $# -ge 2 ]] || die "usage: testbed.sh exec HOST CMD..."
    local i
    i=$(host_index "$1")
    shift
    # exec: the command takes over this PID, so signals sent to us reach it.
    exec_in_host "$i" "$@"
}

cmd_mpirun() {
    load_state
    local agent=$SCRIPT_DIR/rsh-agent.sh
    [[ $agent != *[[:space:]]* ]] || die "path of rsh-agent.sh must not contain whitespace: $agent"
    # Open MPI splits plm_rsh_agent on spaces; fall back to "bash <path>" if the
    # executable bit got lost (e.g. copied without modes).
    local agent_cmd=$agent
    [[ -x $agent ]] || agent_cmd="bash $agent"
    local net=$SUBNET.0/24
    local -a args=(
        --allow-run-as-root
        --oversubscribe
        --hostfile "$STATE/hostfile"
        # Launch every remote orted through our agent, directly from mpirun:
        # tree spawn would make orteds launch orteds, needlessly nesting
        # namespaces.
        --mca plm rsh
        --mca plm_rsh_agent "$agent_cmd"
        --mca plm_rsh_no_tree_spawn 1
        # The remote shell is always sh (see rsh-agent.sh); don't probe.
        --mca plm_rsh_assume_same_shell 1
        # ob1 + explicit BTLs: UCX (pml/osc ucx) would notice that all
        # "hosts" share one kernel and route around the veths via shared memory.
        --mca pml ob1
        --mca osc '^ucx'
        --mca btl 'tcp,vader,self'
        # Pin both MPI traffic and the runtime's out-of-band channel to the
        # test subnet: that is the only network the namespaces have, and
        # loopback must never be chosen for inter-host traffic.
        --mca btl_tcp_if_include "$net"
        --mca oob_tcp_if_include "$net"
        # Session directories under the state dir, so 'down' removes them.
        --mca orte_tmpdir_base "$STATE/tmp"
        # All hosts share the same few cores: let the kernel schedule ranks
        # rather than binding ranks of different hosts to the same core, and
        # make idle ranks yield the CPU.
        --bind-to none
        --mca mpi_yield_when_idle 1
    )
    # Sanitizer settings (an ASan build's leak suppressions, its options)
    # reach the remote ranks only through -x: the rsh agent gives remote
    # daemons a clean environment, as ssh does. Ranks on host 0 inherit them.
    local v
    for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do
        if [[ -n ${!v:-} ]]; then
            args+=(-x "$v")
        fi
    done
    mkdir -p "$STATE/tmp"
    # mpirun itself runs inside host 0 (hostname node0): there it sees the test
    # subnet and the test bed's /etc/hosts, node0 is treated as the local node
    # and every other node is launched through the agent.
    # exec so that mpirun has this PID: a SIGTERM/SIGINT for `testbed.sh
    # mpirun` goes straight to mpirun, which then stops its remote daemons.
    exec_in_host 0 env FB_TESTBED_STATE="$STATE" FB_TESTBED_PREFIX="$PREFIX" FB_TESTBED_HOSTPREFIX="$HOSTPREFIX" \
        mpirun "${args[@]}" "$@"
}

cmd_selftest() {
    load_state
    local np=$((K * SLOTS))
    if [[ ${1:-} == --np || ${1:-} == -np ]]; then
        [[ $# -ge 2 ]] || die "selftest: --np needs a value"
        np=$2
        shift 2
    fi
    local src=$SCRIPT_DIR/selftest.c bin=$STATE/selftest
    if [[ ! -x $bin || $src -nt $bin ]]; then
        command -v mpicc >/dev/null || die "mpicc not found (apt-get install -y libopenmpi-dev)"
        mpicc -O2 -Wall -o "$bin" "$src"
    fi
    cmd_mpirun -np "$np" "$bin" "$@"
}

# ---------------------------------------------------------------- shaping

# Deleting a root qdisc that was never added fails with "Cannot delete qdisc
# with handle of zero"; that is the desired end state, so ignore it.
clear_qdiscs() {
    local i=$1
    ip netns exec "$(ns_name "$i")" tc qdisc del dev eth0 root 2>/dev/null || true
    tc qdisc del dev "$(veth_name "$i")" root 2>/dev/null || true
    if command -v nft >/dev/null; then
        ip netns exec "$(ns_name "$i")" nft delete table inet fbloss 2>/dev/null || true
    fi
}

root_qdisc_kind() {
    # prints e.g. "tbf", "htb" or "noqueue" for the host-side eth0
    ip netns exec "$(ns_name "$1")" tc qdisc show dev eth0 root | awk 'NR==1 {print $2}'
}

check_rate() {
    [[ $1 =~ ^[0-9]+(\.[0-9]+)?([kmgt]?(bit|bps))$ ]] || die "bad rate '$1' (use e.g. 100mbit, 1gbit, 50mbps)"
}

# tbf is used because this kernel lacks netem, prio, fq_codel and most
# classifiers; tbf, htb and the u32 classifier are available.
cmd_throttle() {
    load_state
    [[ $# -eq 2 ]] || die "usage: testbed.sh throttle HOST RATE"
    local i rate=$2
    i=$(host_index "$1")
    check_rate "$rate"
    clear_qdiscs "$i"
    # Host-side eth0 egress shapes what the host sends; the bridge-side veth's
    # egress is what the host receives.  Shaping both makes the link behave
    # like a slower NIC in both directions.
    ip netns exec "$(ns_name "$i")" tc qdisc add dev eth0 root handle 1: \
        tbf rate "$rate" burst "$TBF_BURST" latency "$TBF_LATENCY"
    tc qdisc add dev "$(veth_name "$i")" root handle 1: \
        tbf rate "$rate" burst "$TBF_BURST" latency "$TBF_LATENCY"
    echo "throttled $(host_name "$i") to $rate (both directions)"
}

# Add (or replace) a shaped class for traffic from host $1 to IP $2 on host $1's
# eth0 egress.  The root is an htb whose default class does not exist, so
# unmatched traffic is dequeued directly, unshaped; a u32 filter on the peer's
# IP sends the pair's traffic to a class limited by htb with a tbf leaf.
# With $4 = island the class keeps no tokens between packets (see
# cmd_slow_group) and its leaf is the default pfifo.
add_pair_class() {
    local i=$1 j=$2 rate=$3 island=${4:-} ns kind minor burst=$TBF_BURST
    ns=$(ns_name "$i")
    kind=$(root_qdisc_kind "$i")
    case "$kind" in
        htb) ;;
        tbf) die "$(host_name "$i") has a whole-link throttle; run 'unthrottle $(host_name "$i")' first" ;;
        *)
            ip netns exec "$ns" tc qdisc replace dev eth0 root handle 1: htb default 0
            ;;
    esac
    minor=$(printf '%x' $((0x100 + j)))
    # Replace semantics: drop an older class/filter for the same peer first.
    ip netns exec "$ns" tc filter del dev eth0 parent 1: prio $((100 + j)) 2>/dev/null || true
    ip netns exec "$ns" tc qdisc del dev eth0 parent "1:$minor" 2>/dev/null || true
    ip netns exec "$ns" tc class del dev eth0 classid "1:$minor" 2>/dev/null || true
    # A bucket of 1 byte (tc rounds it to 0): a packet may leave when the
    # class's tokens are not below zero and then takes its length from them,
    # so an idle class never saves up for a second packet.  tbf cannot be the
    # leaf there: it drops a packet larger than its bucket.
    [[ $island != island ]] || burst=1
    # quantum is set explicitly because the default (rate/r2q) is out of range
    # for high rates and htb warns about it.
    ip netns exec "$ns" tc class add dev eth0 parent 1: classid "1:$minor" \
        htb rate "$rate" ceil "$rate" burst "$burst" cburst "$burst" quantum 60000
    if [[ $island != island ]]; then
        ip netns exec "$ns" tc qdisc add dev eth0 parent "1:$minor" handle "$minor:" \
            tbf rate "$rate" burst "$TBF_BURST" latency "$TBF_LATENCY"
    fi
    ip netns exec "$ns" tc filter add dev eth0 parent 1: protocol ip prio $((100 + j)) \
        u32 match ip dst "$(host_ip "$j")/32" flowid "1:$minor"
}

# Add (or replace) a shaped class for rail $2's TCP traffic on one side of host
# $1's link: side "host" is eth0 in the namespace (what the host sends), side
# "bridge" the root-side veth (what it receives).  As in add_pair_class, the
# root is an htb without a default class, so other traffic passes unshaped;
# two u32 filters send TCP segments whose source or destination port lies in
# the rail's block to a class limited by htb with a tbf leaf.  The rail's
# ranks listen in that block (rail-ports.sh), so each of their connections
# has a rail port at one end, whichever side connected.
add_rail_class() {
    local i=$1 side=$2 r=$3 rate=$4 dev kind minor prio port mask
    local -a tcx
    if [[ $side == host ]]; then
        tcx=(ip netns exec "$(ns_name "$i")" tc)
        dev=eth0
    else
        tcx=(tc)
        dev=$(veth_name "$i")
    fi
    kind=$("${tcx[@]}" qdisc show dev "$dev" root | awk 'NR==1 {print $2}')
    [[ $kind == htb ]] || "${tcx[@]}" qdisc replace dev "$dev" root handle 1: htb default 0
    # Rail classes 1:400.., filters at prio 20..; pair classes use 1:100..,
    # prio 100..: rail filters come first.
    minor=$(printf '%x' $((0x400 + r)))
    prio=$((20 + r))
    "${tcx[@]}" filter del dev "$dev" parent 1: prio "$prio" 2>/dev/null || true
    "${tcx[@]}" qdisc del dev "$dev" parent "1:$minor" 2>/dev/null || true
    "${tcx[@]}" class del dev "$dev" classid "1:$minor" 2>/dev/null || true
    "${tcx[@]}" class add dev "$dev" parent 1: classid "1:$minor" \
        htb rate "$rate" ceil "$rate" burst "$TBF_BURST" cburst "$TBF_BURST" quantum 60000
    "${tcx[@]}" qdisc add dev "$dev" parent "1:$minor" handle "$minor:" \
        tbf rate "$rate" burst "$TBF_BURST" latency "$TBF_LATENCY"
    port=$(rail_port_min "$r")
    mask=$(printf '0x%04x' $((0xffff & ~(RAIL_PORT_SPAN - 1))))
    # "match ip sport/dport" reads the TCP header right after a 20-byte IP
    # header (no IP options, as Linux sends TCP).
    "${tcx[@]}" filter add dev "$dev" parent 1: protocol ip prio "$prio" \
        u32 match ip protocol 6 0xff match ip sport "$port" "$mask" flowid "1:$minor"
    "${tcx[@]}" filter add dev "$dev" parent 1: protocol ip prio "$prio" \
        u32 match ip protocol 6 0xff match ip dport "$port" "$mask" flowid "1:$minor"
}

# A slow NIC of one rail: tests that must name "node2's rail-1 NIC" rather
# than node2.  The host has one link; its rails are told apart by TCP port.
cmd_throttle_rail() {
    load_state
    [[ $# -eq 3 ]] || die "usage: testbed.sh throttle-rail HOST RAIL RATE"
    local i r=$2 rate=$3
    i=$(host_index "$1")
    if ! [[ $r =~ ^[0-9]+$ ]] || ((10#$r >= RAIL_MAX)); then
        die "bad rail '$r' (a local rank, 0 to $((RAIL_MAX - 1)))"
    fi
    r=$((10#$r))
    check_rate "$rate"
    # Check before changing either side, so a refusal leaves nothing half done.
    local bridge_kind
    bridge_kind=$(tc qdisc show dev "$(veth_name "$i")" root | awk 'NR==1 {print $2}')
    if [[ $(root_qdisc_kind "$i") == tbf || $bridge_kind == tbf ]]; then
        die "$(host_name "$i") has a whole-link throttle; run 'unthrottle $(host_name "$i")' first"
    fi
    add_rail_class "$i" host "$r" "$rate"
    add_rail_class "$i" bridge "$r" "$rate"
    echo "throttled $(host_name "$i")'s rail $r (TCP ports $(rail_port_min "$r")-$(($(rail_port_min "$r") + RAIL_PORT_SPAN - 1))) to $rate (both directions)"
}

cmd_throttle_pair() {
    load_state
    [[ $# -eq 3 ]] || die "usage: testbed.sh throttle-pair HOSTA HOSTB RATE"
    local a b rate=$3
    a=$(host_index "$1")
    b=$(host_index "$2")
    [[ $a -ne $b ]] || die "throttle-pair: HOSTA and HOSTB must differ"
    check_rate "$rate"
    # Shaping each host's egress towards the other covers both directions.
    add_pair_class "$a" "$b" "$rate"
    add_pair_class "$b" "$a" "$rate"
    echo "throttled $(host_name "$a") <-> $(host_name "$b") to $rate"
}

# Sets the caller's array in_group: 1 at each listed host's index, 0 at the
# others (an unknown host ends the script with host_index's error).
group_flags() {
    local h i
    for ((i = 0; i < K; i++)); do in_group[i]=0; done
    for h in "$@"; do
        i=$(host_index "$h")
        in_group[i]=1
    done
}

# This kernel has no netem, so a group cannot be given a pure delay; a low
# rate with no bucket makes every crossing message wait for tokens instead,
# which is what a latency island test needs: the group's own pairs stay fast,
# every pair across is slow, for small messages too.  The bucket must hold
# less than a packet: one of 2 KB refilled in a pause between two exchanges
# on the pair and passed a burst's first 20 or so small packets at once, so
# a latency measured as the fastest iteration came out fast on one rail in
# most runs and on both (3.6 us among 2700 us ones) in one.
cmd_slow_group() {
    load_state
    [[ $# -ge 2 ]] || die "usage: testbed.sh slow-group RATE HOST..."
    local rate=$1 i j
    shift
    check_rate "$rate"
    local -a in_group=()
    group_flags "$@"
    for ((i = 0; i < K; i++)); do
        for ((j = 0; j < K; j++)); do
            [[ ${in_group[i]} -ne ${in_group[j]} ]] || continue
            add_pair_class "$i" "$j" "$rate" island
        done
    done
    echo "slowed traffic between {$*} and the other hosts to $rate"
}

# Random loss on the host's interface, in its own namespace: what it sends
# and what it receives, each packet dropped with the given chance.
cmd_loss() {
    load_state
    [[ $# -eq 2 ]] || die "usage: testbed.sh loss HOST PERCENT"
    local i ns pct=$2
    [[ $pct =~ ^[0-9]+$ && $pct -ge 1 && $pct -le 99 ]] || die "bad loss '$pct' (a whole percent, 1 to 99)"
    command -v nft >/dev/null || die "loss needs nft (Debian package nftables)"
    i=$(host_index "$1")
    ns=$(ns_name "$i")
    ip netns exec "$ns" nft delete table inet fbloss 2>/dev/null || true
    ip netns exec "$ns" nft -f - <<NFT
table inet fbloss {
    chain in { type filter hook input priority 0; iifname "eth0" numgen random mod 100 < $pct drop; }
    chain out { type filter hook output priority 0; oifname "eth0" numgen random mod 100 < $pct drop; }
}
NFT
    echo "$(host_name "$i") drops $pct% of its packets (both directions)"
}

# The bridge a port is enslaved to (empty if none or no such device).
port_master() {
    ip -o link show dev "$1" 2>/dev/null | sed -n 's/.* master \([^ ]*\) .*/\1/p'
}

# Node names of the hosts whose bridge-side veth is on the second bridge.
uplink_members() {
    local i
    for ((i = 0; i < K; i++)); do
        [[ $(port_master "$(veth_name "$i")") != "$BRIDGE2" ]] || host_name "$i"
    done
}

# Wait (briefly) until every given bridge port forwards.  With STP off a port
# forwards as soon as it has carrier, but carrier reaches the bridge through
# the kernel's link watch, a moment after 'ip link set up'.
wait_forwarding() {
    local port n
    for port in "$@"; do
        for ((n = 0; n < 50; n++)); do
            # brport/state: 3 = forwarding
            [[ $(cat "/sys/class/net/$port/brport/state" 2>/dev/null) != 3 ]] || continue 2
            sleep 0.1
        done
        die "uplink: bridge port $port is not forwarding (state $(cat "/sys/class/net/$port/brport/state" 2>/dev/null || echo '?'))"
    done
}

# Undo 'uplink': cut the link first (the main bridge forgets the group's
# addresses learned on it), then put the group's veths back on the main bridge
# and delete the second bridge.  Works from the interfaces alone, so also on a
# bed whose state was lost.
uplink_remove() {
    local veth
    ip link show "$BRIDGE2" >/dev/null 2>&1 || ip link show "$UPLINK_MAIN" >/dev/null 2>&1 || return 0
    ip link del "$UPLINK_MAIN" 2>/dev/null || true
    for veth in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^${PREFIX}v[0-9]+$" || true); do
        if [[ $(port_master "$veth") == "$BRIDGE2" ]]; then
            ip link set "$veth" master "$BRIDGE"
        fi
    done
    ip link del "$BRIDGE2" 2>/dev/null || true
}

# A leaf switch with an oversubscribed uplink: the listed hosts' bridge-side
# veths move to a second bridge, joined to the main bridge by one veth pair
# with a tbf on both ends' egress.  Traffic within the group and among the
# other hosts stays on its own bridge, unshaped; every flow between the two
# sides crosses the one pair and shares its RATE, per direction.  Per-host
# or per-pair classes (slow-group, throttle-pair) cannot model that: each
# shapes its own flows, so two crossing pairs would each get the full rate.
cmd_uplink() {
    load_state
    [[ $# -ge 2 ]] || die "usage: testbed.sh uplink RATE HOST... (at least one host, not all)"
    local rate=$1 i
    shift
    check_rate "$rate"
    local -a in_group=() members=()
    group_flags "$@"
    for ((i = 0; i < K; i++)); do
        [[ ${in_group[i]} -eq 0 ]] || members+=("$i")
    done
    [[ ${#members[@]} -lt $K ]] || die "uplink: listed all $K hosts; at least one must stay on the main bridge"
    # Replaces an earlier uplink.
    uplink_remove
    # A failure or interrupt half-way must not leave a half-built uplink
    # behind (as in 'up': the signal traps only exit, the EXIT trap cleans up).
    trap 'exit 130' INT
    trap 'exit 143' TERM
    trap 'rc=$?; if [[ $rc -ne 0 ]]; then echo "testbed.sh: uplink failed or interrupted, removing it" >&2; uplink_remove; fi' EXIT
    # Two bridges joined by one link form a tree: no loop, so no STP is
    # needed; with STP off, ports forward as soon as they are up.
    ip link add "$BRIDGE2" type bridge stp_state 0
    echo 1 >"/proc/sys/net/ipv6/conf/$BRIDGE2/disable_ipv6" 2>/dev/null || true
    ip link set "$BRIDGE2" up
    ip link add "$UPLINK_MAIN" type veth peer name "$UPLINK_LEAF"
    echo 1 >"/proc/sys/net/ipv6/conf/$UPLINK_MAIN/disable_ipv6" 2>/dev/null || true
    echo 1 >"/proc/sys/net/ipv6/conf/$UPLINK_LEAF/disable_ipv6" 2>/dev/null || true
    # Egress of u0 is what enters the group, egress of u1 what leaves it.
    tc qdisc add dev "$UPLINK_MAIN" root handle 1: tbf rate "$rate" burst "$TBF_BURST" latency "$TBF_LATENCY"
    tc qdisc add dev "$UPLINK_LEAF" root handle 1: tbf rate "$rate" burst "$TBF_BURST" latency "$TBF_LATENCY"
    ip link set "$UPLINK_MAIN" master "$BRIDGE"
    ip link set "$UPLINK_LEAF" master "$BRIDGE2"
    ip link set "$UPLINK_MAIN" up
    ip link set "$UPLINK_LEAF" up
    local -a ports=("$UPLINK_MAIN" "$UPLINK_LEAF")
    for i in "${members[@]}"; do
        # Leaving the main bridge flushes the addresses it learned on the port.
        ip link set "$(veth_name "$i")" master "$BRIDGE2"
        ports+=("$(veth_name "$i")")
    done
    wait_forwarding "${ports[@]}"
    trap - INT TERM EXIT
    echo "uplink of $rate (both directions) between {$(uplink_members | paste -sd ' ')} and the other hosts"
}

cmd_unthrottle() {
    load_state
    local i
    if [[ $# -ge 1 ]]; then
        i=$(host_index "$1")
        clear_qdiscs "$i"
        echo "unthrottled $(host_name "$i")"
        # The uplink is shared by its whole group: a host behind it takes it
        # down for all.
        if [[ $(port_master "$(veth_name "$i")") == "$BRIDGE2" ]]; then
            uplink_remove
            echo "removed the uplink ($(host_name "$i") was behind it; all hosts are on $BRIDGE again)"
        fi
    else
        for ((i = 0; i < K; i++)); do clear_qdiscs "$i"; done
        uplink_remove
        echo "unthrottled all hosts"
    fi
}

# ---------------------------------------------------------------- run

cmd_run() {
    local -a upargs=()
    while [[ $# -gt 0 && $1 != -- ]]; do
        upargs+=("$1")
        shift
    done
    [[ ${1:-} == -- ]] || die "usage: testbed.sh run K [--subnet A.B.C] [--slots S] -- CMD..."
    shift
    [[ $# -ge 1 ]] || die "run: no command given"
    # Run 'up' in a child so its own traps stay separate; tear down no matter
    # how we leave (normal exit, failure, Ctrl-C, kill).
    "$SELF" up "${upargs[@]}"
    trap 'cmd_down' EXIT
    # The command runs in the background and we `wait` for it: bash defers
    # traps while a foreground child runs, so a SIGTERM sent to this script
    # alone would otherwise only act once the command had finished.  The
    # explicit <&0 keeps stdin (bash gives background jobs /dev/null).
    # The command inherits the bed's identity so nested testbed.sh calls find it.
    # set -m puts it in its own process group (and keeps SIGINT/SIGQUIT at
    # their defaults, which bash otherwise ignores in background jobs), so
    # stop_child can signal the whole command tree.
    set -m
    FB_TESTBED_PREFIX=$PREFIX FB_TESTBED_HOSTPREFIX=$HOSTPREFIX FB_TESTBED_STATE=$STATE "$@" <&0 &
    RUN_CHILD=$!
    set +m
    trap 'stop_child; exit 130' INT
    trap 'stop_child; exit 143' TERM
    local rc=0
    wait "$RUN_CHILD" || rc=$?
    return "$rc"
}

# Ask the command started by `run` to stop (mpirun tears down its daemons on
# SIGTERM), give it a few seconds, then let `down` kill whatever is left in
# the namespaces.
stop_child() {
    kill -TERM -- "-$RUN_CHILD" 2>/dev/null || return 0
    local n
    for ((n = 0; n < 50; n++)); do
        # kill -0 would also "succeed" on zombies (killed orteds linger as
        # zombies until init reaps them), so look for live members instead.
        ps -eo pgid=,stat= | awk -v g="$RUN_CHILD" '$1 == g && $2 !~ /^Z/ {found = 1} END {exit !found}' || break
        sleep 0.1
    done
    kill -KILL -- "-$RUN_CHILD" 2>/dev/null || true
}

main() {
    local cmd=${1:-}
    case "$cmd" in
        "") usage >&2; exit 1 ;;
        -h | --help | help) usage; return ;;
    esac
    shift
    require_root
    # Names are used in interface names (max 15 chars: <prefix>v<index>,
    # <prefix>br) and in grep patterns, so keep them short and plain.
    [[ $PREFIX =~ ^[a-z][a-z0-9]{0,7}$ ]] || die "FB_TESTBED_PREFIX must match [a-z][a-z0-9]{0,7}"
    [[ $HOSTPREFIX =~ ^[a-z][a-z0-9-]{0,30}$ ]] || die "FB_TESTBED_HOSTPREFIX must be a simple hostname prefix"
    case "$cmd" in
        up) cmd_up "$@" ;;
        down) cmd_down ;;
        status) cmd_status ;;
        exec) cmd_exec "$@" ;;
        mpirun) cmd_mpirun "$@" ;;
        selftest) cmd_selftest "$@" ;;
        throttle) cmd_throttle "$@" ;;
        throttle-pair) cmd_throttle_pair "$@" ;;
        throttle-rail) cmd_throttle_rail "$@" ;;
        slow-group) cmd_slow_group "$@" ;;
        uplink) cmd_uplink "$@" ;;
        loss) cmd_loss "$@" ;;
        unthrottle) cmd_unthrottle "$@" ;;
        run) cmd_run "$@" ;;
        *) usage >&2; exit 1 ;;
    esac
}

main "$@"
