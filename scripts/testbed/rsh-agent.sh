#!/usr/bin/env bash
# rsh-agent.sh - Open MPI "remote shell" for the fabricbench namespace test bed.
#
# Open MPI's rsh launcher (plm_rsh) starts one orted per remote node by running
#     <agent> [agent options] <hostname> <word> <word> ...
# exactly like it would run ssh.  The words after the hostname form a command
# line written for a *remote shell*: ssh joins them with spaces and the remote
# login shell re-parses the string (Open MPI relies on that: it passes pieces
# such as `PATH=/usr/bin:$PATH ; export PATH ;` and double-quoted URIs that
# contain ';').  So we do the same: join with spaces and hand the string to
# `sh -c` inside the target "host".
#
# A "host" of the test bed is a network namespace plus a private UTS namespace
# (so `hostname`/MPI_Get_processor_name report the node name).  The
# hostname -> namespace map is read from $FB_TESTBED_STATE/nodes, which
# `testbed.sh up` writes; `testbed.sh mpirun` exports FB_TESTBED_STATE so that
# mpirun (and therefore this agent, which inherits mpirun's environment) finds it.
set -euo pipefail

die() {
    echo "rsh-agent.sh: $*" >&2
    # 255 is what ssh returns for connection-level failures; Open MPI reports
    # it as "daemon failed to start" with our message above it.
    exit 255
}

# Debug aid: FB_TESTBED_AGENT_LOG=/path records every invocation verbatim.
if [[ -n ${FB_TESTBED_AGENT_LOG:-} ]]; then
    printf '%q ' "$0" "$@" >>"$FB_TESTBED_AGENT_LOG"
    echo >>"$FB_TESTBED_AGENT_LOG"
fi

# Skip ssh-style options.  Open MPI 4.1 only adds -x/-X when the agent's
# basename is "ssh", but users may set plm_rsh_args, so accept the common ssh
# flags (and the ones taking an argument) instead of mistaking them for the
# hostname.
while [[ $# -gt 0 ]]; do
    case "$1" in
        --) shift; break ;;
        -[bcDEeFIiJLlmOopQRSWw]) [[ $# -ge 2 ]] || die "option $1 needs an argument"; shift 2 ;;
        -?*) shift ;;
        *) break ;;
    esac
done

[[ $# -ge 1 ]] || die "usage: rsh-agent.sh [options] HOSTNAME [COMMAND...]"
host=$1
shift
# ssh semantics: user@host is accepted; the user part is meaningless here.
host=${host##*@}

state=${FB_TESTBED_STATE:-/tmp/fabricbench-testbed-${FB_TESTBED_PREFIX:-fbh}}
nodes_file=$state/nodes
[[ -r $nodes_file ]] || die "no test bed state at $nodes_file (is the test bed up? is FB_TESTBED_STATE exported?)"

# nodes file format: "<hostname> <netns> <ip>" per line.  Accept the node name,
# the namespace name or the IP, since Open MPI may pass any of them depending on
# what the user wrote in --host/--hostfile.
ns=""
node=""
while read -r n_name n_ns n_ip; do
    if [[ $host == "$n_name" || $host == "$n_ns" || $host == "$n_ip" ]]; then
        ns=$n_ns
        node=$n_name
        break
    fi
done <"$nodes_file"
[[ -n $ns ]] || die "unknown host '$host' (not in $nodes_file)"

if [[ $# -eq 0 ]]; then
    # ssh without a command would open a login shell; there is no sensible
    # equivalent for a launcher, so refuse clearly.
    die "no command given for host '$host'"
fi
cmd="$*"

# Give the remote side an ssh-like, mostly clean environment: inheriting
# mpirun's environment would leak PMIX_*/OMPI_* variables that describe the
# *local* daemon (host 0) into the remote orted.  Values the user wants on the
# ranks must be forwarded with `mpirun -x VAR`, exactly as on a real cluster.
# Set FB_TESTBED_AGENT_KEEPENV=1 to keep the full environment for debugging.
envargs=()
if [[ ${FB_TESTBED_AGENT_KEEPENV:-0} != 1 ]]; then
    envargs=(env -i)
    for v in PATH HOME USER LOGNAME SHELL LANG LC_ALL TERM TMPDIR LD_LIBRARY_PATH OPAL_PREFIX \
        FB_TESTBED_STATE FB_TESTBED_PREFIX FB_TESTBED_HOSTPREFIX; do
        if [[ -n ${!v+x} ]]; then
            envargs+=("$v=${!v}")
        fi
    done
fi

# exec all the way down so that the remote command ends up with this
# process's PID and sees signals sent to the agent.  (With
# plm_rsh_no_tree_spawn Open MPI passes `orted --daemonize`, so the daemon
# detaches anyway and is shut down by mpirun over its TCP channel.)
# `ip netns exec` also bind-mounts /etc/netns/<ns>/hosts over /etc/hosts, which
# is how node names resolve inside the namespace.
# shellcheck disable=SC2016 # $1/$2 are expanded by the inner sh
exec "${envargs[@]}" ip netns exec "$ns" unshare --uts -- \
    sh -c 'hostname "$1" || exit 255; exec sh -c "$2"' fb-rsh "$node" "$cmd"
