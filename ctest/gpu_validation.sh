#!/usr/bin/env bash
# The maintainers' GPU validation run: a fresh build, every GPU test, every sample at its default
# (benchmark) size, compute-sanitizer on each sample at a small size. Logs go to $1 (default
# ./gpu-validation). Usage: ctest/gpu_validation.sh [log-dir] [cuda-architectures]
set -uo pipefail
cd "$(dirname "$0")/.."
logs="${1:-$PWD/gpu-validation}"
archs="${2:-90}"
build="$(mktemp -d /tmp/cms-gpu-build.XXXXXX)"
mkdir -p "$logs"

nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.free --format=csv | tee "$logs/gpus.txt"
nvidia-smi topo -m >>"$logs/gpus.txt" 2>&1 || true

cmake -S . -B "$build" -DCMAKE_CUDA_ARCHITECTURES="$archs" >"$logs/configure.log" 2>&1 &&
  cmake --build "$build" -j "$(nproc)" >"$logs/build.log" 2>&1 || { tail -50 "$logs/build.log"; exit 1; }

# A short run of sample $1, its arguments in the array `args`: --iterations $2 and --size $3
# where the sample takes them; with $4 = loopback, p2pMemMap on one GPU gets --loopback too.
short_run_args() {
  args=()
  local help
  help="$("$1" --help)"
  grep -q -- "--iterations" <<<"$help" && args+=(--iterations "$2" --warmup 1)
  # "--size" as an option of its own, not the tail of memcpyBatch's --block-size.
  grep -qE -- "^ *--size " <<<"$help" && args+=(--size "$3")
  # memcpyBatch takes blocks, not a size: a few hundred small ones keep its runs short.
  [ "$(basename "$1")" = memcpyBatch ] && args+=(--blocks 256 --block-size 16K)
  if [ "${4:-}" = loopback ] && [ "$(basename "$1")" = p2pMemMap ] &&
    [ "$(nvidia-smi -L | wc -l)" -lt 2 ]; then
    args+=(--loopback)
  fi
}

# The GPU tests that may be Skipped (exit 2, or their skip expression) on this machine; any other
# Skipped test fails the validation, naming it: on a GPU that runs the samples, a skip hides what
# the test was written to show. Extended regular expressions for whole test names, one per line.
# On one GPU (an H100 or H200): the tests that need a second GPU, read from their CMakeLists:
#   p2pMemMap                 05 between two GPUs (label multigpu; --loopback is p2pMemMap.loopback)
#   multicastReduce(.oddSize) 08 needs two or more GPUs with NVLink multicast (label multigpu)
#   memMapIPC.crossGpu        07's import on a second GPU (label multigpu)
#   p2pMemMap.try.N, multicastReduce.try.N   the READMEs' "Try this" commands of 05 and 08
# On several GPUs only 08's may skip (multicast needs an NVSwitch fabric, which PCIe cards lack).
# MEMSAMPLES_ALLOWED_SKIPS (same format, newline- or space-separated) replaces the list.
gpu_count="$(nvidia-smi -L | grep -c '^GPU ')"
if [ -n "${MEMSAMPLES_ALLOWED_SKIPS:-}" ]; then
  allowed_skips="$(tr ' ' '\n' <<<"$MEMSAMPLES_ALLOWED_SKIPS" | grep -v '^$')"
elif [ "$gpu_count" -le 1 ]; then
  allowed_skips='p2pMemMap
multicastReduce
multicastReduce[.]oddSize
memMapIPC[.]crossGpu
p2pMemMap[.]try[.][0-9]+
multicastReduce[.]try[.][0-9]+'
else
  allowed_skips='multicastReduce
multicastReduce[.]oddSize
multicastReduce[.]try[.][0-9]+'
fi
echo "== Tests allowed to be Skipped on this machine ($gpu_count GPU(s)):"
sed 's/^/   /' <<<"$allowed_skips" | tee "$logs/allowed-skips.txt"

status=0
(cd "$build" && ctest -L gpu --output-on-failure --timeout 600) 2>&1 | tee "$logs/ctest-gpu.log" | tail -25
[ "${PIPESTATUS[0]}" = 0 ] || status=1
# CTest's summary lists each one as "<tab><number> - <name> (Skipped)".
skipped="$(sed -nE 's/^[[:space:]]*[0-9]+ - ([^ ]+) [(]Skipped[)]$/\1/p' "$logs/ctest-gpu.log")"
unexpected="$(grep -vxE -f <(printf '%s\n' "$allowed_skips") <<<"$skipped" | grep -v '^$' || true)"
echo "== Skipped: $(grep -c . <<<"$skipped") test(s), $(grep -c . <<<"$unexpected") not on the allowed list"
if [ -n "$unexpected" ]; then
  status=1
  while read -r name; do
    echo "UNEXPECTED SKIP: $name (see $logs/ctest-gpu.log)"
  done <<<"$unexpected"
fi
for sample in "$build"/bin/*; do
  [ -x "$sample" ] && [ -f "$sample" ] || continue
  name="$(basename "$sample")"
  [[ "$name" == memsamples_* ]] && continue  # the build's own tools, not samples
  echo "== $name (default size)"
  started=$(date +%s%N)
  "$sample" 2>&1 | tee "$logs/$name.log"
  rc=${PIPESTATUS[0]}
  ms=$((($(date +%s%N) - started) / 1000000))
  # A default run is a learner's first run: it should end within 5 s on an H100 or H200.
  printf 'exit=%s wall=%d.%03d s\n' "$rc" $((ms / 1000)) $((ms % 1000))
  [ "$rc" = 0 ] || [ "$rc" = 2 ] || status=1
done

# A shared GPU is normal: 2 and then 3 copies of each sample started together must each PASS
# (or waive), since no verdict may depend on what another process does on the device.
for copies in 2 3; do
  for sample in "$build"/bin/*; do
    [ -x "$sample" ] && [ -f "$sample" ] || continue
    name="$(basename "$sample")"
    [[ "$name" == memsamples_* ]] && continue
    short_run_args "$sample" 3 64M loopback
    pids=()
    for k in $(seq "$copies"); do
      "$sample" "${args[@]}" >"$logs/$name.copy$copies.$k.log" 2>&1 &
      pids+=($!)
    done
    verdicts=""
    for k in $(seq "$copies"); do
      wait "${pids[$((k - 1))]}"
      rc=$?
      verdicts+=" $rc"
      [ "$rc" = 0 ] || [ "$rc" = 2 ] || {
        status=1
        grep -hE "FAIL|failed|NOT" "$logs/$name.copy$copies.$k.log" | head -n 3
      }
    done
    echo "== $copies copies at once: $name exit codes:$verdicts"
  done
done

# The runs the issues name beyond the defaults.
run_extra() {
  local log="$1"
  shift
  echo "== $*"
  "$@" 2>&1 | tee "$logs/$log.log"
  local rc=${PIPESTATUS[0]}
  echo "exit=$rc"
  [ "$rc" = 0 ] || status=1
}
run_extra vectorAddMMAP.stripes8 "$build/bin/vectorAddMMAP" --stripes 8
run_extra p2pMemMap.loopback "$build/bin/p2pMemMap" --loopback
run_extra memcpyBatch.sweep "$build/bin/memcpyBatch" --sweep
run_extra streamOrderedPool.threshold0 "$build/bin/streamOrderedPool" --threshold 0
echo "== bad input, as a new user would type it (each: one line, exit 1)"
for bad in "--device 7" "--device=-1" "--device x" "--size 0" "--size 12Q" "--size 99999999G" \
  "--bogus" "--json /nonexistent/dir/f.json"; do
  # shellcheck disable=SC2086
  "$build/bin/vectorAddDrv" $bad >"$logs/bad.out" 2>&1
  rc=$?
  echo "vectorAddDrv $bad -> exit $rc: $(grep -v '^Run ' "$logs/bad.out" | grep -v '^Device\|^Kernels' | head -n 1)"
  [ "$rc" = 1 ] || status=1
done

for sample in "$build"/bin/*; do
  [ -x "$sample" ] && [ -f "$sample" ] || continue
  name="$(basename "$sample")"
  [[ "$name" == memsamples_* ]] && continue  # the build's own tools, not samples
  echo "== compute-sanitizer memcheck: $name"
  short_run_args "$sample" 2 16M
  # Default reporting for every sample, API errors included: memMapIPC proves its releases with
  # cuPointerGetAttributes, which answers a freed address without an error (release_proof.cpp).
  compute-sanitizer --tool memcheck --leak-check full "$sample" "${args[@]}" \
    >"$logs/$name.memcheck.log" 2>&1
  rc=$?
  echo "exit=$rc"
  grep -E "LEAK SUMMARY|ERROR SUMMARY" "$logs/$name.memcheck.log"
  # A waived sample (2) has nothing to check; anything else must exit 0 with no error reported.
  if [ "$rc" != 2 ]; then
    [ "$rc" = 0 ] && grep -q "ERROR SUMMARY: 0 errors" "$logs/$name.memcheck.log" || status=1
  fi
done
# Every sample under the other three compute-sanitizer tools too, at the same small size as the
# memcheck runs above (05 on one GPU: --loopback).
for sample in "$build"/bin/*; do
  [ -x "$sample" ] && [ -f "$sample" ] || continue
  name="$(basename "$sample")"
  [[ "$name" == memsamples_* ]] && continue
  short_run_args "$sample" 2 16M loopback
  for tool in racecheck initcheck synccheck; do
    # initcheck makes every launch wait for its kernel: multicastReduce's all-reduce needs the
    # kernels of all GPUs running at once, so under initcheck its barrier would time out.
    if [ "$name" = multicastReduce ] && [ "$tool" = initcheck ]; then
      echo "== compute-sanitizer $tool: $name not run (launches block under initcheck)"
      continue
    fi
    scope=(--target-processes all)
    # initcheck knows only what its own process wrote: memMapIPC's workers read vectors that the
    # parent filled, which every worker's initcheck would report as uninitialized. So initcheck
    # follows the parent alone there; memcheck, racecheck and synccheck follow the workers too.
    [ "$name" = memMapIPC ] && [ "$tool" = initcheck ] && scope=(--target-processes application-only)
    compute-sanitizer --tool "$tool" "${scope[@]}" "$sample" "${args[@]}" >"$logs/$name.$tool.log" 2>&1
    rc=$?
    # racecheck ends with "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)".
    echo "== compute-sanitizer $tool: $name exit=$rc $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$logs/$name.$tool.log")"
    # A waived sample (2) has nothing to check; anything else must exit 0 with nothing reported.
    [ "$rc" = 2 ] && continue
    { [ "$rc" = 0 ] && grep -qE "ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards displayed \(0 errors, 0 warnings\)" \
      "$logs/$name.$tool.log"; } || status=1
  done
done
# An error path under memcheck: the preload library fails the 4th cuMemMap (stripe 3 of A), the
# run must fail with the rollback message and leave nothing behind.
shim="$build/ctest/libmemsamples_fail_nth_call.so"
if [ -f "$shim" ]; then
  LD_PRELOAD="$shim" MEMSAMPLES_FAIL_CALL=cuMemMap:4 compute-sanitizer --tool memcheck \
    --leak-check full "$build/bin/vectorAddMMAP" --size 16M --stripes 8 >"$logs/vectorAddMMAP.failedMap.memcheck.log" 2>&1
  rc=$?
  echo "== memcheck, cuMemMap:4 failed on purpose: vectorAddMMAP exit=$rc"
  grep -E "failed at|LEAK SUMMARY|ERROR SUMMARY" "$logs/vectorAddMMAP.failedMap.memcheck.log"
  { [ "$rc" = 1 ] && grep -q "ERROR SUMMARY: 0 errors" "$logs/vectorAddMMAP.failedMap.memcheck.log" &&
    grep -q "rolled back: 3 stripes unmapped, 1 handle released, address range freed" \
      "$logs/vectorAddMMAP.failedMap.memcheck.log"; } || status=1
else
  echo "no $shim: the error path under memcheck was not run"; status=1
fi
echo "== compute-sanitizer memcheck: p2pMemMap --loopback"
compute-sanitizer --tool memcheck --leak-check full "$build/bin/p2pMemMap" --loopback --size 16M \
  --iterations 2 --warmup 1 >"$logs/p2pMemMap.loopback.memcheck.log" 2>&1
rc=$?
echo "exit=$rc"
grep -E "LEAK SUMMARY|ERROR SUMMARY" "$logs/p2pMemMap.loopback.memcheck.log"
{ [ "$rc" = 0 ] && grep -q "ERROR SUMMARY: 0 errors" "$logs/p2pMemMap.loopback.memcheck.log"; } || status=1
# MEMSAMPLES_KEEP_BUILD=1 keeps the build (e.g. for docs/refresh_data.sh right after).
if [ "${MEMSAMPLES_KEEP_BUILD:-0}" = 1 ]; then echo "build kept: $build"; else rm -rf "$build"; fi
echo "gpu_validation: $([ "$status" = 0 ] && echo PASSED || echo FAILED)"
exit $status
