#!/bin/sh
# Stop the daemons .ci/slurm-up.sh started, and only those, by their pid files.
set -u
DIR=${DTKGUARD_SLURM_DIR:-/tmp/dtkguard-slurm}
[ -f "$DIR/started" ] || { echo "slurm-down: nothing started in $DIR"; exit 0; }

stop() { # name pidfile
    sh "$(dirname "$0")/stop-pidfile.sh" "$1" "$2"
}

for node in n2 n1; do
    grep -qx "slurmd-$node" "$DIR/started" && stop "slurmd $node" "$DIR/slurmd-$node.pid"
done
grep -qx slurmctld "$DIR/started" && stop slurmctld "$DIR/slurmctld.pid"
grep -qx munged "$DIR/started" && stop munged "$DIR/munge/munged.pid"
rm -f "$DIR/started"
exit 0
