#!/usr/bin/env bash
# gpu-check.sh: the GPU engine's check on a GPU machine, from binaries built beforehand on any machine.
#
#   scripts/gpu-check.sh --build          build the binaries into $BIN (default .devbin-gpu), CGO_ENABLED=0
#   scripts/gpu-check.sh [STEP...]        run steps (default: test sweep perf sanitize) and print a summary
#
# Steps: test      the gpuengine test binary (every algorithm x collective x dtype x op against hostengine)
#        sweep     correctness sweep of the perf binaries with --engine gpu (-d all -o all, DDA, LP)
#        perf      timing of every algorithm next to NCCL (the test binary's TestGPUPerf, and the perf
#                  binaries with --engine vendor,gpu when they accept it)
#        sanitize  compute-sanitizer memcheck and racecheck on a small case, if installed
#        bins      the perf binaries side by side with NCCL (--engine vendor,gpu): ring, DDA with -G, FP8 LP
#        ab        --ab RCCL_DDA_ENABLE=0,1 on the gpu engine, 8 B .. 32 MiB
#        multiproc 2 processes x 1 GPU (RANK/WORLD_SIZE/MASTER_ADDR): gpu engine (IPC) and vendor
#        oversub   the users' command at 8 ranks on the GPUs there are (--oversubscribe), DDA on and off
#        faults    skipped rank -> exit 4 within -T; corrupted element -> exit 7 (gpu and vendor engines)
#        ncclt     nccl-tests itself next to the vendor engine (scripts/ncclt-compare.sh), when a nccl-tests source
#                  tree with a build.sh sits in $BIN/ncclt (not part of this repository)
#        vendor    the vendor engine's and the NCCL binding's GPU tests (non-blocking communicators, -T inside
#                  NCCL calls, hooks, device memory released on every exit path)
#        peers     broadcast, reduce, gather, scatter, sendrecv, alltoallv, hypercube: the gpuengine tests against
#                  the host engine, then every binary on the gpu and vendor engines (-d all -o all -r -1, 2 GPUs)
#                  and on 8 oversubscribed ranks
#        peerperf  the same binaries next to NCCL (--engine vendor,gpu) at 8 B with -G 20 and at 1 GiB
# Logs go to $OUT (default /tmp/gpu-check); the compiled kernels are cached in $BIN/kcache and packed into
# $OUT/kcache.tgz, so that the next call can carry them back in $BIN.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.devbin-gpu}
PERF_BINS=(all_reduce_perf all_gather_perf alltoall_perf reduce_scatter_perf)
PEER_BINS=(broadcast_perf reduce_perf gather_perf scatter_perf sendrecv_perf alltoallv_perf hypercube_perf)

if [[ ${1:-} == --build ]]; then
	mkdir -p "$BIN"
	for pkg in gpuengine vendorengine nccl; do
		CGO_ENABLED=0 go test -c -ldflags="-s -w" -o "$BIN/$pkg.test" "./$pkg" || exit 1
	done
	# The perf binaries only matter once the engines registry knows the gpu engine (they are large to carry).
	if grep -q gpuengine engines/*.go 2>/dev/null; then
		for b in "${PERF_BINS[@]}" "${PEER_BINS[@]}"; do
			CGO_ENABLED=0 go build -ldflags="-s -w" -o "$BIN/$b" "./cmd/$b" || exit 1
		done
	fi
	ls -la "$BIN"
	exit 0
fi

export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT" "$BIN/kcache"
export RCCLX_TESTS_KERNEL_CACHE=$PWD/$BIN/kcache
[[ -f $BIN/kcache.tgz ]] && tar -xzf "$BIN/kcache.tgz" -C "$BIN/kcache"
STEPS=("$@")
[[ ${#STEPS[@]} -eq 0 ]] && STEPS=(test sweep perf sanitize)
SUMMARY=()
note() { SUMMARY+=("$(printf '%-9s %-6s %s' "$1" "$2" "$3")"); }

# run_step NAME LOG CMD...: runs CMD with output to $OUT/LOG and records pass/fail.
run_step() {
	local name=$1 log=$2
	shift 2
	local t0=$SECONDS
	"$@" >"$OUT/$log" 2>&1
	local rc=$?
	note "$name" "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "rc=$rc $((SECONDS - t0))s $log"
	return $rc
}

step_test() {
	run_step test test.log "$BIN/gpuengine.test" -test.v -test.timeout 220s \
		-test.run 'TestGPU(AlgorithmsMatchHost|Large|Timeout|CorruptHook|GraphReplayAndEvents|HardwareE4M3MatchesConvert|Unaligned|TwoThreads|CloseReleasesDeviceMemory)|TestNoDriver'
	grep -E '^(--- |FAIL|ok|PASS)|compiled|wrong|differs' "$OUT/test.log" | head -40
}

# The perf binaries take --engine gpu once the lead has registered the engine; until then the step says so.
gpu_engine_known() { "$BIN/all_reduce_perf" --help 2>&1 | grep -q -- '--engine' && "$BIN/all_reduce_perf" --engine gpu -b 8 -e 8 -g 2 -n 1 -w 0 >/dev/null 2>&1; }

step_sweep() {
	if [[ ! -x $BIN/all_reduce_perf ]] || ! gpu_engine_known; then
		note sweep skip "perf binaries missing or without --engine gpu"
		return
	fi
	local rc=0
	for b in "${PERF_BINS[@]}"; do
		# DDA and LP take float/half/bfloat16 sums only: the other types and ops are the default mode's.
		for mode in "-d all -o all" "--dda -d all" "--lp -d bfloat16 --lp-mode scaled -E RCCLX_TESTS_LP_MIN_BYTES=0"; do
			# shellcheck disable=SC2086
			timeout -k 10 90 "$BIN/$b" --engine gpu -g 2 -b 8 -e 1M -f 32 -w 1 -n 2 -T 30 $mode >>"$OUT/sweep.log" 2>&1 || rc=1
		done
		timeout -k 10 60 "$BIN/$b" --engine gpu -g 8 --oversubscribe -b 1K -e 1M -f 32 -w 1 -n 2 -T 30 >>"$OUT/sweep.log" 2>&1 || rc=1
	done
	note sweep "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "sweep.log"
}

step_perf() {
	RCCLX_TESTS_GPU_PERF=1 run_step perf perf.log "$BIN/gpuengine.test" -test.v -test.timeout 220s -test.run TestGPUPerf
	if [[ -x $BIN/all_reduce_perf ]] && gpu_engine_known; then
		"$BIN/all_reduce_perf" --engine vendor,gpu -g 2 -b 8 -e 1G -f 8 -w 5 -n 20 >"$OUT/perf-binaries.log" 2>&1
		note perf-bin "$([[ $? == 0 ]] && echo ok || echo FAIL)" "perf-binaries.log"
	fi
}

step_sanitize() {
	local cs
	cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
	if [[ -z $cs ]]; then
		note sanitize skip "compute-sanitizer not installed"
		return
	fi
	for tool in memcheck racecheck; do
		run_step "$tool" "$tool.log" "$cs" --tool "$tool" --error-exitcode 9 "$BIN/gpuengine.test" \
			-test.run 'TestGPUCorruptHook' -test.v
	done
}

# expect NAME WANT LOG CMD...: runs CMD (bounded by timeout 150) and records whether it exited WANT.
expect() {
	local name=$1 want=$2 log=$3
	shift 3
	local t0=$SECONDS
	timeout -k 10 150 "$@" >>"$OUT/$log" 2>&1
	local rc=$?
	note "$name" "$([[ $rc == "$want" ]] && echo ok || echo FAIL)" "rc=$rc want=$want $((SECONDS - t0))s $log"
}

P="$BIN/all_reduce_perf"
step_bins() {
	expect ring 0 bins.log "$P" --engine vendor,gpu -g 2 -b 8 -e 1G -f 4 -w 5 -n 20
	expect dda-G 0 bins.log "$P" --engine vendor,gpu --dda -G 20 -g 2 -b 8 -e 4M -f 4 -w 5 -n 20
	expect lp 0 bins.log "$P" --engine vendor,gpu --lp -g 2 -b 64M -e 1G -f 2 -w 5 -n 20
	for b in all_gather_perf reduce_scatter_perf alltoall_perf; do
		expect "${b%_perf}" 0 bins.log "$BIN/$b" --engine vendor,gpu -g 2 -b 1M -e 1G -f 32 -w 5 -n 20
	done
}

step_ab() {
	expect ab 0 ab.log "$P" --engine gpu -g 2 -b 8 -e 32M -f 4 -w 5 -n 20 --ab RCCL_DDA_ENABLE=0,1 -J "$OUT/ab.json"
}

step_multiproc() {
	for eng in gpu vendor; do
		local pids=()
		for r in 0 1; do
			RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29500 + ${#eng})) \
				timeout -k 10 120 "$P" --engine "$eng" -g 1 -b 8 -e 64M -f 8 -d all -T 60 >"$OUT/mp-$eng-$r.log" 2>&1 &
			pids+=($!)
		done
		local rc=0
		for p in "${pids[@]}"; do wait "$p" || rc=$?; done
		note "mp-$eng" "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "rc=$rc mp-$eng-0.log"
	done
}

step_oversub() {
	expect oversub8 0 oversub.log "$P" --engine gpu --oversubscribe -b 4M -e 128M -f 2 -g 8
	expect oversub8-dda 0 oversub.log "$P" --engine gpu --oversubscribe --dda -b 8 -e 128M -f 8 -g 8
	expect oversub8-lp 0 oversub.log "$P" --engine gpu --oversubscribe --lp -b 16M -e 128M -f 2 -g 8
}

step_faults() {
	RCCLX_TESTS_SKIP_RANK=1 expect skip-T5 4 faults.log "$P" --engine gpu -g 2 -b 1M -e 1M -T 5
	RCCLX_TESTS_SKIP_RANK=1 expect v-skip-T5 4 faults.log "$P" --engine vendor -g 2 -b 1M -e 1M -T 5
	RCCLX_TESTS_CORRUPT_RANK=1 expect corrupt 7 faults.log "$P" --engine gpu -g 2 -b 1M -e 64M -f 8
	RCCLX_TESTS_CORRUPT_RANK=1 expect v-corrupt 7 faults.log "$P" --engine vendor -g 2 -b 1M -e 4M -f 2
}

step_vendor() {
	run_step nccl nccl.log "$BIN/nccl.test" -test.v -test.timeout 120s -test.run 'TestGPU'
	run_step vendor vendor.log "$BIN/vendorengine.test" -test.v -test.timeout 300s -test.run 'TestGPU'
	grep -E '^(--- |FAIL|ok|PASS)|MiB|us per|µs' "$OUT/nccl.log" "$OUT/vendor.log" | head -40
}

step_ncclt() {
	if [[ ! -f $BIN/ncclt/build.sh ]]; then
		note ncclt skip "no nccl-tests tree in $BIN/ncclt"
		return
	fi
	run_step ncclt-bld ncclt-build.log bash "$BIN/ncclt/build.sh" || return
	# NCCLT_COLLS picks collectives (default all four); the graph pair takes the host's launch cost out.
	NCCLT_ROUNDS=${NCCLT_ROUNDS:-4} run_step ncclt ncclt.log scripts/ncclt-compare.sh "$BIN/ncclt/bin" "$BIN" /tmp/ncclt-runs
	NCCLT_COLLS=all_reduce run_step ncclt-G ncclt-graph.log scripts/ncclt-compare.sh "$BIN/ncclt/bin" "$BIN" \
		/tmp/ncclt-runs/graph -b 8 -e 1G -f 2 -g 2 -w 20 -n 50 -G 20
	tar -czf "$OUT/ncclt-runs.tgz" -C /tmp ncclt-runs
	grep -h 'within bounds' "$OUT/ncclt.log" "$OUT/ncclt-graph.log"
}

step_peers() {
	run_step peers-test peers-test.log "$BIN/gpuengine.test" -test.v -test.timeout 400s \
		-test.run 'TestGPU(PeerCollectivesMatchHost|AllToAllVMatrix)'
	grep -E '^(--- |FAIL|ok|PASS)|wrong|differs' "$OUT/peers-test.log" | head -20
	for b in "${PEER_BINS[@]}"; do
		for eng in gpu vendor; do
			expect "${b%_perf}-$eng" 0 peers.log "$BIN/$b" --engine "$eng" -g 2 -b 8 -e 4M -f 16 -w 1 -n 2 -d all -o all -r -1 -T 30
		done
		expect "${b%_perf}-8r" 0 peers.log "$BIN/$b" --engine gpu -g 8 --oversubscribe -b 1K -e 1M -f 32 -w 1 -n 2 -T 30
	done
}

step_peerperf() {
	for b in "${PEER_BINS[@]}"; do
		expect "${b%_perf}-8B-G" 0 peerperf.log "$BIN/$b" --engine vendor,gpu -g 2 -b 8 -e 8 -G 20 -w 20 -n 50
		expect "${b%_perf}-1G" 0 peerperf.log "$BIN/$b" --engine vendor,gpu -g 2 -b 1G -e 1G -w 5 -n 20
	done
}

for s in "${STEPS[@]}"; do "step_$s"; done
tar -czf "$OUT/kcache.tgz" -C "$BIN/kcache" . 2>/dev/null
grep -A40 'algo  ' "$OUT/perf.log" 2>/dev/null | grep -v '^---' | sed 's/^ *perf_test.go:[0-9]*: *//' | head -40
# The short tables: gpu engine time over NCCL's from one run, and the A/B.
[[ -f $OUT/bins.log ]] && grep -E '^# (Time ratio|  +size| +[0-9]+ +[a-z0-9]+ +[a-z]+ +[0-9.N/A]+ )' "$OUT/bins.log" | head -60
[[ -f $OUT/ab.log ]] && grep -E '^[|+]' "$OUT/ab.log" | head -20
[[ -f $OUT/peerperf.log ]] && grep -E '^# (Time ratio|Collective test starting)|^ +[0-9]+ +[0-9]+ ' "$OUT/peerperf.log" | head -60
printf '%s\n' "${SUMMARY[@]}"
