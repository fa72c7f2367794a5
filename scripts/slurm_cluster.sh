#!/usr/bin/env bash
# Start a real single-node SLURM cluster on this host (Debian's slurm-wlm 22.05, munge, and
# slurmdbd on MariaDB so that `sacct` keeps SLURM's own record of every job). Used by
# tests/test_slurm.py and runnable by hand; needs root and Debian's package registry.
#
#   bash scripts/slurm_cluster.sh          # install if needed, write configs, start daemons
#   bash scripts/slurm_cluster.sh stop     # stop the daemons
#
# Idempotent: a running cluster with an idle node is left as it is. Package scripts cannot start
# services in this container, so the daemons are started by hand.
set -euo pipefail

CLUSTER=cruxflow
ACCOUNT=cruxflow
LOGDIR=/var/log/slurm
STATE=/var/spool/slurmctld

stop() {
    pkill -x slurmd || true
    pkill -x slurmctld || true
    pkill -x slurmdbd || true
    pkill -x munged || true
    if [ -S /run/mysqld/mysqld.sock ]; then mysqladmin shutdown || true; fi
}

if [ "${1:-}" = stop ]; then
    stop
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    echo "slurm_cluster.sh: needs root (apt-get and the SLURM daemons)" >&2
    exit 1
fi


host=$(hostname -s)
cpus=$(nproc)
mem_mb=$(awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.9}' /proc/meminfo)
slurm_conf="ClusterName=$CLUSTER
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$STATE
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=$LOGDIR/slurmctld.log
SlurmdLogFile=$LOGDIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStorageEnforce=associations
AccountingStoreFlags=job_comment
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MinJobAge=300
NodeName=$host CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=cpu Nodes=$host Default=YES MaxTime=INFINITE State=UP DefMemPerCPU=1000"

# Already running with this configuration: nothing to do.
if [ "$(cat /etc/slurm/slurm.conf 2>/dev/null)" = "$slurm_conf" ] \
    && sinfo -h -o %T 2>/dev/null | grep -qxE "idle|mixed|allocated" && sacct -n -X -S now >/dev/null 2>&1; then
    echo "slurm_cluster.sh: cluster already up"
    exit 0
fi

need=()
for bin in slurmctld:slurmctld slurmd:slurmd slurmdbd:slurmdbd munged:munge sbatch:slurm-client \
    mariadbd:mariadb-server; do
    command -v "${bin%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${bin%%:*}" ] || need+=("${bin##*:}")
done
if [ "${#need[@]}" -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "${need[@]}" >/dev/null 2>&1 || {
        apt-get update -q >/dev/null
        apt-get install -y -q "${need[@]}" >/dev/null
    }
fi

stop
sleep 1
mkdir -p /etc/slurm "$LOGDIR" "$STATE" /var/spool/slurmd /run/slurm /run/munge /run/mysqld
chown munge:munge /run/munge
chown mysql:mysql /run/mysqld

# munge: the package created the key; the daemon runs as its own user.
runuser -u munge -- /usr/sbin/munged

# MariaDB for slurmdbd, reached over its local socket as root.
mysqld_safe --skip-networking=0 --bind-address=127.0.0.1 >/dev/null 2>&1 &
for _ in $(seq 60); do
    mysqladmin ping >/dev/null 2>&1 && break
    sleep 0.5
done
mysql -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurm';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"

cat >/etc/slurm/slurmdbd.conf <<EOF
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
LogFile=$LOGDIR/slurmdbd.log
PidFile=/run/slurm/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
EOF
chmod 600 /etc/slurm/slurmdbd.conf

printf "%s\n" "$slurm_conf" >/etc/slurm/slurm.conf

slurmdbd
for _ in $(seq 60); do
    sacctmgr -n list cluster >/dev/null 2>&1 && break
    sleep 0.5
done
sacctmgr -i add cluster "$CLUSTER" >/dev/null 2>&1 || true
sacctmgr -i add account "$ACCOUNT" Cluster="$CLUSTER" Description=cruxflow Organization=cruxflow \
    >/dev/null 2>&1 || true
sacctmgr -i add user "$(id -un)" Account="$ACCOUNT" DefaultAccount="$ACCOUNT" >/dev/null 2>&1 || true

slurmctld
slurmd
for _ in $(seq 60); do
    if sinfo -h -o %T 2>/dev/null | grep -qx idle; then
        echo "slurm_cluster.sh: node $host idle ($cpus CPUs, $mem_mb MB), account $ACCOUNT"
        exit 0
    fi
    sleep 0.5
done
echo "slurm_cluster.sh: the node did not become idle; see $LOGDIR" >&2
sinfo >&2 || true
exit 1
