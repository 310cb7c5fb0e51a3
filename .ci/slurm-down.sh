#!/bin/sh
# Stop the daemons .ci/slurm-up.sh started, and only those, by their pid files.
set -u
DIR=${DTKGUARD_SLURM_DIR:-/tmp/dtkguard-slurm}
[ -f "$DIR/started" ] || { echo "slurm-down: nothing started in $DIR"; exit 0; }

stop() { # name pidfile
    [ -f "$2" ] || return 0
    pid=$(cat "$2")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
        echo "slurm-down: stopped $1 (pid $pid)"
    fi
    rm -f "$2"
}

for node in n2 n1; do
    grep -qx "slurmd-$node" "$DIR/started" && stop "slurmd $node" "$DIR/slurmd-$node.pid"
done
grep -qx slurmctld "$DIR/started" && stop slurmctld "$DIR/slurmctld.pid"
grep -qx munged "$DIR/started" && stop munged "$DIR/munge/munged.pid"
rm -f "$DIR/started"
exit 0
