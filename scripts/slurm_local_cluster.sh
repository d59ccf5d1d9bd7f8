#!/usr/bin/env bash
# A throwaway one-node Slurm cluster on this machine (controller and compute node on localhost), for trying
# HELM's SlurmRunner and for CI. Everything lives in one folder; nothing under /etc is touched.
#
# Usage: scripts/slurm_local_cluster.sh start|stop|status|env
#   start   start munged, slurmctld and slurmd (idempotent: a running cluster is left alone); prints the
#           line to eval: export SLURM_CONF=...   (sbatch/scontrol/squeue need it)
#   stop    stop the three daemons (idempotent); the folder (key, config, logs) stays
#   status  exit 0 and print the node state when the cluster accepts jobs, else exit 1
#   env     print the export line
#
# Needs Debian/Ubuntu's packages:  apt-get install slurmctld slurmd slurm-client munge
# Environment: ROBOREWARD_SLURM_DIR (default /tmp/roboreward-slurm-<uid>), ROBOREWARD_SLURM_PORT (controller
# port, default 16817; slurmd uses the next one), ROBOREWARD_SLURM_PARTITION (default "local").
# The generated slurm.conf: this host as controller and node (CPUs/RealMemory from `slurmd -C`),
# select/cons_tres, proctrack/linuxproc and task/none (no cgroups), no accounting database; munge with its own
# key and socket in the folder. As root the daemons run as root; otherwise as you (single-user test cluster).
# It also writes <folder>/runner_config.yaml: slurm_args for HELM's SlurmRunner on this cluster (copy it into
# your --local-path folder, e.g. prod_env/).
set -euo pipefail

DIR="${ROBOREWARD_SLURM_DIR:-/tmp/roboreward-slurm-$(id -u)}"
PORT="${ROBOREWARD_SLURM_PORT:-16817}"
PARTITION="${ROBOREWARD_SLURM_PARTITION:-local}"
CONF="$DIR/slurm.conf"
SOCKET="$DIR/run/munge.socket"
export SLURM_CONF="$CONF"

say() { echo "[slurm-local] $*"; }
die() { echo "[slurm-local] error: $*" >&2; exit 1; }

pid_alive() {  # pid_alive FILE: the pid in FILE is a live process of the daemon FILE is named after
  local pid name
  [ -f "$1" ] || return 1
  pid="$(cat "$1" 2>/dev/null)"; name="$(basename "$1" .pid)"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  # a stale pid file (after a reboot) may name an unrelated process: never treat it as ours
  [ ! -r "/proc/$pid/comm" ] || [ "$(cat "/proc/$pid/comm")" = "$name" ]
}

node_state() {  # the node's state as sinfo prints it (idle, mixed, down*, ...), empty if unreachable
  timeout 10 sinfo -h -N -p "$PARTITION" -o %T 2>/dev/null | head -1 || true
}

usable() {
  pid_alive "$DIR/munged.pid" && pid_alive "$DIR/slurmctld.pid" && pid_alive "$DIR/slurmd.pid" || return 1
  # "idle*", "down*": not responding; "drained": taken out of service
  case "$(node_state)" in idle|mixed|allocated|completing) return 0 ;; *) return 1 ;; esac
}

show_logs() {
  for log in "$DIR"/log/*.log; do
    [ -f "$log" ] || continue
    echo "--- $log (tail)" >&2
    tail -n 15 "$log" >&2
  done
}

wait_for() {  # wait_for SECONDS WHAT COMMAND...: poll COMMAND every 0.2 s
  local seconds="$1" what="$2"; shift 2
  local tries=$((seconds * 5))
  while ! "$@" >/dev/null 2>&1; do
    tries=$((tries - 1))
    if [ "$tries" -le 0 ]; then show_logs; die "$what did not come up within ${seconds}s (logs in $DIR/log)"; fi
    sleep 0.2
  done
}

write_conf() {
  local node user hardware
  node="$(hostname -s)"
  user="$(id -un)"
  # slurmd -C: "NodeName=<host> CPUs=.. Boards=.. SocketsPerBoard=.. CoresPerSocket=.. ThreadsPerCore=.. RealMemory=.."
  hardware="$(slurmd -C 2>/dev/null | grep '^NodeName=' | sed 's/^NodeName=[^ ]* //')"
  [ -n "$hardware" ] || die "slurmd -C printed no node line"
  cat > "$CONF.tmp" <<CONF
# Written by scripts/slurm_local_cluster.sh: a one-node test cluster on localhost.
ClusterName=roboreward-local
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
# Schedule a batch job when it is submitted (the default batches them for up to 3 s).
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MailProg=/bin/true
# Finished jobs stay visible to "scontrol show job" for 10 minutes (HELM's SlurmRunner polls it).
MinJobAge=600
NodeName=$node NodeAddr=127.0.0.1 NodeHostname=$node $hardware State=UNKNOWN
PartitionName=$PARTITION Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
  mv "$CONF.tmp" "$CONF"
  cat > "$DIR/runner_config.yaml" <<YAML
# HELM SlurmRunner settings for the local test cluster (scripts/slurm_local_cluster.sh). HELM reads this file as
# <--local-path>/runner_config.yaml. slurm_args are sbatch long options with "_" for "-"; HELM itself sets
# job_name, output (slurm/<time>/logs/<run>.log) and chdir (the directory helm-run was started in).
helm_max_concurrent_workers: $(nproc)
slurm_monitor_interval: 1
slurm_args:
  partition: "$PARTITION"
  cpus_per_task: "1"
  time: "30"
  open_mode: "append"
YAML
}

start_munge() {
  pid_alive "$DIR/munged.pid" && return 0
  if [ ! -s "$DIR/munge/munge.key" ]; then
    mungekey --create --keyfile="$DIR/munge/munge.key" >/dev/null 2>&1 \
      || dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
  fi
  chmod 0600 "$DIR/munge/munge.key"
  rm -f "$SOCKET" "$SOCKET.lock"
  munged --force --socket="$SOCKET" --key-file="$DIR/munge/munge.key" --pid-file="$DIR/munged.pid" \
    --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munged.seed" 2>>"$DIR/log/munged.log" \
    || { show_logs; die "munged did not start"; }
  wait_for 10 "munged" sh -c "munge -n -S '$SOCKET' | unmunge -S '$SOCKET'"
}

cmd_start() {
  for tool in munged munge unmunge slurmctld slurmd sbatch scontrol sinfo; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found (apt-get install slurmctld slurmd slurm-client munge)"
  done
  if usable; then say "already running ($DIR)"; cmd_env; return 0; fi
  cmd_stop >/dev/null  # half-started leftovers
  mkdir -p "$DIR/munge" "$DIR/run" "$DIR/state" "$DIR/spool" "$DIR/log"
  chmod 0700 "$DIR/munge"; chmod 0755 "$DIR" "$DIR/run"
  write_conf
  start_munge
  # -c: start from a clean state (no jobs or node states from an earlier cluster in this folder)
  slurmctld -c -f "$CONF" 2>>"$DIR/log/slurmctld.log" || { show_logs; die "slurmctld did not start"; }
  wait_for 20 "slurmctld" sh -c "scontrol ping | grep -q UP"
  slurmd -f "$CONF" -N "$(hostname -s)" 2>>"$DIR/log/slurmd.log" || { show_logs; die "slurmd did not start"; }
  wait_for 30 "the node" usable
  say "started in $DIR: node $(hostname -s), partition $PARTITION, $(node_state)"
  cmd_env
}

stop_pidfile() {  # stop_pidfile FILE: SIGTERM the process, wait up to 10 s, then SIGKILL
  local file="$1" pid
  pid_alive "$file" || { rm -f "$file"; return 0; }
  pid="$(cat "$file")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do pid_alive "$file" || break; sleep 0.2; done
  if pid_alive "$file"; then kill -9 "$pid" 2>/dev/null || true; fi
  rm -f "$file"
}

cmd_stop() {
  [ -d "$DIR" ] || { say "not running"; return 0; }
  stop_pidfile "$DIR/slurmd.pid"
  stop_pidfile "$DIR/slurmctld.pid"
  stop_pidfile "$DIR/munged.pid"
  say "stopped ($DIR)"
}

cmd_status() {
  if usable; then
    say "running ($DIR): node $(hostname -s) $(node_state), partition $PARTITION"
    return 0
  fi
  local daemon
  for daemon in munged slurmctld slurmd; do
    if pid_alive "$DIR/$daemon.pid"; then say "$daemon: running"; else say "$daemon: not running"; fi
  done
  say "not usable ($DIR)"
  return 1
}

cmd_env() { echo "export SLURM_CONF=$CONF"; }

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  env) cmd_env ;;
  *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
