#!/usr/bin/env bash
# fatbin_lookup_test.sh <build dir> <program> <launcher or -> [program arguments...]
# Installs the build to a scratch prefix, then runs the installed <program> (a file name in the
# prefix's bin/) twice from an unrelated folder: directly and through a symlink elsewhere. Each run
# must succeed and name the installed fatbin. The program's exit code 2 (WAIVED) is passed on, so
# CTest reports Skipped for a GPU sample on a machine without a driver.
set -uo pipefail
build="$1"
program="$2"
launcher=()
[ "$3" != "-" ] && launcher=("$3")
shift 3
prefix="$build/fatbin-lookup-test/$program"
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix/install" >/dev/null || { echo "cmake --install failed"; exit 1; }
if [ -e "$prefix/install/bin/vectorAdd_kernel.fatbin" ]; then
  echo "the fatbin was installed next to the executables; this test needs the share/ layout"
  exit 1
fi
mkdir -p "$prefix/links" "$prefix/elsewhere"
ln -s "$prefix/install/bin/$program" "$prefix/links/$program"
cd "$prefix/elsewhere" || exit 1
for path in "$prefix/install/bin/$program" "$prefix/links/$program"; do
  echo "== $path (from $PWD)"
  output="$("${launcher[@]}" "$path" "$@" 2>&1)"
  rc=$?
  echo "$output"
  [ "$rc" = 2 ] && exit 2
  [ "$rc" = 0 ] || { echo "failed with exit code $rc"; exit 1; }
  grep -q "share/cuda-memory-samples/vectorAdd_kernel.fatbin" <<<"$output" ||
    { echo "did not use the installed fatbin"; exit 1; }
done
echo "both runs found the installed fatbin"
