#!/usr/bin/env bash
# Measures the data behind the course's plots on this machine's GPU and writes it to docs/data/:
#
#   docs/refresh_data.sh BUILD_DIR [--device N] [--out DIR] [--only PROGRAM[,PROGRAM...]]
#
# --only runs just the named samples (e.g. --only memcpyBatch); the other data files stay as
# they are. MEMSAMPLES_COMMIT, when set, is written as the commit (for a copy of the tree whose
# git metadata is missing or stale).
#
# BUILD_DIR is a configured and built tree of this repository (its bin/ holds the samples).
# Each sample runs with `--json FILE`, some of them several times over one of their own options
# (01 over vector sizes, 02 over stripe counts), and each docs/data/NN_name.json gets:
#
#   {"command": "...", "device": "...", "driver": "...", "commit": "...", "date": "...",
#    "cudaDriverVersion": 13000, "runs": [{"args": "...", "exitCode": 0, "seconds": 1,
#                                          "result": <the sample's own --json object>}, ...]}
#
# `command` says what ran, `device` the GPU the samples used, `driver` the NVIDIA driver,
# `commit` the source tree the build came from (`-dirty` when it had uncommitted changes), `date`
# when the runs ended (UTC). The docs build plots these files (docs/plots/plot_data.py); commit
# them together, so that the plots always show numbers a real run printed.
#
# Needs bash, coreutils, sed and git; not python. nvidia-smi, when present, tells the driver and
# free memory (the sweeps skip sizes that would not fit comfortably: the GPU may be shared).
# About two and a half minutes on an H200 (141 s on 2026-12-02); every run is cut off after 120 s.
set -uo pipefail

usage() {
  echo "usage: $0 BUILD_DIR [--device N] [--out DIR] [--only PROGRAM[,PROGRAM...]]" >&2
  exit 1
}

[ $# -ge 1 ] || usage
build="$(cd "$1" && pwd)" || usage
shift
device=0
out=""
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --device) [ $# -ge 2 ] || usage; device="$2"; shift 2 ;;
    --out) [ $# -ge 2 ] || usage; out="$2"; shift 2 ;;
    --only) [ $# -ge 2 ] || usage; only=",$2,"; shift 2 ;;
    *) usage ;;
  esac
done
case "$device" in
  '' | *[!0-9]*) echo "$0: --device needs a device ordinal" >&2; exit 1 ;;
esac
bin="$build/bin"
[ -d "$bin" ] || { echo "$0: $bin does not exist: build the samples first" >&2; exit 1; }
source_dir="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)"
[ -n "$source_dir" ] || source_dir="$(cd "$(dirname "$0")/.." && pwd)"
[ -n "$out" ] || out="$source_dir/docs/data"
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# ------------------------------------------------------------------------------ small JSON writing

# $1 as a JSON string literal, quotes included.
json_string() {
  printf '"%s"' "$(printf '%s' "$1" | tr '\n\r\t' '   ' | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')"
}

# ---------------------------------------------------------------------------------- the provenance

# MEMSAMPLES_COMMIT names the commit where the tree has no usable git metadata (a copy of it).
commit="${MEMSAMPLES_COMMIT:-$(git -C "$source_dir" rev-parse HEAD 2>/dev/null || echo unknown)}"
if [ -z "${MEMSAMPLES_COMMIT:-}" ] && [ "$commit" != unknown ] &&
   [ -n "$(git -C "$source_dir" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  commit="$commit-dirty"
fi

smi_query() {  # $1: a --query-gpu field of device $device; empty without nvidia-smi
  command -v nvidia-smi >/dev/null 2>&1 || return 0
  nvidia-smi -i "$device" --query-gpu="$1" --format=csv,noheader,nounits 2>/dev/null | head -n 1
}

driver="$(smi_query driver_version)"
if [ -z "$driver" ] && [ -r /proc/driver/nvidia/version ]; then
  driver="$(sed -n 's/.*Kernel Module *\([0-9][0-9.]*\).*/\1/p' /proc/driver/nvidia/version | head -n 1)"
fi
[ -n "$driver" ] || driver=unknown
device_name_smi="$(smi_query name)"

# The CUDA version the driver supports (cuDriverGetVersion), from 00_memoryQueryDrv.
cuda_driver=null
if [ -x "$bin/memoryQueryDrv" ] &&
   timeout 60 "$bin/memoryQueryDrv" --device "$device" --quiet --json "$work/query.json" \
     >/dev/null 2>&1; then
  version="$(sed -n 's/.*"driverVersion": *\([0-9][0-9]*\).*/\1/p' "$work/query.json")"
  [ -n "$version" ] && cuda_driver="$version"
fi

# Free device memory in bytes (nvidia-smi), or empty when unknown; host MemAvailable likewise.
free_device_bytes() {
  local mib
  mib="$(smi_query memory.free)"
  case "$mib" in '' | *[!0-9]*) return 0 ;; esac
  echo $((mib * 1024 * 1024))
}
free_host_bytes() {
  local kib
  kib="$(sed -n 's/^MemAvailable: *\([0-9]*\) kB/\1/p' /proc/meminfo 2>/dev/null)"
  [ -n "$kib" ] && echo $((kib * 1024))
}

# Whether NEED bytes fit in half of what is free now, on the device and on the host (the sweeps'
# largest sizes are skipped on a busy machine instead of crowding other users).
fits() {
  local need="$1" device_free host_free
  device_free="$(free_device_bytes)"
  host_free="$(free_host_bytes)"
  if [ -n "$device_free" ] && [ "$need" -gt $((device_free / 2)) ]; then return 1; fi
  if [ -n "$host_free" ] && [ "$need" -gt $((host_free / 2)) ]; then return 1; fi
  return 0
}

# ------------------------------------------------------------------------------------ the runs

runs=""      # the "runs" array being built for the current file
skipped=""   # the arguments of sweep points left out, as a JSON array body
first_name=""

# run PROGRAM ARGS...: one run with --json, appended to $runs; its text goes to the terminal.
run() {
  local program="$1"
  shift
  local args="$* --device $device"
  args="${args# }"
  local started ended rc result
  rm -f "$work/run.json"
  echo "== $program $args --json FILE"
  started="$(date +%s)"
  timeout 120 "$bin/$program" "$@" --device "$device" --json "$work/run.json" 2>&1 |
    sed 's/^/   /'
  rc="${PIPESTATUS[0]}"
  ended="$(date +%s)"
  result=null
  if [ -s "$work/run.json" ]; then
    result="$(cat "$work/run.json")"
    if [ -z "$first_name" ]; then
      first_name="$(sed -n 's/.*"deviceName": *"\([^"]*\)".*/\1/p' "$work/run.json" | head -n 1)"
    fi
  fi
  [ -n "$runs" ] && runs="$runs,"
  runs="$runs
    {\"args\": $(json_string "$args"), \"exitCode\": $rc, \"seconds\": $((ended - started)), \"result\": $result}"
}

skip() {
  [ -n "$skipped" ] && skipped="$skipped, "
  skipped="$skipped$(json_string "$*")"
  echo "== skipped: $* (not enough free memory now)"
}

# write FILE COMMAND: the runs gathered since the last write, with their provenance.
write() {
  local file="$1" command="$2" name
  name="${first_name:-$device_name_smi}"
  {
    echo "{"
    echo "  \"command\": $(json_string "$command"),"
    echo "  \"device\": $(json_string "${name:-unknown}"),"
    echo "  \"driver\": $(json_string "$driver"),"
    echo "  \"commit\": $(json_string "$commit"),"
    echo "  \"date\": $(json_string "$(date -u +%Y-%m-%dT%H:%M:%SZ)"),"
    echo "  \"cudaDriverVersion\": $cuda_driver,"
    echo "  \"skipped\": [$skipped],"
    echo "  \"runs\": [$runs"
    echo "  ]"
    echo "}"
  } >"$out/$file.tmp"
  mv "$out/$file.tmp" "$out/$file"
  echo "-> $out/$file"
  runs=""
  skipped=""
  first_name=""
}

have() {
  if [ -n "$only" ] && [[ "$only" != *",$1,"* ]]; then return 1; fi
  if [ -x "$bin/$1" ]; then return 0; fi
  echo "== $1 is not built in $bin: its data file is left as it was"
  return 1
}

script="docs/refresh_data.sh"
started_all="$(date +%s)"

# 01: the kernel, a device-to-device copy and the peak over vector sizes 1 MiB ... 4 GiB (three
# vectors on the device and three pinned copies on the host).
if have vectorAddDrv; then
  sizes=""
  for mib in 1 2 4 8 16 32 64 128 256 512 1024 2048 4096; do
    if fits $((3 * mib * 1024 * 1024)); then
      run vectorAddDrv --size "${mib}M"
      sizes="$sizes ${mib}M"
    else
      skip "--size ${mib}M"
    fi
  done
  write 01_vectorAddDrv.json \
    "$script: vectorAddDrv --size S --device $device --json FILE, for S in$sizes"
fi

# 02: one 1 GiB range per vector over 1 ... 256 stripes, all backed by this device: the kernel on
# the range vs on cuMemAlloc, and (each run) the mapping cost table for 1, 2, 8 and 64 stripes.
if have vectorAddMMAP; then
  counts=""
  for stripes in 1 2 4 8 16 64 256; do
    # Three ranges and three cuMemAlloc references of 1 GiB each.
    if fits $((6 * 1024 * 1024 * 1024)); then
      run vectorAddMMAP --size 1G --stripes "$stripes" --backing "$device"
      counts="$counts $stripes"
    else
      skip "--stripes $stripes"
    fi
  done
  write 02_vectorAddMMAP.json \
    "$script: vectorAddMMAP --size 1G --stripes N --backing $device --device $device --json FILE, for N in$counts"
fi

# 03: managed memory with --full, the benchmark behind the plots (1 GiB per vector, less when
# free memory is short: it never asks for more managed memory than the device has free; batches
# of 16, 256 and 4096 ranges). The default run is the learner's quick one, 64 MiB per vector.
if have managedAdvisePrefetch; then
  run managedAdvisePrefetch --full
  write 03_managedAdvisePrefetch.json \
    "$script: managedAdvisePrefetch --full --device $device --json FILE"
fi

# 04: bound host memory vs cuMemHostAlloc vs pageable (not built without libnuma), with --full:
# 1 GiB per vector, the benchmark behind the plot (the default run is the learner's quick one,
# 64 MiB per vector).
if have numaHostAlloc; then
  run numaHostAlloc --full
  write 04_numaHostAlloc.json "$script: numaHostAlloc --full --device $device --json FILE"
fi

# 05: every pair with peer access; with one GPU that waives (exit 2), and --loopback runs the
# same paths on the one device (local-memory figures, not a link).
if have p2pMemMap; then
  run p2pMemMap
  command="$script: p2pMemMap --device $device --json FILE"
  case "$runs" in
    *'"exitCode": 2,'*)
      run p2pMemMap --loopback
      command="$command; it waived, so then p2pMemMap --loopback --device $device --json FILE" ;;
  esac
  write 05_p2pMemMap.json "$command"
fi

# 06: the per-device registry and its allocate / free latency table.
if have perDeviceResource; then
  run perDeviceResource
  write 06_perDeviceResource.json "$script: perDeviceResource --device $device --json FILE"
fi

# 07: the three ways to hand GPU memory to worker processes.
if have memMapIPC; then
  run memMapIPC
  write 07_memMapIPC.json "$script: memMapIPC --device $device --json FILE"
fi

# 09: the ways at the default block size, and the sweep over block sizes (4 KiB ... 1 MiB, both
# directions, the SM rows and the crossover) over 256 MiB, as the H100 probe in SPEC moved.
if have memcpyBatch; then
  run memcpyBatch --sweep --blocks 4096
  write 09_memcpyBatch.json "$script: memcpyBatch --sweep --blocks 4096 --device $device --json FILE"
fi

# 10: the stream-ordered pool against cuMemAlloc, its default run (a few seconds): the same-size
# loop and the mix, each on cuMemAlloc and on the pool at threshold max and 0.
if have streamOrderedPool; then
  run streamOrderedPool
  write 10_streamOrderedPool.json "$script: streamOrderedPool --device $device --json FILE"
fi

echo "== done in $(($(date +%s) - started_all)) s; data in $out"
