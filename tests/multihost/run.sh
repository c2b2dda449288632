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
# (plain mpiexec -n 2) vs two hosts (1 rank each), over the ucx and the ofi netmod.
# With --exec CMD, instead: run CMD (bash, from the repository root, under `timeout`) with
# $MH_MPIEXEC set to the launcher line (add -hosts and -n), e.g. to try your own script:
#   bash tests/multihost/run.sh --exec '$MH_MPIEXEC -hosts h1:2,h2:2 -n 4 python my.py'
#
# Usage: bash tests/multihost/run.sh [--hosts 2|4] [--netmod ucx|ofi] [--bench | --exec CMD]
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
        --exec) MODE=exec; EXEC_CMD=${2:?}; shift 2 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
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
hydra_version=$(timeout 30 "$HYDRA" --version 2>/dev/null || true)
[[ "$hydra_version" == *HYDRA* ]] \
    || skip "$HYDRA is not MPICH's Hydra (the namespace launcher needs Hydra's -launcher-exec)"

# one lane at a time on this machine: the names below are fixed
if command -v flock >/dev/null; then
    exec 9<"$HERE/netns.sh"   # lock a file of ours: nothing to create or clean up
    flock -w 600 9 || { echo "run.sh: another multihost lane is still running after 600s" >&2; exit 2; }
fi

WORK=$(mktemp -d /tmp/mpicoll-multihost.XXXXXX)
CHILD=""
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$CHILD" ]; then  # the running job: `timeout` leads its own process group
        kill -TERM -- "-$CHILD" 2>/dev/null || kill -TERM "$CHILD" 2>/dev/null || true
        wait "$CHILD" 2>/dev/null || true
    fi
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
# hostname means 127.0.0.1, the namespace's loopback). The netmod must be told to use the
# host interface: namespaces do not isolate shared memory, so UCX would otherwise treat the
# other "host" as the same node. Ranks on the same host still use MPICH's shared memory.
MPX_BASE=("$HYDRA" -launcher ssh -launcher-exec "$LAUNCHER" -iface "$MH_BR")
MPX_UCX=("${MPX_BASE[@]}" -genv UCX_TLS self,tcp -genv UCX_NET_DEVICES "$MH_IF")
MPX_OFI=("${MPX_BASE[@]}" -genv MPIR_CVAR_CH4_NETMOD ofi -genv FI_PROVIDER tcp
         -genv FI_TCP_IFACE "$MH_IF")
if [ "$NETMOD" = ucx ]; then MPX=("${MPX_UCX[@]}"); else MPX=("${MPX_OFI[@]}"); fi
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
    local t
    t=$(date +%s)
    bounded "$@" || rc=$?
    if [ "$rc" = 0 ]; then
        mh_log "   ok: $name ($(($(date +%s) - t))s)"
    else
        mh_log "   FAILED (exit $rc): $name"
        FAILED+=("$name")
    fi
}

# evidence NETMOD: one all_to_all_single of 16 MiB per rank, 1 rank on each of 2 hosts. The
# bytes that left the hosts (their veths, whole job; their interface, around the collective
# only) must be at least the bytes the collective has to move between hosts.
evidence() {
    local netmod=$1 rc=0 before veth line needed crossed tcp ok log=$WORK/evidence-$1.log
    local mpx=("${MPX_UCX[@]}" -genv UCX_LOG_LEVEL info)
    [ "$netmod" = ofi ] && mpx=("${MPX_OFI[@]}")
    mh_log "== evidence ($netmod): all_to_all_single, 16 MiB per rank, 2 hosts x 1 rank"
    before=$(mh_bytes_out_of_hosts "$NHOSTS")
    bounded "${mpx[@]}" -hosts h1,h2 -n 2 "$PY" tests/multihost/measure_traffic.py \
        $((16 << 20)) >"$log" 2>&1 || rc=$?
    veth=$(($(mh_bytes_out_of_hosts "$NHOSTS") - before))
    line=$(grep '^MEASURE ' "$log" || true)
    if [ "$rc" != 0 ] || [ -z "$line" ]; then
        cat "$log" >&2
        FAILED+=("traffic evidence ($netmod)")
        return 0
    fi
    needed=$(sed -n 's/.* needed=\([0-9]*\).*/\1/p' <<<"$line")
    crossed=$(sed -n 's/.* crossed=\([0-9]*\).*/\1/p' <<<"$line")
    tcp="libfabric provider tcp on $MH_IF (FI_PROVIDER=tcp)"
    if [ "$netmod" = ucx ]; then
        tcp="$(grep -c "inter-node.*tag(tcp/$MH_IF)" "$log" || true) of 2 ranks log UCX 'inter-node tag(tcp/$MH_IF)'"
        grep -q "inter-node.*tag(tcp/$MH_IF)" "$log" || FAILED+=("UCX did not report tcp between hosts")
    fi
    ok=PASS
    if [ "$veth" -lt "$needed" ] || [ "$crossed" -lt "$needed" ]; then
        ok=FAIL
        FAILED+=("traffic evidence ($netmod): fewer bytes crossed than needed")
    fi
    echo "EVIDENCE $ok ($netmod): all_to_all_single, 2 hosts x 1 rank, 16 MiB per rank:" \
        "needed between hosts $needed B; crossed $crossed B on $MH_IF during the collective" \
        "($(awk "BEGIN{printf \"%.3f\", $crossed/$needed}")x), $veth B through the veths over" \
        "the whole job ($(awk "BEGIN{printf \"%.3f\", $veth/$needed}")x); $tcp"
}

if [ "$MODE" = exec ]; then
    export MH_MPIEXEC="${MPX[*]}" MH_NHOSTS="$NHOSTS" MH_NET="$MH_NET" MH_IF PATH="$VENV/bin:$PATH"
    step "exec: $EXEC_CMD" bash -c "$EXEC_CMD"
elif [ "$MODE" = bench ]; then
    step "bench: 1 host, 2 ranks (plain mpiexec)" \
        "$HYDRA" -n 2 "$PY" tests/multihost/bench_pair.py "1 host" "$WORK/one.json"
    step "bench: 2 hosts, 1 rank each (ucx over tcp)" "${MPX_UCX[@]}" -hosts h1,h2 -n 2 \
        "$PY" tests/multihost/bench_pair.py "2 hosts, ucx" "$WORK/two-ucx.json"
    step "bench: 2 hosts, 1 rank each (ofi over tcp)" "${MPX_OFI[@]}" -hosts h1,h2 -n 2 \
        "$PY" tests/multihost/bench_pair.py "2 hosts, ofi" "$WORK/two-ofi.json"
    if [ ${#FAILED[@]} = 0 ]; then
        echo
        "$PY" tests/multihost/bench_pair.py --table "$WORK/one.json" "$WORK/two-ucx.json" \
            "$WORK/two-ofi.json" || FAILED+=("bench verification")
    fi
else
    # 1. placement, and DDP with one rank per host (both ways of finding rank 0's store)
    step "placement + ddp_train at 1 rank per host" env MH_MPIEXEC="${MPX[*]}" \
        MH_NHOSTS="$NHOSTS" MH_NET="$MH_NET" "${PYTEST[@]}" tests/multihost/check_multihost.py

    # 2. seed examples and DDP at 4 ranks, documented outputs from tests/test_examples.py
    SEEDS="seed_000 or seed_001 or seed_003 or ddp_train_example"
    spreads=("h1:2,h2:2" "h1,h2")
    if [ "$NHOSTS" = 4 ]; then spreads+=("h1,h2,h3,h4"); fi
    for hs in "${spreads[@]}"; do
        step "seed examples + ddp_train, 4 ranks on -hosts $hs" \
            env MPIEXEC="${MPX[*]} -hosts $hs" "${PYTEST[@]}" tests/test_examples.py -k "$SEEDS"
    done

    # 3. the suite's multi-rank tests: every collective family, numpy and torch, groups,
    #    async, p2p, the torch backend with a DDP step
    SUITE=(tests/test_all_to_all.py tests/test_all_gather.py tests/test_reduce_scatter.py
           tests/test_all_reduce.py tests/test_rooted.py tests/test_p2p.py tests/test_groups.py
           tests/test_torch_backend.py)
    # MPICH 5.0.2's UCX netmod can lose ANY_SOURCE receives when several senders on other
    # hosts are pending at once (pure-mpi4py reproducer: anysource_repro.py). With one rank
    # per host on 2 hosts rank 0 has a single remote sender, and that hung too on a loaded
    # machine (test_recv_any_source_returns_sender[torch]: 1 of 4 runs beside two busy
    # processes, 0 of 11 on a quiet one; CI hung there once), where the sender's barrier
    # messages follow its message at once. The two any-source tests are left to the ofi
    # netmod, which runs the whole subset below.
    ANYSRC="not test_recv_any_source_returns_sender and not test_p2p_any_source_and_batch"
    # 2 hosts: 1 and 2 ranks per host; 4 hosts: 1 rank per host (8 ranks on 2 cores is too many)
    pers=(1 2)
    if [ "$NHOSTS" = 4 ]; then pers=(1); fi
    for per in "${pers[@]}"; do
        n=$((NHOSTS * per))
        sel=()
        if [ "$NETMOD" = ucx ]; then
            sel=(-k "$ANYSRC")
            mh_log "   (ucx, $n ranks: any-source receive tests deselected, known MPICH/UCX hang; run under ofi below)"
        fi
        step "suite subset, $n ranks on -hosts $(hosts_list "$per") ($NETMOD)" \
            "${MPX[@]}" -hosts "$(hosts_list "$per")" -n "$n" "${PYTEST[@]}" --with-mpi "${sel[@]}" "${SUITE[@]}"
    done
    if [ "$NETMOD" = ucx ]; then
        per=$((4 / NHOSTS))
        step "suite subset, 4 ranks on -hosts $(hosts_list "$per") (ofi, nothing deselected)" \
            "${MPX_OFI[@]}" -hosts "$(hosts_list "$per")" -n 4 "${PYTEST[@]}" --with-mpi "${SUITE[@]}"
    fi

    # 4. evidence: bytes between hosts vs bytes the collective must move between hosts
    evidence "$NETMOD"
    if [ "$NETMOD" = ucx ]; then evidence ofi; fi
fi

mh_log "lane time $(($(date +%s) - T0))s"
if [ ${#FAILED[@]} -gt 0 ]; then
    mh_log "multihost lane FAILED: ${FAILED[*]}"
    exit 1
fi
mh_log "multihost lane passed ($MODE, $NHOSTS hosts, $NETMOD)"
