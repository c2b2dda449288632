#!/usr/bin/env bash
# The multihost lane: mpicoll across simulated hosts, MPI over TCP.
#
# Builds a Linux bridge and N network namespaces (hosts h1..hN, one veth each, a private /24
# used only there; see netns.sh), launches MPICH's Hydra mpiexec with a launcher that starts
# each host's proxy inside its namespace (own hostname), and runs, every job under `timeout`:
#   1. placement checks and examples/ddp_train.py at one rank per host   (check_multihost.py)
#   2. the seed examples and ddp_train.py at 4 ranks, 2 per host and round-robin over hosts,
#      against their documented outputs                                   (tests/test_examples.py)
#   3. a multi-rank subset of the suite at 1 and 2 ranks per host       (pytest under mpiexec)
#   4. traffic evidence: one all_to_all_single across 2 hosts; the bytes that crossed between
#      hosts (veth counters) against the bytes the collective had to move
# With --bench, instead: all_to_all_single and all_reduce at 1 and 16 MiB per rank, one host
# (plain mpiexec -n 2) vs two hosts (1 rank each).
#
# Usage: bash tests/multihost/run.sh [--hosts 2|4] [--netmod ucx|ofi] [--bench]
# Exit status: 0 passed, 1 failed, 2 usage/setup error, 77 SKIPPED (this machine does not
# allow the simulated cluster: not root, no iproute2, namespaces refused, no Hydra mpiexec).
# Everything it creates is removed on exit, whatever happened (and leftovers of a crashed
# earlier run are removed first).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
VENV=${VENV:-$ROOT/.venv}
case "$VENV" in /*) ;; *) VENV=$ROOT/$VENV ;; esac
PY=$VENV/bin/python
HYDRA=${MH_MPIEXEC_BIN:-$VENV/bin/mpiexec}
JOB_TIMEOUT=${MH_JOB_TIMEOUT:-300}   # seconds, each mpiexec (and each pytest that spawns them)

NHOSTS=2
NETMOD=ucx
MODE=test
while [ $# -gt 0 ]; do
    case "$1" in
        --hosts) NHOSTS=${2:?}; shift 2 ;;
        --netmod) NETMOD=${2:?}; shift 2 ;;
        --bench) MODE=bench; shift ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case "$NHOSTS" in 2|4) ;; *) echo "run.sh: --hosts must be 2 or 4" >&2; exit 2 ;; esac
case "$NETMOD" in ucx|ofi) ;; *) echo "run.sh: --netmod must be ucx or ofi" >&2; exit 2 ;; esac

# shellcheck source=tests/multihost/netns.sh
source "$HERE/netns.sh"

skip() {
    echo "multihost lane SKIPPED: $*"
    exit 77
}

# --- can this machine do it? ------------------------------------------------------------
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, a bridge, veth pairs); running as uid $(id -u)"
for tool in ip unshare timeout hostname; do
    command -v "$tool" >/dev/null || skip "no '$tool' command on this machine"
done
[ -x "$PY" ] || { echo "run.sh: no Python at $PY (run 'make venv' first)" >&2; exit 2; }
[ -x "$HYDRA" ] || skip "no mpiexec at $HYDRA"
timeout 30 "$HYDRA" --version 2>/dev/null | grep -q HYDRA \
    || skip "$HYDRA is not MPICH's Hydra (the namespace launcher needs Hydra's -launcher-exec)"

# one lane at a time on this machine: the names below are fixed
if command -v flock >/dev/null; then
    exec 9>/tmp/mpicoll-multihost.lock
    flock -w 600 9 || { echo "run.sh: another multihost lane holds /tmp/mpicoll-multihost.lock" >&2; exit 2; }
fi

WORK=$(mktemp -d /tmp/mpicoll-multihost.XXXXXX)
CHILD=""
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$CHILD" ]; then kill -TERM "$CHILD" 2>/dev/null || true; wait "$CHILD" 2>/dev/null || true; fi
    mh_teardown
    rm -rf "$WORK"
    if ip netns list 2>/dev/null | grep -q "^$MH_NS[0-9]" || ip link show "$MH_BR" >/dev/null 2>&1; then
        echo "[multihost] teardown left namespaces or the bridge behind" >&2
        [ "$rc" = 0 ] && rc=1
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# run a command under `timeout`, in the background so a signal to this script acts at once
bounded() {
    local rc=0
    timeout -k 10 "$JOB_TIMEOUT" "$@" &
    CHILD=$!
    wait "$CHILD" || rc=$?
    CHILD=""
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        mh_log "TIMED OUT after ${JOB_TIMEOUT}s: $*"
    fi
    return "$rc"
}

T0=$(date +%s)
mh_teardown   # leftovers of a crashed earlier run
if ! err=$(ip netns add "${MH_NS}probe" 2>&1); then
    skip "'ip netns add' fails here: $err"
fi
ip netns del "${MH_NS}probe"
if ! err=$(mh_setup "$NHOSTS" 2>&1); then
    skip "cannot build the simulated cluster (bridge, veth, namespace addresses): $err"
fi
mh_reachable "$NHOSTS" || skip "the namespaces cannot reach each other over bridge $MH_BR (bridged traffic filtered?)"
LAUNCHER=$WORK/hydra-launcher.sh
mh_write_launcher "$LAUNCHER"
mh_log "cluster up: bridge $MH_BR, hosts h1..h$NHOSTS = $MH_NET.1..$NHOSTS on $MH_IF ($(($(date +%s) - T0))s)"

# Hydra across the hosts. -iface: proxies connect back over the bridge (this machine's own
# hostname means 127.0.0.1, the namespace's loopback). The transport must be told to use the
# host interface: namespaces do not isolate shared memory, so UCX would otherwise treat the
# other "host" as the same node.
MPX=("$HYDRA" -launcher ssh -launcher-exec "$LAUNCHER" -iface "$MH_BR")
if [ "$NETMOD" = ucx ]; then
    MPX+=(-genv UCX_TLS self,tcp -genv UCX_NET_DEVICES "$MH_IF")
else
    MPX+=(-genv MPIR_CVAR_CH4_NETMOD ofi -genv FI_PROVIDER tcp -genv FI_TCP_IFACE "$MH_IF")
fi
hosts_list() {  # hosts_list PER_HOST -> h1:P,h2:P,...
    local i s=""
    for i in $(seq 1 "$NHOSTS"); do s+="${s:+,}h$i:$1"; done
    echo "$s"
}
PYTEST=("$PY" -m pytest -q -x -p no:cacheprovider)
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
cd "$ROOT"

FAILED=()
step() {  # step NAME CMD...: run, report, remember failures, go on
    local name=$1 rc=0
    shift
    mh_log "== $name"
    local t=$(date +%s)
    bounded "$@" || rc=$?
    if [ "$rc" = 0 ]; then
        mh_log "   ok: $name ($(($(date +%s) - t))s)"
    else
        mh_log "   FAILED (exit $rc): $name"
        FAILED+=("$name")
    fi
}

if [ "$MODE" = bench ]; then
    step "bench: 1 host, 2 ranks (plain mpiexec)" \
        "$HYDRA" -n 2 "$PY" tests/multihost/bench_pair.py "one host" "$WORK/one.json"
    step "bench: 2 hosts, 1 rank each ($NETMOD over tcp)" \
        "${MPX[@]}" -hosts h1,h2 -n 2 "$PY" tests/multihost/bench_pair.py "two hosts" "$WORK/two.json"
    if [ ${#FAILED[@]} = 0 ]; then
        echo
        "$PY" tests/multihost/bench_pair.py --table "$WORK/one.json" "$WORK/two.json" || FAILED+=("bench verification")
    fi
else
    # 1. placement, and DDP with one rank per host (both ways of finding rank 0's store)
    step "placement + ddp_train at 1 rank per host" env MH_MPIEXEC="${MPX[*]}" \
        MH_NHOSTS="$NHOSTS" MH_NET="$MH_NET" "${PYTEST[@]}" tests/multihost/check_multihost.py

    # 2. seed examples and DDP at 4 ranks, documented outputs from tests/test_examples.py
    SEEDS="seed_000 or seed_001 or seed_003 or ddp_train_example"
    spreads=("h1:2,h2:2" "h1,h2")
    [ "$NHOSTS" = 4 ] && spreads+=("h1,h2,h3,h4")
    for hs in "${spreads[@]}"; do
        step "seed examples + ddp_train, 4 ranks on -hosts $hs" \
            env MPIEXEC="${MPX[*]} -hosts $hs" "${PYTEST[@]}" tests/test_examples.py -k "$SEEDS"
    done

    # 3. the suite's multi-rank tests: every collective family, numpy and torch, groups,
    #    async, p2p, the torch backend with a DDP step
    SUITE=(tests/test_all_to_all.py tests/test_all_gather.py tests/test_reduce_scatter.py
           tests/test_all_reduce.py tests/test_rooted.py tests/test_p2p.py tests/test_groups.py
           tests/test_torch_backend.py)
    for per in 1 2; do
        n=$((NHOSTS * per))
        step "suite subset, $n ranks on -hosts $(hosts_list "$per")" \
            "${MPX[@]}" -hosts "$(hosts_list "$per")" -n "$n" "${PYTEST[@]}" --with-mpi "${SUITE[@]}"
    done

    # 4. evidence: bytes between hosts vs bytes the collective must move between hosts
    mh_log "== evidence: all_to_all_single, 16 MiB per rank, 2 hosts x 1 rank"
    EV_ENV=()
    [ "$NETMOD" = ucx ] && EV_ENV=(-genv UCX_LOG_LEVEL info)
    before=$(mh_bytes_out_of_hosts "$NHOSTS")
    rc=0
    bounded "${MPX[@]}" "${EV_ENV[@]}" -hosts h1,h2 -n 2 "$PY" tests/multihost/measure_traffic.py \
        $((16 << 20)) >"$WORK/evidence.log" 2>&1 || rc=$?
    veth=$(($(mh_bytes_out_of_hosts "$NHOSTS") - before))
    line=$(grep '^MEASURE ' "$WORK/evidence.log" || true)
    if [ "$rc" != 0 ] || [ -z "$line" ]; then
        cat "$WORK/evidence.log" >&2
        FAILED+=("traffic evidence")
    else
        needed=$(sed -n 's/.* needed=\([0-9]*\).*/\1/p' <<<"$line")
        crossed=$(sed -n 's/.* crossed=\([0-9]*\).*/\1/p' <<<"$line")
        tcp="n/a (ofi netmod)"
        if [ "$NETMOD" = ucx ]; then
            tcp=$(grep -c 'inter-node.*tag(tcp/'"$MH_IF"')' "$WORK/evidence.log" || true)
            tcp="$tcp of 2 ranks log UCX 'inter-node tag(tcp/$MH_IF)'"
            grep -q 'inter-node.*tag(tcp/' "$WORK/evidence.log" || FAILED+=("UCX did not report tcp between hosts")
        fi
        ok=PASS
        if [ "$veth" -lt "$needed" ] || [ "$crossed" -lt "$needed" ]; then
            ok=FAIL
            FAILED+=("traffic evidence: fewer bytes crossed than needed")
        fi
        echo "EVIDENCE $ok: all_to_all_single 2 hosts x 1 rank, 16 MiB per rank ($NETMOD): " \
            "needed between hosts $needed B; crossed $crossed B on $MH_IF during the collective" \
            "($(awk "BEGIN{printf \"%.3f\", $crossed/$needed}")x), $veth B on the veths over the" \
            "whole job ($(awk "BEGIN{printf \"%.3f\", $veth/$needed}")x); $tcp"
    fi
fi

mh_log "lane time $(($(date +%s) - T0))s"
if [ ${#FAILED[@]} -gt 0 ]; then
    mh_log "multihost lane FAILED: ${FAILED[*]}"
    exit 1
fi
mh_log "multihost lane passed ($MODE, $NHOSTS hosts, $NETMOD)"
