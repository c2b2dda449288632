# Sourced by run.sh: a simulated cluster on one machine, one network namespace per "host".
#
#   root namespace:  bridge $MH_BR ($MH_NET.254/24), veths ${MH_VETH}1..N enslaved to it
#   namespace ${MH_NS}i ("host" hi):  interface $MH_IF = $MH_NET.i/24, lo up, no default route,
#                    /etc/netns/${MH_NS}i/hosts so every host name resolves to its address
#
# Everything here is created by mh_setup and removed by mh_teardown, which is idempotent and
# also clears what a crashed earlier run left behind. Nothing else on the machine is touched.

MH_BR=${MH_BR:-mpcbr0}          # the "switch"
MH_NS=${MH_NS:-mpch}            # namespaces mpch1, mpch2, ...
MH_VETH=${MH_VETH:-mpcv}        # root-side veth ends mpcv1, mpcv2, ...
MH_IF=${MH_IF:-mpi0}            # namespace-side interface, the same name on every host
MH_NET=${MH_NET:-10.231.77}     # private /24 used only on this bridge
MH_MAX_HOSTS=8                  # teardown sweeps this many, whatever N was

mh_log() { printf '[multihost] %s\n' "$*" >&2; }

# Kill what still runs inside a namespace of ours (MPI processes of a job that timed out).
mh_kill_ns_procs() {
    local ns=$1 pids
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        [ -n "$pids" ] || return 0
        sleep 0.2
    done
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.2
}

mh_teardown() {
    local i ns
    for i in $(seq 1 "$MH_MAX_HOSTS"); do
        ns=$MH_NS$i
        if [ -e "/run/netns/$ns" ]; then
            mh_kill_ns_procs "$ns"
            ip netns del "$ns" 2>/dev/null || true
        fi
        # deleting the namespace deletes its veth end; the root end goes with it, or here
        ip link del "$MH_VETH$i" 2>/dev/null || true
        rm -rf "/etc/netns/$ns"
    done
    [ -e "/run/netns/${MH_NS}probe" ] && ip netns del "${MH_NS}probe" 2>/dev/null
    ip link del "$MH_BR" 2>/dev/null || true
    rmdir /etc/netns 2>/dev/null || true   # only if empty: never remove anything not ours
    return 0
}

# mh_setup N: the bridge and N hosts h1..hN. Returns non-zero on the first failing step.
mh_setup() {
    local n=$1 i j ns
    ip link add "$MH_BR" type bridge || return 1
    ip addr add "$MH_NET.254/24" dev "$MH_BR" || return 1
    ip link set "$MH_BR" up || return 1
    for i in $(seq 1 "$n"); do
        ns=$MH_NS$i
        ip netns add "$ns" || return 1
        ip link add "$MH_VETH$i" type veth peer name "$MH_IF" netns "$ns" || return 1
        ip link set "$MH_VETH$i" master "$MH_BR" || return 1
        ip link set "$MH_VETH$i" up || return 1
        ip -n "$ns" link set lo up || return 1
        ip -n "$ns" addr add "$MH_NET.$i/24" dev "$MH_IF" || return 1
        ip -n "$ns" link set "$MH_IF" up || return 1
        # `ip netns exec` bind-mounts /etc/netns/<ns>/hosts over /etc/hosts: host names resolve
        # to bridge addresses, as a cluster's DNS would make them
        mkdir -p "/etc/netns/$ns" || return 1
        {
            printf '127.0.0.1\tlocalhost\n'
            printf '%s.254\tmpc-head\n' "$MH_NET"
            for j in $(seq 1 "$n"); do printf '%s.%s\th%s\n' "$MH_NET" "$j" "$j"; done
        } >"/etc/netns/$ns/hosts" || return 1
    done
    return 0
}

# mh_reachable N: can h1 reach every other host over the bridge? A refused TCP connection
# proves the path (ARP, bridge, veths) works; a timeout means it does not (yet).
mh_reachable() {
    local n=$1 j out ok
    for j in $(seq 2 "$n"); do
        ok=1
        for _ in $(seq 1 25); do
            out=$(ip netns exec "${MH_NS}1" timeout 1 bash -c "exec 3<>/dev/tcp/$MH_NET.$j/9" 2>&1) \
                && { ok=0; break; }
            case "$out" in *refused*) ok=0; break ;; esac
            sleep 0.2
        done
        [ "$ok" = 0 ] || return 1
    done
    return 0
}

# mh_write_launcher FILE: Hydra's "ssh". Hydra runs  FILE [-x] <host> <proxy words...>;
# this runs the words (a shell command line, as ssh would) inside that host's namespace, with its own UTS namespace and hostname.
mh_write_launcher() {
    cat >"$1" <<EOF
#!/bin/sh
# Hydra launcher for the simulated cluster (written by tests/multihost/run.sh)
[ "\$1" = "-x" ] && shift
host=\$1; shift
case "\$host" in
    h[1-9]) ns=$MH_NS\${host#h} ;;
    *) echo "multihost launcher: unknown host '\$host' (expected h1..h$MH_MAX_HOSTS)" >&2; exit 255 ;;
esac
# like ssh, hand the words to a shell as one command line (hydra quotes the proxy's path)
exec ip netns exec "\$ns" unshare --uts sh -c 'hostname "\$0" && eval "exec \$1"' "\$host" "\$*"
EOF
    chmod +x "$1"
}

# Bytes that left all hosts (rx on the root-side veth ends = tx of the hosts), summed.
mh_bytes_out_of_hosts() {
    local n=$1 i total=0 v
    for i in $(seq 1 "$n"); do
        v=$(cat "/sys/class/net/$MH_VETH$i/statistics/rx_bytes")
        total=$((total + v))
    done
    echo "$total"
}
