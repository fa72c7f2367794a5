#!/usr/bin/env bash
# Start a real single-node SLURM cluster on this host (Debian's slurm-wlm 22.05, munge, and
# slurmdbd on MariaDB so that `sacct` keeps SLURM's own record of every job). Used by
# tests/test_slurm.py and runnable by hand; needs root and Debian's package registry.
#
#   bash scripts/slurm_cluster.sh          # install if needed, write configs, start daemons
#   bash scripts/slurm_cluster.sh stop     # stop the daemons (each by its pid file)
#
# Idempotent: a running cluster with an idle node is left as it is ("cluster already up"; the
# caller did not start it, so it should not stop it). Package scripts cannot start services in
# this container, so the daemons are started by hand. Every daemon writes a pid file, and stop
# ends exactly those processes (munged, slurmdbd, slurmctld, slurmd, mysqld_safe, mariadbd)
# and waits until they are gone; a start that fails half way stops what it started.
set -euo pipefail

CLUSTER=cruxflow
ACCOUNT=cruxflow
LOGDIR=/var/log/slurm
STATE=/var/spool/slurmctld
# name:pid file of every daemon, stopped in this order (the database last)
DAEMONS="slurmd:/run/slurm/slurmd.pid slurmctld:/run/slurm/slurmctld.pid
slurmdbd:/run/slurm/slurmdbd.pid munged:/run/munge/munged.pid
mysqld_safe:/run/mysqld/mysqld_safe.pid mariadbd:/run/mysqld/mysqld.pid"

# The pid in a daemon's pid file, if that process is alive and is that daemon.
alive() {
    local name=$1 file=$2 pid
    [ -s "$file" ] || return 1
    pid=$(tr -dc 0-9 <"$file")
    [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$name" \
        && echo "$pid"
}

stop() {
    local entry pid pids=()
    if [ -S /run/mysqld/mysqld.sock ]; then mysqladmin shutdown >/dev/null 2>&1 || true; fi
    for entry in $DAEMONS; do
        if pid=$(alive "${entry%%:*}" "${entry#*:}"); then
            kill "$pid" 2>/dev/null || true
            pids+=("$pid")
        fi
    done
    for _ in $(seq 60); do   # until every one has exited (30 s), then by force
        local left=()
        for pid in "${pids[@]}"; do   # gone, or a zombie nobody reaps (PID 1 of a container)
            [ -d "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ] \
                && left+=("$pid")
        done
        [ "${#left[@]}" -eq 0 ] && return 0
        sleep 0.5
    done
    kill -9 "${left[@]}" 2>/dev/null || true
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
mkdir -p /etc/slurm "$LOGDIR" "$STATE" /var/spool/slurmd /run/slurm /run/munge /run/mysqld
chown munge:munge /run/munge
chown mysql:mysql /run/mysqld
# from here on, a failure (or Ctrl-C) stops what was started
trap 'stop; exit 130' INT TERM
trap 'status=$?; [ "$status" -eq 0 ] || stop; exit "$status"' EXIT

# munge: the package created the key; the daemon runs as its own user.
runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid

# MariaDB for slurmdbd, reached over its local socket as root.
mysqld_safe --skip-networking=0 --bind-address=127.0.0.1 --pid-file=/run/mysqld/mysqld.pid \
    >/dev/null 2>&1 &
echo $! >/run/mysqld/mysqld_safe.pid
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
