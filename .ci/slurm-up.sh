#!/bin/sh
# Bring up a throwaway two-node Slurm on this host, without systemd: munged, slurmctld and two
# slurmd "nodes" (n1, n2) on 127.0.0.1, from Debian's packages (installed when absent).
#
#   .ci/slurm-up.sh            # prints the config path; export SLURM_CONF=<it> to use the cluster
#   .ci/slurm-down.sh          # stops only what this script started, by pid file
#
# State (config, pid files, logs, spool) lives in $DTKGUARD_SLURM_DIR (default /tmp/dtkguard-slurm);
# /etc/slurm is not touched. Must run as root.
set -eu

DIR=${DTKGUARD_SLURM_DIR:-/tmp/dtkguard-slurm}
CTLD_PORT=${DTKGUARD_SLURM_PORT:-16817}

if [ "$(id -u)" != 0 ]; then
    echo "slurm-up: must run as root" >&2
    exit 2
fi

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
    || ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge
fi

if [ -e "$DIR/slurmctld.pid" ] && kill -0 "$(cat "$DIR/slurmctld.pid")" 2>/dev/null; then
    echo "slurm-up: already running (pid $(cat "$DIR/slurmctld.pid")); SLURM_CONF=$DIR/slurm.conf"
    exit 0
fi

mkdir -p "$DIR/ctld" "$DIR/log"
: > "$DIR/started"
id slurm >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin slurm
chown -R slurm:slurm "$DIR/ctld" "$DIR/log"
chmod 755 "$DIR"

# munge: reuse a running munged, else start one and remember that we did
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
    mkdir -p /run/munge
    chown munge:munge /run/munge
    chmod 755 /run/munge
    [ -s /etc/munge/munge.key ] || { mungekey --create 2>/dev/null || /usr/sbin/create-munge-key; }
    mkdir -p "$DIR/munge"
    chown munge:munge "$DIR/munge"
    su -s /bin/sh munge -c "/usr/sbin/munged --pid-file=$DIR/munge/munged.pid"
    echo munged >> "$DIR/started"
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && break
        sleep 0.5
    done
fi

HOST=$(hostname -s)
cat > "$DIR/slurm.conf" <<CONF
ClusterName=dtkguard-ci
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmUser=slurm
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/spool-%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
GresTypes=dcu
NodeName=n1 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=17001 CPUs=1 RealMemory=1000 Gres=dcu:4 State=UNKNOWN
NodeName=n2 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=17002 CPUs=1 RealMemory=1000 Gres=dcu:4 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
echo "Name=dcu Count=4" > "$DIR/gres.conf"
export SLURM_CONF="$DIR/slurm.conf"

/usr/sbin/slurmctld -f "$SLURM_CONF"
echo slurmctld >> "$DIR/started"
for node in n1 n2; do
    mkdir -p "$DIR/spool-$node"
    /usr/sbin/slurmd -f "$SLURM_CONF" -N "$node"
    echo "slurmd-$node" >> "$DIR/started"
done

# wait until both nodes are idle
for _ in $(seq 1 60); do
    idle=$(sinfo -h -N -o '%N %T' 2>/dev/null | grep -c ' idle' || true)
    [ "$idle" = 2 ] && break
    sleep 0.5
done
if [ "$idle" != 2 ]; then
    echo "slurm-up: nodes did not become idle:" >&2
    sinfo -N >&2 || true
    tail -n 20 "$DIR/log/"*.log >&2 || true
    exit 1
fi
echo "slurm-up: 2 nodes idle; SLURM_CONF=$SLURM_CONF"
