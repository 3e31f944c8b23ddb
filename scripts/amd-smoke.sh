#!/usr/bin/env bash
# amd-smoke.sh: a fixed smoke run of the suite on an AMD machine (ROCm with RCCL, and RCCLX where built), for
# whoever has one. It runs rcclx-doctor; every perf binary on both engines (gpu: this suite's kernels through
# hiprtc; vendor: RCCL) with 2 and 8 GPUs in one process; the FP8 types on both engines (FNUZ on gfx942, OCP
# elsewhere) and the gpu engine's FP8 low-precision path; one process per GPU on both engines; and RCCLX's DDA
# A/B, one process per GPU on exactly 8 GPUs (DDA runs nowhere else), as the README shows it. Each run's log and
# JSON go into one archive, and a table of every run ends the output.
#
#   scripts/amd-smoke.sh [--dry-run] [--out DIR] [--bin DIR] [--lib RCCL] [--rcclx LIB] [--gpus N]
#
#   --out DIR    logs and JSON (default /tmp/amd-smoke); the archive is DIR.tgz
#   --bin DIR    the binaries (default: built into DIR/bin with CGO_ENABLED=0, which needs go)
#   --lib RCCL   the vendor engine's library (default: what it finds itself, e.g. /opt/rocm/lib/librccl.so.1)
#   --rcclx LIB  RCCLX's librccl.so.1; without it the DDA A/B is left out
#   --gpus N     GPUs to use (default: the GPUs of the KFD topology)
#   --dry-run    print every command and run none (the archive holds the list)
# Exit status: 0 when every run exited 0, 1 when one did not, 2 for bad arguments.
set -euo pipefail
usage() { sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0"; }

OUT=/tmp/amd-smoke BIN='' LIB='' RCCLX='' GPUS='' DRY=0
while [[ $# -gt 0 ]]; do
	case $1 in
	--dry-run) DRY=1 ;;
	--out | --bin | --lib | --rcclx | --gpus)
		[[ $# -ge 2 ]] || { echo "amd-smoke: $1 needs a value" >&2; exit 2; }
		case $1 in
		--out) OUT=$2 ;; --bin) BIN=$2 ;; --lib) LIB=$2 ;; --rcclx) RCCLX=$2 ;; --gpus) GPUS=$2 ;;
		esac
		shift
		;;
	-h | --help) usage; exit 0 ;;
	*) echo "amd-smoke: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
cd "$(dirname "$0")/.."

# gpu_count: the GPUs of the KFD topology (nodes with SIMDs; the CPUs have none).
gpu_count() {
	local n=0 f
	for f in /sys/class/kfd/kfd/topology/nodes/*/properties; do
		[[ -e $f ]] && awk '$1 == "simd_count" && $2 > 0 { found = 1 } END { exit !found }' "$f" && n=$((n + 1))
	done
	echo "$n"
}

# gpu_arch: the first GPU's gfx target ("gfx942" for gfx_target_version 90402), "unknown" without one.
gpu_arch() {
	local f v
	for f in /sys/class/kfd/kfd/topology/nodes/*/properties; do
		[[ -e $f ]] || continue
		v=$(awk '$1 == "gfx_target_version" && $2 > 0 { print $2 }' "$f" 2>/dev/null)
		[[ -n $v ]] && { printf 'gfx%d%x%x\n' $((v / 10000)) $((v / 100 % 100)) $((v % 100)); return; }
	done
	echo unknown
}

if [[ -z $GPUS ]]; then
	GPUS=$(gpu_count)
	[[ $DRY == 1 && $GPUS == 0 ]] && GPUS=8 # a dry run lists the full set
fi
[[ $GPUS =~ ^[0-9]+$ ]] || { echo "amd-smoke: --gpus $GPUS: want a number" >&2; exit 2; }
if [[ $DRY == 0 && $GPUS -lt 2 ]]; then
	echo "amd-smoke: $GPUS AMD GPU(s) in the KFD topology; the runs need 2 or more (--gpus N to say otherwise)" >&2
	exit 2
fi
ARCH=$(gpu_arch)
rm -rf "$OUT"
mkdir -p "$OUT/logs" "$OUT/json"
if [[ -z $BIN ]]; then
	BIN=$OUT/bin
	if [[ $DRY == 0 ]]; then
		command -v go >/dev/null || { echo "amd-smoke: no go to build with: pass --bin DIR with built binaries" >&2; exit 2; }
		CGO_ENABLED=0 go build -o "$BIN/" ./cmd/...
	fi
fi
LIBARGS=()
[[ -n $LIB ]] && LIBARGS=(--lib "$LIB")
PERF=(all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf alltoallv_perf
	gather_perf scatter_perf sendrecv_perf hypercube_perf all_reduce_bias_perf)
SIZES=(-b 8 -e 64M -f 8 -w 2 -n 10 -T 300)
ROWS=() PORT=29700 FAILED=0

{
	echo "# amd-smoke $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname): $GPUS GPU(s), $ARCH"
	echo "# commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); lib ${LIB:-default}; rcclx ${RCCLX:-none}"
	if [[ $ARCH == gfx942 ]]; then
		echo "# gfx942: the FP8 types are generated and checked as FNUZ (E4M3FNUZ, E5M2FNUZ)"
	fi
} | tee "$OUT/run.txt"

# run NAME CMD...: one run, its output in logs/NAME.log; a table row from its exit status and log.
run() {
	local name=$1 code=0
	shift
	printf '%s\n' "$*" >>"$OUT/commands.txt"
	if [[ $DRY == 1 ]]; then
		echo "$*"
		ROWS+=("$(printf '%-44s %s' "$name" dry)")
		return
	fi
	echo "== $name"
	"$@" >"$OUT/logs/$name.log" 2>&1 || code=$?
	row "$name" "$code" "$OUT/logs/$name.log"
}

# procs NAME N CMD...: CMD as N processes of one GPU each (the launcher's variables set by hand, as torchrun
# would); their outputs in logs/NAME.rank*.log, rank 0's first.
procs() {
	local name=$1 n=$2 r code=0 pids=()
	shift 2
	PORT=$((PORT + 1))
	printf 'N=%s: RANK=r WORLD_SIZE=%s LOCAL_RANK=r LOCAL_WORLD_SIZE=%s MASTER_ADDR=127.0.0.1 MASTER_PORT=%s %s\n' \
		"$n" "$n" "$n" "$PORT" "$*" >>"$OUT/commands.txt"
	if [[ $DRY == 1 ]]; then
		echo "for r in \$(seq 0 $((n - 1))); do RANK=\$r WORLD_SIZE=$n LOCAL_RANK=\$r LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT $* & done; wait"
		ROWS+=("$(printf '%-44s %s' "$name" dry)")
		return
	fi
	echo "== $name ($n processes)"
	for ((r = 0; r < n; r++)); do
		RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT \
			"$@" >"$OUT/logs/$name.rank$r.log" 2>&1 &
		pids+=($!)
	done
	for r in "${!pids[@]}"; do
		wait "${pids[$r]}" || code=$((code == 0 ? $? : code))
	done
	row "$name" "$code" "$OUT/logs/$name.rank0.log"
}

# row NAME CODE LOG: the table's row: exit status, out-of-bounds values (the #wrong total), average bus bandwidth.
row() {
	local wrong busbw
	wrong=$(sed -n 's/^# *Out of bounds values *: *\([0-9]*\).*/\1/p' "$3" | tail -1)
	busbw=$(sed -n 's/^# *Avg bus bandwidth *: *\([0-9.]*\).*/\1/p' "$3" | tail -1)
	[[ $2 == 0 ]] || FAILED=1
	ROWS+=("$(printf '%-44s %-5s %-7s %s' "$1" "$2" "${wrong:--}" "${busbw:--}")")
}

# 1. What the machine has: every row of rcclx-doctor, HIP required where the doctor knows --require.
DOCTOR=("$BIN/rcclx-doctor" "${LIBARGS[@]}")
if [[ $DRY == 0 ]] && "$BIN/rcclx-doctor" --help 2>/dev/null | grep -q -- --require; then
	DOCTOR+=(--require hip)
fi
run doctor "${DOCTOR[@]}"

# 2. Every binary on both engines, 2 and 8 GPUs in one process.
for g in 2 8; do
	((g <= GPUS)) || continue
	for b in "${PERF[@]}"; do
		run "$b.vendor.g$g" "$BIN/$b" --engine vendor "${LIBARGS[@]}" -g "$g" "${SIZES[@]}" -J "$OUT/json/$b.vendor.g$g.json"
		run "$b.gpu.g$g" "$BIN/$b" --engine gpu -g "$g" "${SIZES[@]}" -J "$OUT/json/$b.gpu.g$g.json"
	done
done

# 3. FP8: both types and every operation on both engines (FNUZ on gfx942), and the gpu engine's FP8 low
# precision (RCCLX's LP) on float and bfloat16.
for d in f8e4m3 f8e5m2; do
	run "fp8.$d.vendor.g2" "$BIN/all_reduce_perf" --engine vendor "${LIBARGS[@]}" -g 2 -d "$d" -o all -b 8 -e 16M -f 8 -T 300 \
		-J "$OUT/json/fp8.$d.vendor.g2.json"
	run "fp8.$d.gpu.g2" "$BIN/all_reduce_perf" --engine gpu -g 2 -d "$d" -o all -b 8 -e 16M -f 8 -T 300 \
		-J "$OUT/json/fp8.$d.gpu.g2.json"
done
for d in float bfloat16; do
	run "lp.$d.gpu.g2" "$BIN/all_reduce_perf" --engine gpu --lp -g 2 -d "$d" -b 16M -e 256M -f 4 -T 300 \
		-J "$OUT/json/lp.$d.gpu.g2.json"
done

# 4. One process per GPU: RCCL on the vendor engine, this suite's kernels over IPC.
procs "procs.vendor.n$GPUS" "$GPUS" "$BIN/all_reduce_perf" --engine vendor "${LIBARGS[@]}" -g 1 "${SIZES[@]}" \
	-J "$OUT/json/procs.vendor.n$GPUS.json"
procs "procs.gpu.n$GPUS" "$GPUS" "$BIN/all_reduce_perf" --engine gpu -g 1 "${SIZES[@]}" -J "$OUT/json/procs.gpu.n$GPUS.json"

# 5. RCCLX's DDA A/B: one process per GPU on exactly 8 GPUs (RCCLX reads RCCL_ENABLE_DDA_ALL_REDUCE).
if [[ -z $RCCLX ]]; then
	echo "# RCCLX DDA A/B left out: no --rcclx LIB" | tee -a "$OUT/run.txt"
elif ((GPUS < 8)); then
	echo "# RCCLX DDA A/B left out: DDA runs only at exactly 8 ranks, one process per GPU, and $GPUS GPU(s) are used" |
		tee -a "$OUT/run.txt"
else
	procs rcclx.dda.ab.n8 8 "$BIN/all_reduce_perf" -g 1 --engine vendor --lib "$RCCLX" \
		--ab RCCL_ENABLE_DDA_ALL_REDUCE=0,1 -b 8 -e 64M -f 2 -T 300 -J "$OUT/json/rcclx.dda.ab.n8.json"
fi

{
	echo
	printf '%-44s %-5s %-7s %s\n' run exit "#wrong" "avg busbw (GB/s)"
	printf '%s\n' "${ROWS[@]}"
} | tee "$OUT/table.txt"
tar -czf "$OUT.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")"
echo "archive: $OUT.tgz"
exit "$FAILED"
