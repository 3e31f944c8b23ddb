#!/usr/bin/env bash
# hip-shim-check.sh: the HIP backend end to end on an NVIDIA GPU, through a HIP runtime written over CUDA
# (gpurt/testdata/hipshim), on a machine with nvcc, a CUDA driver and NVIDIA's NCCL.
#
#   BIN=DIR HIPINC=DIR [VBIN=DIR] [OUT=DIR] scripts/hip-shim-check.sh [STEP...]
#
# BIN holds binaries built anywhere with CGO_ENABLED=0 (every <coll>_perf, gpuengine.test, gpurt.test); VBIN
# the perf binaries of the vendor engine (default BIN);
# HIPINC a folder holding AMD's hip/ headers (Debian's libamdhip64-dev: /usr/include).
# Steps (default all): bins (the gpu engine's binaries, every one at 2 ranks sharing the GPU and as 2 processes;
# all_reduce also with -G and at 8 ranks), vendor (the vendor engine on a stand-in RCCL: an empty library whose
# DT_NEEDED are the shim and NVIDIA's NCCL, as librccl links libamdhip64; every binary, -G and -Y), tests
# (gpuengine's GPU matrix against the host engine, TESTS_TIMEOUT seconds, default 300, and gpurt's GPU tests, on
# HIP). Every run goes through gpurt's HIP binding; kernels compile through the shim's hiprtc (NVRTC for the real
# GPU), so what runs on the GPU is the CUDA branch of the kernels, built with the HIP path's options (wave64 crews:
# the shim reports 64-lane warps, as AMD Instinct does).
set -uo pipefail
usage() { sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0"; }
for a in "$@"; do
	case $a in
	-h | --help) usage && exit 0 ;;
	bins | vendor | tests) ;;
	*) usage >&2 && exit 2 ;;
	esac
done
if [[ -z ${BIN:-} || -z ${HIPINC:-} ]]; then
	usage >&2
	exit 2
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "$BIN" && pwd) || exit 2
VBIN=$(cd "${VBIN:-$BIN}" && pwd) || exit 2
HIPINC=$(cd "$HIPINC" && pwd) || exit 2
OUT=${OUT:-/tmp/hip-shim-check}
mkdir -p "$OUT/shim"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export RCCLX_TESTS_KERNEL_CACHE=${RCCLX_TESTS_KERNEL_CACHE:-$OUT/kcache}
STEPS=("$@")
((${#STEPS[@]})) || STEPS=(bins vendor tests)
SUMMARY=()

# run NAME TIMEOUT CMD...: one run, output in $OUT/NAME.log; the summary has its exit code and #wrong lines.
run() {
	local name=$1 t=$2 t0=$SECONDS rc
	shift 2
	timeout -k 5 "$t" "$@" >"$OUT/$name.log" 2>&1
	rc=$?
	SUMMARY+=("$(printf '%-22s rc=%-3s %4ss %s' "$name" "$rc" $((SECONDS - t0)) \
		"$(grep -hE 'Out of bounds values|^(ok|FAIL|PASS)$' "$OUT/$name.log" | sort | uniq -c | tr -s ' ' | tr '\n' ';')")")
}

CUDA=$(dirname "$(dirname "$(command -v nvcc)")")
SHIM=$OUT/shim/libamdhip64.so.6
g++ -std=c++17 -O2 -shared -fPIC -D__HIP_PLATFORM_AMD__ -I"$HIPINC" -I"$CUDA/include" \
	"$ROOT/gpurt/testdata/hipshim/hipshim.cpp" -o "$SHIM" -Wl,-soname,libamdhip64.so.6 \
	-L"$CUDA/lib64" -L"$CUDA/lib64/stubs" -Wl,-rpath,"$CUDA/lib64" -lcuda -lnvrtc || exit 1
HIP=(env RCCLX_TESTS_GPU_RUNTIME=hip RCCLX_TESTS_LIBAMDHIP64="$SHIM")
G=(--engine gpu -g 2 --oversubscribe -T 60)

# procs2 PORT COLL ARGS...: COLL_perf on the gpu engine as 2 processes x 1 GPU.
procs2() {
	local port=$1 coll=$2 pids=() rc=0 r
	shift 2
	for r in 0 1; do
		RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
			"${HIP[@]}" "$BIN/${coll}_perf" --engine gpu -g 1 -T 60 -b 8 -e 16M -f 8 -w 1 -n 2 "$@" \
			>"$OUT/procs2-$port-$r.out" 2>&1 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || rc=$?; done
	cat "$OUT/procs2-$port-0.out"
	return $rc
}

step_bins() {
	run ar 150 "${HIP[@]}" "$BIN/all_reduce_perf" "${G[@]}" -b 8 -e 64M -f 8 -w 1 -n 2
	run ar-dda-G 90 "${HIP[@]}" "$BIN/all_reduce_perf" "${G[@]}" --dda -b 8 -e 4M -f 4 -G 5 -w 1 -n 5
	run ar-lp 120 "${HIP[@]}" "$BIN/all_reduce_perf" "${G[@]}" --lp -b 1M -e 256M -f 16 -w 1 -n 2
	run ag 60 "${HIP[@]}" "$BIN/all_gather_perf" "${G[@]}" -b 8 -e 64M -f 8 -w 1 -n 2
	run a2a 60 "${HIP[@]}" "$BIN/alltoall_perf" "${G[@]}" -b 8 -e 64M -f 8 -w 1 -n 2
	run rs 60 "${HIP[@]}" "$BIN/reduce_scatter_perf" "${G[@]}" -b 8 -e 64M -f 8 -w 1 -n 2
	export -f procs2
	export BIN OUT
	run procs2-dda-G 90 bash -c "$(declare -p HIP); procs2 29670 all_reduce --dda -G 5"
	local port=29671
	for c in all_reduce all_gather alltoall reduce_scatter broadcast reduce gather scatter sendrecv alltoallv hypercube; do
		run "procs2-$c" 90 bash -c "$(declare -p HIP); procs2 $((port++)) $c"
	done
	local c
	for c in broadcast reduce gather scatter sendrecv alltoallv hypercube; do
		run "$c" 60 "${HIP[@]}" "$BIN/${c}_perf" "${G[@]}" -b 8 -e 16M -f 16 -w 1 -n 2
	done
	run ar-g8 300 "${HIP[@]}" "$BIN/all_reduce_perf" --engine gpu -g 8 --oversubscribe -T 60 -b 8 -e 1M -f 32 -d all -o all -w 1 -n 1
	run ar-g8-dda-G 90 "${HIP[@]}" "$BIN/all_reduce_perf" --engine gpu -g 8 --oversubscribe -T 60 --dda -b 8 -e 1M -f 32 -G 5 -w 1 -n 5
}

step_vendor() {
	local nccl
	nccl=$(find / -name libnccl.so.2 -path '*nvidia*' 2>/dev/null | head -1)
	echo '' | g++ -x c++ -shared -fPIC -o "$OUT/shim/librccl.so.1" - -Wl,--no-as-needed -L"$OUT/shim" \
		-l:libamdhip64.so.6 -L"$(dirname "$nccl")" -l:libnccl.so.2 -Wl,-rpath,"$OUT/shim:$(dirname "$nccl")" || return
	local V=(env LD_LIBRARY_PATH="$OUT/shim" RCCLX_TESTS_GPU_RUNTIME=hip "$VBIN/all_reduce_perf" --engine vendor
		--lib "$OUT/shim/librccl.so.1" -g 1)
	run vendor 90 "${V[@]}" -b 8 -e 64M -f 8 -d all -w 1 -n 2
	run vendor-G 60 "${V[@]}" -b 8 -e 1M -f 8 -G 5 -w 1 -n 5
	local c
	for c in all_gather alltoall reduce_scatter broadcast reduce gather scatter sendrecv alltoallv hypercube; do
		run "vendor-$c" 60 env LD_LIBRARY_PATH="$OUT/shim" RCCLX_TESTS_GPU_RUNTIME=hip "$VBIN/${c}_perf" \
			--engine vendor --lib "$OUT/shim/librccl.so.1" -g 1 -b 8 -e 16M -f 16 -w 1 -n 2
	done
	for y in fine host managed; do
		run "vendor-Y$y" 60 "${V[@]}" -b 8 -e 1M -f 32 -Y "$y" -w 1 -n 2
	done
}

step_tests() {
	run gpuengine-test "${TESTS_TIMEOUT:-300}" "${HIP[@]}" "$BIN/gpuengine.test" -test.v -test.timeout "$((${TESTS_TIMEOUT:-300} - 10))s" \
		-test.run 'TestGPU(AlgorithmsMatchHost|GraphReplayAndEvents|TwoThreads|Timeout|CorruptHook|Unaligned|CloseReleasesDeviceMemory)'
	run gpurt-test 90 "${HIP[@]}" "$BIN/gpurt.test" -test.v -test.timeout 80s -test.run 'TestGPU'
}

for s in "${STEPS[@]}"; do "step_$s"; done
printf '%s\n' "${SUMMARY[@]}" | tee "$OUT/summary.txt"
! grep -qE 'rc=[1-9]|FAILED|FAIL' "$OUT/summary.txt"
