#!/usr/bin/env bash
# hip-check.sh: compiles every GPU-engine module (12 dtypes x 6 ops, -DRX_DTYPE/-DRX_OP as gpuengine passes them
# to NVRTC) as HIP with hipcc, through kernels/prelude.cuh's HIP branch, and prints hipcc's output for each
# module that fails or warns. kernels.TestHIPCompile does the same for a representative set, with these flags.
# Usage: scripts/hip-check.sh OFFLOAD_ARCH   e.g. gfx90a (Debian bookworm's hipcc 5.2 knows no gfx942)
set -euo pipefail
usage() { sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0"; }
if [[ $# -ne 1 || ! $1 =~ ^gfx[0-9a-f]+$ ]]; then
  [[ ${1:-} == -h || ${1:-} == --help ]] && { usage; exit 0; }
  usage >&2
  exit 2
fi
cd "$(dirname "$0")/.."
arch=$1
if ! command -v hipcc >/dev/null; then
  echo "hip-check: hipcc not installed (Debian: apt-get install -y hipcc)" >&2
  exit 2
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go run ./kernels/testdata/source >"$dir/all.cu"

# compile DTYPE OP: one module; its output goes to DIR/DTYPE_OP.log, and DIR/DTYPE_OP.fail marks a failure.
compile() {
  local log="$dir/$1_$2.log"
  if ! hipcc --offload-arch="$arch" -x hip -std=c++17 -O1 -ffp-contract=off -Wzero-length-array -c \
    -DRX_DTYPE="$1" -DRX_OP="$2" -o /dev/null "$dir/all.cu" >"$log" 2>&1 || [ -s "$log" ]; then
    touch "$dir/$1_$2.fail"
  fi
}
export -f compile
export dir arch

start=$SECONDS
for dt in $(seq 0 11); do for op in $(seq 0 5); do echo "$dt $op"; done; done |
  xargs -P "$(nproc)" -n 2 bash -c 'compile "$0" "$1"'
failed=0
for mark in "$dir"/*.fail; do
  [ -e "$mark" ] || continue
  m=$(basename "$mark" .fail)
  echo "== FAIL -DRX_DTYPE=${m%_*} -DRX_OP=${m#*_} (hipcc --offload-arch=$arch):"
  cat "$dir/$m.log"
  failed=$((failed + 1))
done
total=$(find "$dir" -name '*.log' | wc -l)
echo "hip-check: $((total - failed))/$total modules compiled for $arch in $((SECONDS - start)) s"
[ "$failed" -eq 0 ]
