#!/usr/bin/env bash
# gpu-check.sh: the GPU engine's check on a GPU machine, from binaries built beforehand on any machine.
#
#   scripts/gpu-check.sh --build          build the binaries into $BIN (default .devbin-gpu), CGO_ENABLED=0
#   scripts/gpu-check.sh STEP...          run steps and print a summary (the usual set: test sweep perf sanitize)
#
# Steps: test      the gpuengine test binary (every algorithm x collective x dtype x op against hostengine)
#        sweep     correctness sweep of the perf binaries with --engine gpu (-d all -o all, DDA, LP)
#        perf      timing of every algorithm next to NCCL (the test binary's TestGPUPerf, and the perf
#                  binaries with --engine vendor,gpu when they accept it)
#        sanitize  compute-sanitizer memcheck and racecheck on a small case, if installed
#        bins      every binary side by side with NCCL (--engine vendor,gpu), 8 B..1 GiB; DDA with -G 20; FP8 LP float
#                  and bfloat16 16 MiB..1 GiB: each run's JSON, and rcclx-results compare's Markdown table of each
#                  in tables.md, go to $OUT/perf-json/ (docs/PERFORMANCE.md's current tables come from these)
#        ab        --ab, each arm in processes of its own: NCCL_MAX_NCHANNELS=1,32 and 32,1 on the vendor engine
#                  (the 32-channel arm >= 5x faster at 256 MiB in both orders), RCCL_DDA_ENABLE=0,1 on the gpu
#                  engine 8 B .. 32 MiB, and both again as 2 processes x 1 GPU; a planted 200 us per call
#                  (RCCLX_TESTS_DELAY_US=0,200) on both engines; on the vendor engine RCCL_DDA_ENABLE (which NCCL
#                  never reads) warns, and fails with --ab-strict
#        gate      the README's CI recipe on the vendor engine: two runs of -N 3 back to back pass the gate,
#                  a third with a planted per-call delay (RCCLX_TESTS_DELAY_US) fails it
#        multiproc 2 processes x 1 GPU (RANK/WORLD_SIZE/MASTER_ADDR): gpu engine (IPC) and vendor; then rank 1
#                  killed during a 1 GiB size: rank 0 exits 2 within 3 s, naming it; DDA on the gpu engine
#                  (-d all, and with -G)
#        oversub   the users' command at 8 ranks on the GPUs there are (--oversubscribe), DDA on and off
#        faults    skipped rank -> exit 4 within -T; corrupted element -> exit 7 (gpu and vendor engines)
#        ncclt     nccl-tests itself next to the vendor engine (scripts/ncclt-compare.sh), when a nccl-tests source
#                  tree with a build.sh sits in $BIN/ncclt (not part of this repository)
#        vendor    the vendor engine's and the NCCL binding's GPU tests (non-blocking communicators, -T inside
#                  NCCL calls, hooks, device memory released on every exit path)
#        doctor    rcclx-doctor: driver, GPUs, NVRTC, IPC, peer access, the NCCL library; every check ok
#        rccl      rccl-tests' flags on the gpu and vendor engines: -Y host|managed|coarse|fine (and -y coarse)
#                  validated with its "#" line, -x 1 (CTA policy), -q, -A 1, -Z csv|json -X files
#        coldstart all_reduce_perf -d all -o all with an empty kernel cache, then again with the cache it filled:
#                  both wall times, and the "compiling N kernels" line (cold run only)
#        a2a       alltoall 64 MiB..1 GiB in place and out of place next to NCCL; and, 8 MiB..1 GiB, the gpu
#                  engine's in-place copy-engine transport against its kernels (-O 0 --ab ..._GPU_CE_BYTES=off,8M)
#        cetune    the copy-engine chunk of staged pieces A/B'd on the gpu engine, 256 MiB..1 GiB, 16 MiB
#                  against the default 64 MiB (RCCLX_TESTS_GPU_CE_CHUNK): reduce_scatter, reduce, and in place
#                  alltoall, alltoallv and sendrecv
#        kt        kernel timing (RCCL_TESTS_KERNEL_TIMING) on the gpu and vendor engines, 1 MiB..256 MiB: the
#                  records per half, and the median timed dispatch next to the table's time of each half; the
#                  same sweep without kernel timing after it (what the events cost the table's time); -G 5
#        lp        FP8 LP rows at 64 MiB, 256 MiB and 1 GiB, float and bfloat16, with their max and RMS relative
#                  error (JSON): all four collectives next to NCCL (--engine vendor,gpu), and the scaled mode
#        goals     the rows of docs/PERFORMANCE.md's goals table next to NCCL (--engine vendor,gpu), two invocations
#                  each: FP8 LP all_reduce, all_gather, reduce_scatter, alltoall (float, 64 MiB..1 GiB) and all_reduce
#                  bfloat16 (16 MiB..1 GiB), ring all_reduce 512 MiB and 1 GiB, reduce_scatter 1 GiB; last, per
#                  invocation, rcclx-results compare's table (time, busbw and speedup per size, out of place)
#        builds    this build's FP8 LP kernels against another's: the LP binaries (all_reduce in float and
#                  bfloat16, all_gather, reduce_scatter, alltoall) of $BIN and of $BIN/old (built from another
#                  revision), alternating, two runs each, 64 MiB..1 GiB, -c 0; a table of the mean of out-of-place
#                  and in-place times, old -> new (run the test step on the build you keep)
#        loopgap   the 64 MiB float FP8 all_reduce's time by what ran before it in the process: alone with -w 5
#                  and -w 200 (-n 20), -w 200 -n 200, after NCCL (--engine vendor,gpu) and before it (gpu,vendor),
#                  and -w 200 with the launcher threads off; each as completion time and, with -C 1, as the host's
#                  enqueue time per call (equal: the launches hold the loop; far below: the wait or the GPU)
#        bound     FP8 alltoall's bytes at 1 GiB streamed with no arithmetic and no synchronization, on one GPU and
#                  on two at once, and as a pipeline in 8-64 chunks, with and without each block waiting for the
#                  other GPU's between steps, pushing the codes in 1-16 chunks, and with each block's halves
#                  decoupled (one writes codes, the other waits for the peer's only) (gpurt's TestGPUStreamBound):
#                  the bounds FP8 alltoall is held against (docs/DESIGN.md)
#        profile   Nsight Compute on the FP8 LP kernels at 1 GiB (float, and bfloat16 all_reduce): 2 processes x 1
#                  GPU, rank 0 under ncu with counters that fit in one pass; per launch the HBM bytes read and
#                  written, the kernel time, the HBM rate and the share of cycles that issued an instruction
#        colls     broadcast, reduce, gather, scatter, sendrecv, alltoallv, hypercube on the vendor engine: every
#                  type, op and root (#wrong 0), alltoallv's matrix mode, 8 B with -G 20 and 1 GiB, the hooks;
#                  the same binaries on the gpu engine (run, or refused per type: no crash); all_reduce_bias
#                  on NCCL (one line: the library lacks ncclAllReduceWithBias)
#        peers     broadcast, reduce, gather, scatter, sendrecv, alltoallv, hypercube: the gpuengine tests against
#                  the host engine (alltoallv captured in graphs too), then every binary on the gpu and vendor
#                  engines (-d all -o all -r -1, 2 GPUs) and on 8 oversubscribed ranks (-d all -o all); alltoallv
#                  with -G and -w 0
#        peerperf  the same binaries next to NCCL (--engine vendor,gpu) at 8 B with -G 20 and at 1 GiB
#        scale     every GPU of the machine a rank (3 or more GPUs): the perf and point-to-point binaries on both
#                  engines (-d all -o all, DDA, LP), one process per GPU, the gpuengine matrix at 3 and NGPU
#                  ranks, and the four perf binaries next to NCCL (plain 8 B..1 GiB, LP 64 MiB..1 GiB, DDA -G 20)
# On one GPU the gpu engine's two ranks share it and NCCL runs one rank; checks that need two GPUs say "skip".
# Logs go to $OUT (default /tmp/gpu-check), and with PACK=DIR also into DIR/gpu-check-logs.tgz (one file for
# tools that bring back few files); the compiled kernels are cached in $BIN/kcache and packed into
# $OUT/kcache.tgz, so that the next call can carry them back in $BIN.
# GPU_NAME=H200 (any part of nvidia-smi's GPU name) runs nothing and exits 3 unless every GPU's name has it:
# for figures that belong to one machine type, where a lender may hand out another.
set -uo pipefail
usage() { sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0"; }
case ${1:-} in
-h | --help)
	usage
	exit 0
	;;
'')
	usage >&2
	exit 2
	;;
esac
cd "$(dirname "$0")/.."
BIN=${BIN:-.devbin-gpu}
PERF_BINS=(all_reduce_perf all_gather_perf alltoall_perf reduce_scatter_perf)
COLL_BINS=(broadcast_perf reduce_perf gather_perf scatter_perf sendrecv_perf alltoallv_perf hypercube_perf
	all_reduce_bias_perf)

if [[ ${1:-} == --build ]]; then
	mkdir -p "$BIN"
	for pkg in gpuengine vendorengine nccl gpurt; do
		CGO_ENABLED=0 go test -c -ldflags="-s -w" -o "$BIN/$pkg.test" "./$pkg" || exit 1
	done
	for b in "${PERF_BINS[@]}" "${COLL_BINS[@]}" rcclx-doctor rcclx-results; do
		CGO_ENABLED=0 go build -ldflags="-s -w" -o "$BIN/$b" "./cmd/$b" || exit 1
	done
	ls -la "$BIN"
	exit 0
fi

STEPS=("$@")
for s in "${STEPS[@]}"; do
	if ! grep -q "^step_$s() {" "$0"; then
		echo "gpu-check.sh: unknown step $s" >&2
		usage >&2
		exit 2
	fi
done

export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# Two ranks on two GPUs. On one GPU the gpu engine's two ranks share it (--oversubscribe) and NCCL, which
# refuses two ranks on one GPU, runs one rank; checks whose verdict needs two GPUs then say "skip".
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [[ -n ${GPU_NAME:-} ]] && { ((NGPU == 0)) || nvidia-smi -L | grep '^GPU ' | grep -qv -- "$GPU_NAME"; }; then
	echo "gpu-check.sh: GPU_NAME=$GPU_NAME, but this machine has:" >&2
	nvidia-smi -L >&2 2>/dev/null || echo "no GPU (nvidia-smi -L failed)" >&2
	exit 3
fi
if ((NGPU >= 2)); then
	GG=(-g 2) VG=(-g 2) PEER=1
else
	GG=(-g 2 --oversubscribe) VG=(-g 1) PEER=0 # PEER: a rank other than 0 for the hooks and -r
fi
# ranks ENGINE: the -g arguments of two ranks (or NCCL's one) on ENGINE.
ranks() { if [[ $1 == gpu ]]; then echo "${GG[@]}"; else echo "${VG[@]}"; fi; }
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT" "$BIN/kcache"
export RCCLX_TESTS_KERNEL_CACHE=$PWD/$BIN/kcache
[[ -f $BIN/kcache.tgz ]] && tar -xzf "$BIN/kcache.tgz" -C "$BIN/kcache"
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
	run_step test test.log "$BIN/gpuengine.test" -test.v -test.timeout 420s \
		-test.run 'TestGPU(AlgorithmsMatchHost|Large|Timeout|CorruptHook|GraphReplayAndEvents|BackToBack|Hardware(E4M3|BF16)MatchesConvert|Unaligned|TwoThreads|CloseReleasesDeviceMemory|LPSubRangesWithALaggingBlock)|TestNoDriver'
	grep -E '^(--- |FAIL|ok|PASS)|compiled|wrong|differs' "$OUT/test.log" | head -40
}

# The sweep needs perf binaries whose gpu engine opens here; otherwise the step says so and skips.
gpu_engine_known() { "$BIN/all_reduce_perf" --engine gpu -g 1 -b 8 -e 8 -n 1 -w 0 >/dev/null 2>&1; }

step_bound() {
	RCCLX_TESTS_GPU_PERF=1 run_step bound bound.log "$BIN/gpurt.test" -test.v -test.run TestGPUStreamBound
	grep -E '^ +(kernel|cuMemcpy|a2a|staged|push|decoupled|best)' "$OUT/bound.log"
}

step_sweep() {
	if [[ ! -x $BIN/all_reduce_perf ]] || ! gpu_engine_known; then
		note sweep skip "no perf binaries, or the gpu engine does not open here"
		return
	fi
	local rc=0
	for b in "${PERF_BINS[@]}"; do
		# DDA and LP take float/half/bfloat16 sums only: the other types and ops are the default mode's.
		for mode in "-d all -o all" "--dda -d all" "--lp -d bfloat16 --lp-mode scaled -E RCCLX_TESTS_LP_MIN_BYTES=0"; do
			# shellcheck disable=SC2086
			timeout -k 10 90 "$BIN/$b" --engine gpu "${GG[@]}" -b 8 -e 1M -f 32 -w 1 -n 2 -T 30 $mode >>"$OUT/sweep.log" 2>&1 || rc=1
		done
		timeout -k 10 60 "$BIN/$b" --engine gpu -g 8 --oversubscribe -b 1K -e 1M -f 32 -w 1 -n 2 -T 30 >>"$OUT/sweep.log" 2>&1 || rc=1
	done
	note sweep "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "sweep.log"
}

step_perf() {
	RCCLX_TESTS_GPU_PERF=1 run_step perf perf.log "$BIN/gpuengine.test" -test.v -test.timeout 220s -test.run TestGPUPerf
	if [[ -x $BIN/all_reduce_perf ]] && gpu_engine_known; then
		"$BIN/all_reduce_perf" --engine vendor,gpu "${VG[@]}" -b 8 -e 1G -f 8 -w 5 -n 20 >"$OUT/perf-binaries.log" 2>&1
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
	local J=$OUT/perf-json b f t
	rm -rf "$J" && mkdir -p "$J"
	for b in "${PERF_BINS[@]}" "${COLL_BINS[@]:0:7}"; do # not all_reduce_bias: NCCL has no such call
		expect "${b%_perf}" 0 bins.log "$BIN/$b" --engine vendor,gpu "${VG[@]}" -b 8 -e 1G -f 8 -w 5 -n 20 -J "$J/${b%_perf}.json"
	done
	expect dda-G 0 bins.log "$P" --engine vendor,gpu --dda -G 20 "${VG[@]}" -b 8 -e 4M -f 4 -w 5 -n 20 -J "$J/all_reduce_dda_G20.json"
	for b in "${PERF_BINS[@]}"; do
		for t in float bfloat16; do
			expect "lp-${b%_perf}-$t" 0 bins.log "$BIN/$b" --engine vendor,gpu --lp -d $t "${VG[@]}" -b 16M -e 1G -f 4 -w 5 -n 20 \
				-J "$J/${b%_perf}_lp_$t.json"
		done
	done
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$J/machine.txt" 2>&1
	date -u +%Y-%m-%d >>"$J/machine.txt"
	for f in "$J"/*.json; do
		echo "### ${f##*/}"
		"$BIN/rcclx-results" compare --markdown "$f"
		echo
	done >"$J/tables.md" 2>&1
}

step_doctor() {
	rm -f "$OUT/doctor.log"
	expect doctor 0 doctor.log "$BIN/rcclx-doctor"
	cat "$OUT/doctor.log"
}

# kt_table ENGINE LOG CSV: per size and half, the table's time and the median timed dispatch in CSV (us).
kt_table() {
	awk -v eng="$1" 'FNR == NR { if ($1 ~ /^[0-9]+$/ && NF >= 13) { t[$1 " 0"] = $6; t[$1 " 1"] = $10 }; next }
		FNR > 1 && $0 !~ /phase=setup/ { match($0, /size=[0-9]+/); s = substr($0, RSTART + 5, RLENGTH - 5)
			match($0, /in_place=[0-9]/); k = s " " substr($0, RSTART + 9, 1); split($0, f, ","); d[k] = d[k] " " f[12] / 1000 }
		END { for (k in d) { n = split(substr(d[k], 2), v, " ")
			for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { x = v[j]; v[j] = v[j - 1]; v[j - 1] = x }
			m = v[int((n + 1) / 2)]
			split(k, kk, " "); printf "kt %-10s %10s in_place=%s  table %9.2f us  dispatch median %9.2f us (%d)  ratio %.3f\n", eng, kk[1], kk[2], t[k], m, n, m / t[k] } }' \
		"$OUT/$2" "$3" | sort -k3,3n -k4,4
}

step_kt() {
	local e dir n
	for e in gpu vendor; do
		dir=$OUT/kt-$e && rm -rf "$dir" && mkdir -p "$dir"
		rm -f "$OUT/kt-$e.log" "$OUT/kt-$e-off.log"
		RCCL_TESTS_KERNEL_TIMING=$dir/kt expect "kt-$e" 0 "kt-$e.log" "$P" --engine $e $(ranks $e) -b 1M -e 256M -f 4 -w 5 -n 20
		expect "kt-$e-off" 0 "kt-$e-off.log" "$P" --engine $e $(ranks $e) -b 1M -e 256M -f 4 -w 5 -n 20
		n=$(($(cat "$dir"/kt_pid*.csv 2>/dev/null | wc -l) - 1))
		note "kt-$e-rows" "$( ((n == 5 * 2 * 25 * $(ranks $e | awk '{print $2}'))) && echo ok || echo FAIL)" "$n records"
		kt_table "$e" "kt-$e.log" "$dir"/kt_pid*.csv >>"$OUT/kt.txt"
		kt_table "$e-off" "kt-$e-off.log" "$dir"/kt_pid*.csv >>"$OUT/kt.txt"
	done
	dir=$OUT/kt-graph && rm -rf "$dir" && mkdir -p "$dir"
	RCCL_TESTS_KERNEL_TIMING=$dir/kt expect kt-graph 0 kt-graph.log "$P" --engine gpu $(ranks gpu) -b 1M -e 1M -w 5 -n 20 -G 5
	n=$(grep -c ',20,[0-9]*,[0-9]*,[0-9]*,"rccl-tests timed_loop .* graph=1"$' "$dir"/kt_pid*.csv)
	note kt-graph "$( ((n == 2 * 5 * $(ranks gpu | awk '{print $2}'))) && echo ok || echo FAIL)" "$n graph launches timed"
}

# ab_speedup NAME LOG LO HI: every row of the A/B tables in LOG has its speedup (time A / time B) in [LO, HI].
ab_speedup() {
	local name=$1 log=$2 lo=$3 hi=$4 rows bad
	rows=$(grep -cE '^\| +[0-9]+(B|KiB|MiB|GiB) ' "$OUT/$log")
	bad=$(grep -E '^\| +[0-9]+(B|KiB|MiB|GiB) ' "$OUT/$log" |
		awk -F'|' -v lo="$lo" -v hi="$hi" '{s = $6; sub(/x/, "", s); if (s + 0 < lo || s + 0 > hi) print}')
	note "$name" "$([[ $rows -gt 0 && -z $bad ]] && echo ok || echo FAIL)" "$rows rows, speedup in [$lo, $hi] $log"
}

# procs N BINARY NAME LOG ARGS...: BINARY as N processes x 1 GPU (the launcher's variables set by hand); rank
# 0's output goes to LOG, rank r's to LOG.r.
procs() {
	local n=$1 bin=$2 name=$3 log=$4 pids=() rc=0 r
	shift 4
	for ((r = 0; r < n; r++)); do
		RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29600 + ${#name})) \
			timeout -k 10 150 "$bin" -g 1 -T 60 "$@" >"$OUT/$log$( ((r > 0)) && echo ".$r")" 2>&1 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || rc=$?; done
	note "$name" "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "rc=$rc $log"
}

# two_procs NAME LOG ARGS...: the perf binary as 2 processes x 1 GPU.
two_procs() { procs 2 "$P" "$@"; }

# NCCL reads NCCL_MAX_NCHANNELS once per process: only arms in processes of their own can differ in it. One
# channel against 32 at 256 MiB is many times slower (14x on 2x H200, NCCL 2.28.3), in either arm order.
step_ab() {
	local ch=(--engine vendor -b 256M -e 256M -w 2 -n 5 --ab-rounds 3)
	if ((PEER)); then
		expect ab-ch1-32 0 ab-ch1-32.log "$P" "${ch[@]}" "${VG[@]}" --ab NCCL_MAX_NCHANNELS=1,32 -J "$OUT/ab-ch1-32.json"
		ab_speedup ab-ch1-32 ab-ch1-32.log 5 1000
		expect ab-ch32-1 0 ab-ch32-1.log "$P" "${ch[@]}" "${VG[@]}" --ab NCCL_MAX_NCHANNELS=32,1 -J "$OUT/ab-ch32-1.json"
		ab_speedup ab-ch32-1 ab-ch32-1.log 0 0.2
		two_procs ab-2p-ch ab-2p-ch.log "${ch[@]}" --ab NCCL_MAX_NCHANNELS=1,32 -J "$OUT/ab-2p-ch.json"
		ab_speedup ab-2p-ch ab-2p-ch.log 5 1000
	else
		note ab-ch skip "one GPU: NCCL runs one rank, where channels make no difference"
	fi
	# A planted 200 us per call, read once per process as NCCL reads its variables: arm B about 200 us slower.
	for eng in gpu vendor; do
		expect "ab-delay-$eng" 0 "ab-delay-$eng.log" "$P" --engine "$eng" $(ranks "$eng") -b 8 -e 8 -w 2 -n 10 \
			--ab RCCLX_TESTS_DELAY_US=0,200
		ab_speedup "ab-delay-$eng" "ab-delay-$eng.log" 0 0.2
	done
	expect ab 0 ab.log "$P" --engine gpu "${GG[@]}" -b 8 -e 32M -f 8 -w 5 -n 20 --ab RCCL_DDA_ENABLE=0,1 -J "$OUT/ab.json"
	two_procs ab-2p-dda ab-2p-dda.log --engine gpu -b 8 -e 32M -f 8 -w 5 -n 20 --ab RCCL_DDA_ENABLE=0,1
	expect ab-unread 0 ab-vendor.log "$P" --engine vendor "${VG[@]}" -b 1M -e 1M -n 5 --ab RCCL_DDA_ENABLE=0,1
	note ab-warn "$(grep -q '^# WARNING: .* does not contain the name RCCL_DDA_ENABLE' "$OUT/ab-vendor.log" && echo ok ||
		echo FAIL)" "the library never reads RCCL_DDA_ENABLE: ab-vendor.log"
	expect ab-strict 1 ab-vendor.log "$P" --engine vendor "${VG[@]}" -b 1M -e 1M --ab RCCL_DDA_ENABLE=0,1 --ab-strict
	expect ab-nchan 0 ab-vendor.log "$P" --engine vendor "${VG[@]}" -b 1M -e 1M -n 5 --ab NCCL_MAX_NCHANNELS=1,32 --ab-strict
}

# The README's gate recipe, on the GPUs there are: identical runs never fail (PASS, or INCONCLUSIVE, exit 2,
# where one run's noise leaves a size open: counted as 0 here); 20 us more per call (every size up to ~64K slows
# by far more than 15%) fails.
step_gate() {
	local R="$BIN/rcclx-results" run=("$P" --engine vendor "${VG[@]}" -b 8 -e 128M -f 2 -N 3)
	rm -f "$OUT"/gate-*.json
	expect gate-base 0 gate.log "${run[@]}" -J "$OUT/gate-base.json"
	expect gate-same 0 gate.log "${run[@]}" -J "$OUT/gate-same.json"
	RCCLX_TESTS_DELAY_US=20 expect gate-slow 0 gate.log "${run[@]}" -J "$OUT/gate-slow.json"
	expect gate-pass 0 gate.log bash -c '"$@"; rc=$?; ((rc == 2)) && rc=0; exit $rc' gate "$R" gate \
		--baseline "$OUT/gate-base.json" "$OUT/gate-same.json" --threshold 10%
	expect gate-fail 1 gate.log "$R" gate --baseline "$OUT/gate-base.json" "$OUT/gate-slow.json" --threshold 10%
	grep -E '^(FAIL|WARN|NOTE|INCONCLUSIVE|gate:)' "$OUT/gate.log" | head -30
}

step_multiproc() {
	for eng in gpu vendor; do
		if [[ $eng == vendor ]] && ((!PEER)); then
			note mp-vendor skip "one GPU: NCCL refuses two ranks on one GPU"
			continue
		fi
		two_procs "mp-$eng" "mp-$eng.log" --engine "$eng" -b 8 -e 64M -f 8 -d all
		mp_lost "$eng"
	done
	# DDA's kernels over IPC: LL, LL128 and the push one-shot at 2 ranks, graphs included.
	two_procs mp-gpu-dda mp-gpu-dda.log --engine gpu --dda -d all -b 8 -e 4M -f 2 -w 1 -n 2
	two_procs mp-gpu-dda-G mp-gpu-dda-G.log --engine gpu --dda -b 8 -e 4M -f 2 -G 5 -w 1 -n 5
}

# mp_lost ENGINE: rank 1 of a 2-process run killed (kill -9) during its 1 GiB size: rank 0 must exit 2 within 3 s
# of the kill, naming rank 1.
mp_lost() {
	local eng=$1 pids=() r
	for r in 0 1; do
		RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29600 + ${#eng})) \
			timeout -k 10 120 "$P" --engine "$eng" -g 1 -b 1G -e 1G -w 5 -n 5000 -T 60 >"$OUT/mp-$eng-lost-$r.log" 2>&1 &
		pids+=($!)
	done
	for ((r = 0; r < 90; r++)); do
		grep -q 'size *count' "$OUT/mp-$eng-lost-0.log" 2>/dev/null && break
		sleep 1
	done
	sleep 1
	local t0=$EPOCHREALTIME rc=0
	pkill -9 -P "${pids[1]}" # the perf binary under timeout
	wait "${pids[0]}" || rc=$?
	local dt
	dt=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
	wait "${pids[1]}" 2>/dev/null
	local ok=FAIL
	[[ $rc == 2 ]] && awk -v d="$dt" 'BEGIN { exit !(d < 3) }' && grep -q 'rank 1' "$OUT/mp-$eng-lost-0.log" && ok=ok
	note "mp-$eng-lost" "$ok" "rc=$rc want=2 in ${dt}s mp-$eng-lost-0.log"
}

step_oversub() {
	expect oversub8 0 oversub.log "$P" --engine gpu --oversubscribe -b 4M -e 128M -f 2 -g 8
	expect oversub8-dda 0 oversub.log "$P" --engine gpu --oversubscribe --dda -b 8 -e 128M -f 8 -g 8
	expect oversub8-lp 0 oversub.log "$P" --engine gpu --oversubscribe --lp -b 16M -e 128M -f 2 -g 8
}

step_faults() {
	RCCLX_TESTS_SKIP_RANK=1 expect skip-T5 4 faults.log "$P" --engine gpu "${GG[@]}" -b 1M -e 1M -T 5
	local want=1
	if ((PEER)); then
		RCCLX_TESTS_SKIP_RANK=1 expect v-skip-T5 4 faults.log "$P" --engine vendor "${VG[@]}" -b 1M -e 1M -T 5
		want=2
	else
		note v-skip-T5 skip "one GPU: NCCL runs one rank, no peer to leave waiting"
	fi
	# Each timeout names the rank that never arrived, not the one that waited.
	local named
	named=$(grep -c '^timeout: rank 1 did not arrive at all_reduce size 1048576 ' "$OUT/faults.log")
	note skip-names-rank "$([[ $named == "$want" ]] && echo ok || echo FAIL)" "$named of $want timeout lines name rank 1, faults.log"
	RCCLX_TESTS_CORRUPT_RANK=1 expect corrupt 7 faults.log "$P" --engine gpu "${GG[@]}" -b 1M -e 64M -f 8
	RCCLX_TESTS_CORRUPT_RANK=$PEER expect v-corrupt 7 faults.log "$P" --engine vendor "${VG[@]}" -b 1M -e 4M -f 2
}

step_vendor() {
	run_step nccl nccl.log "$BIN/nccl.test" -test.v -test.timeout 120s -test.run 'TestGPU'
	run_step vendor vendor.log "$BIN/vendorengine.test" -test.v -test.timeout 300s -test.run 'TestGPU'
	grep -E '^(--- |FAIL|ok|PASS)|MiB|us per|µs' "$OUT/nccl.log" "$OUT/vendor.log" | head -40
}

# expect_line NAME LOG PATTERN: the log has a line matching PATTERN (grep -E).
expect_line() {
	note "$1" "$(grep -qE "$3" "$OUT/$2" && echo ok || echo FAIL)" "line /$3/ in $2"
}

step_rccl() {
	for eng in gpu vendor; do
		for mem in host managed coarse fine; do
			local log=rccl-$eng-$mem.log
			: >"$OUT/$log"
			expect "$eng-Y-$mem" 0 "$log" "$P" --engine "$eng" $(ranks "$eng") -b 8 -e 64M -f 8 -Y "$mem" -Z csv -X "$OUT/rccl-$eng-$mem.csv"
		done
		expect_line "$eng-host#" "rccl-$eng-host.log" '^# Memory: rank buffers in pinned host memory mapped for the device'
		expect_line "$eng-managed#" "rccl-$eng-managed.log" '^# Memory: rank buffers in managed memory'
		expect_line "$eng-coarse#" "rccl-$eng-coarse.log" '^# -Y coarse means nothing on this GPU'
		expect_line "$eng-fine#" "rccl-$eng-fine.log" '^# -Y fine means nothing on this GPU'
		: >"$OUT/rccl-$eng-y.log"
		expect "$eng-y-coarse" 0 "rccl-$eng-y.log" "$P" --engine "$eng" $(ranks "$eng") -b 8 -e 1M -f 8 -y coarse -q 1000 -A 1 -Z json -X "$OUT/rccl-$eng.json"
		expect_line "$eng-y#" "rccl-$eng-y.log" '^# -Y coarse means nothing on this GPU'
	done
	: >"$OUT/rccl-x.log"
	expect vendor-x1 0 rccl-x.log "$P" --engine vendor "${VG[@]}" -b 8 -e 1M -f 8 -x 1
	expect_line vendor-x1# rccl-x.log '^# (CTA policy: 1 \(ncclConfig\)|-x 1 ignored: .* has no CTA policy 1)'
	head -3 "$OUT/rccl-gpu-host.csv" "$OUT/rccl-vendor.json"
}

step_coldstart() {
	local kc t0 t1 t2 rc1 rc2
	kc=$(mktemp -d)
	local cmd=("$P" --engine gpu "${GG[@]}" -d all -o all -b 1 -e 3M -f 7 -n 2)
	t0=$(date +%s.%N)
	RCCLX_TESTS_KERNEL_CACHE=$kc timeout -k 10 300 "${cmd[@]}" >"$OUT/coldstart-cold.log" 2>&1
	rc1=$?
	t1=$(date +%s.%N)
	RCCLX_TESTS_KERNEL_CACHE=$kc timeout -k 10 300 "${cmd[@]}" >"$OUT/coldstart-warm.log" 2>&1
	rc2=$?
	t2=$(date +%s.%N)
	rm -rf "$kc"
	local cold warm lines_cold lines_warm
	cold=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	warm=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.1f", b - a }')
	lines_cold=$(grep -c 'compiling .* kernels for sm_' "$OUT/coldstart-cold.log")
	lines_warm=$(grep -c 'compiling .* kernels for sm_' "$OUT/coldstart-warm.log")
	grep -h 'compiling .* kernels' "$OUT/coldstart-cold.log"
	local ok=ok
	[[ $rc1 == 0 && $rc2 == 0 && $lines_cold == 1 && $lines_warm == 0 ]] || ok=FAIL
	note coldstart "$ok" "cold ${cold}s (rc=$rc1, $lines_cold compiling line) warm ${warm}s (rc=$rc2, $lines_warm) coldstart-*.log"
}

step_a2a() {
	: >"$OUT/a2a.log"
	expect a2a 0 a2a.log "$BIN/alltoall_perf" --engine vendor,gpu "${VG[@]}" -b 64M -e 1G -f 2 -w 5 -n 20
	expect a2a-ab 0 a2a.log "$BIN/alltoall_perf" --engine gpu "${GG[@]}" -b 8M -e 1G -f 2 -w 5 -n 20 \
		-O 0 --ab RCCLX_TESTS_GPU_CE_BYTES=off,8M
}

step_cetune() {
	: >"$OUT/cetune.log"
	local b place
	for b in reduce_scatter_perf reduce_perf alltoall_perf alltoallv_perf sendrecv_perf; do
		place=()
		[[ $b == all* || $b == sendrecv* ]] && place=(-O 0) # staged in place only
		expect "chunk-${b%_perf}" 0 cetune.log "$BIN/$b" --engine gpu "${GG[@]}" -b 256M -e 1G -f 4 -w 5 -n 20 \
			"${place[@]}" --ab RCCLX_TESTS_GPU_CE_CHUNK=16M,64M
	done
}

# lp_rows JSON...: one line per checked half of every row: engine, algorithm, type, size, half, algbw, errors.
lp_rows() {
	tr -d '",' <"$1" | awk -F': *' '
		/^ *size:/ {size = $2} /^ *type:/ {ty = $2} /out_of_place:/ {h = "oop"} /in_place:/ {h = "ip"}
		/^ *alg_bw:/ {bw[h] = $2} /^ *max_rel_err:/ {mx[h] = $2} /^ *rms_rel_err:/ {rms[h] = $2}
		/^ *engine:/ {eng = $2}
		/^ *algorithm:/ {
			for (i = 1; i <= 2; i++) {
				k = i == 1 ? "oop" : "ip"
				if (k in mx) printf "%-7s %-5s %-9s %11d %-3s algbw %8.2f  max_rel_err %.3e  rms_rel_err %.3e\n", eng, $2, ty, size, k, bw[k], mx[k], rms[k]
			}
			split("", bw); split("", mx); split("", rms)
		}'
}

step_lp() {
	local dt b
	: >"$OUT/lp.log"
	for dt in float bfloat16; do
		for b in all_reduce_perf all_gather_perf reduce_scatter_perf alltoall_perf; do
			expect "lp-${b%_perf}-$dt" 0 lp.log "$BIN/$b" --engine vendor,gpu --lp -d "$dt" "${VG[@]}" -b 64M -e 1G -f 4 \
				-w 5 -n 20 -J "$OUT/lp-$b-$dt.json"
		done
		expect "lp-scaled-$dt" 0 lp.log "$P" --engine gpu --lp --lp-mode scaled -d "$dt" "${GG[@]}" -b 64M -e 1G -f 4 \
			-w 5 -n 20 -J "$OUT/lp-scaled-$dt.json"
	done
	for f in "$OUT"/lp-*.json; do
		echo "== ${f##*/}"
		lp_rows "$f"
	done | tee "$OUT/lp-errors.txt"
}

step_goals() {
	if [[ $PEER == 0 ]]; then
		note goals skip "needs two GPUs"
		return
	fi
	local rep b f
	for rep in 1 2; do
		for b in all_reduce_perf all_gather_perf reduce_scatter_perf alltoall_perf; do
			goal_run "lp-${b%_perf}-$rep" "$BIN/$b" --lp -b 64M -e 1G -f 4
		done
		goal_run "lp-all_reduce-bf16-$rep" "$P" --lp -d bfloat16 -b 16M -e 1G -f 2
		goal_run "ring-all_reduce-$rep" "$P" -b 512M -e 1G -f 2
		goal_run "reduce_scatter-$rep" "$BIN/reduce_scatter_perf" -b 1G -e 1G
	done
	for f in "$OUT"/goals-*.json; do
		echo "== ${f##*/}"
		"$BIN/rcclx-results" compare "$f"
	done | tee "$OUT/goals-table.txt"
}

# goal_run NAME BINARY FLAGS...: one invocation next to NCCL, its log and JSON goals-NAME.txt and .json.
goal_run() {
	local name=$1 b=$2
	shift 2
	: >"$OUT/goals-$name.txt"
	expect "goals-$name" 0 "goals-$name.txt" "$b" --engine vendor,gpu "${VG[@]}" "$@" -w 5 -n 20 \
		-J "$OUT/goals-$name.json"
}

step_loopgap() {
	if [[ $PEER == 0 ]]; then
		note loopgap skip "needs two GPUs"
		return
	fi
	local raw=$OUT/loopgap.log rep c e w env cpu
	: >"$raw"
	for rep in 1 2 3; do
		for c in "gpu|-w 5 -n 20|" "gpu|-w 200 -n 20|" "gpu|-w 200 -n 200|" "vendor,gpu|-w 5 -n 20|" \
			"gpu,vendor|-w 5 -n 20|" "gpu|-w 200 -n 20|RCCLX_TESTS_GPU_LAUNCHERS=off"; do
			IFS='|' read -r e w env <<<"$c"
			for cpu in 0 1; do
				# shellcheck disable=SC2086 # w holds several flags
				env $env timeout -k 10 120 "$BIN/all_reduce_perf" --engine "$e" "${VG[@]}" --lp -b 64M -e 64M $w \
					-C $cpu | awk -v t="$e $w ${env:+$env }-C $cpu" '/# Engine/ {x = $3}
					/^ *[0-9]+ +[0-9]+ +float/ && (x == "" || x == "gpu") {print t "|" $6}' >>"$raw"
			done
		done
	done
	awk -F'|' '{n[$1]++; s[$1] += $2; if (!($1 in lo) || $2 < lo[$1]) lo[$1] = $2; if ($2 > hi[$1]) hi[$1] = $2}
		END {for (k in n) printf "%-62s %8.2f us (%.2f-%.2f, %d)\n", k, s[k] / n[k], lo[k], hi[k], n[k]}' "$raw" |
		sort | tee "$OUT/loopgap.txt"
	note loopgap "$([[ -s $OUT/loopgap.txt ]] && echo ok || echo FAIL)" "loopgap.txt"
}

# The FP8 LP kernels that builds and profile time, as binary:type.
LP_RUNS=(all_reduce_perf:float all_reduce_perf:bfloat16 all_gather_perf:float reduce_scatter_perf:float alltoall_perf:float)

step_builds() {
	if [[ ! -x $BIN/old/all_reduce_perf ]]; then
		note builds skip "no build in $BIN/old"
		return
	fi
	local raw=$OUT/builds.log rep v b dt
	: >"$raw"
	for rep in 1 2; do
		for v in old new; do
			local dir=$BIN/old
			[[ $v == new ]] && dir=$BIN
			for b in "${LP_RUNS[@]}"; do
				dt=${b#*:} b=${b%:*}
				[[ -x $dir/$b ]] || continue
				timeout -k 10 90 "$dir/$b" --engine gpu --lp -d "$dt" "${GG[@]}" -b 64M -e 1G -f 2 -w 5 -n 20 -c 0 |
					awk -v t="${b%_perf}-$dt $v" '/^ *[0-9]+ +[0-9]+ +(float|bfloat16)/ {print t, $1, ($6 + $10) / 2}' >>"$raw"
			done
		done
	done
	awk '{k = $1 " " $3; s[k, $2] += $4; n[k, $2]++; keys[k] = 1}
		END {for (k in keys) if (n[k, "old"] && n[k, "new"]) {o = s[k, "old"] / n[k, "old"]; w = s[k, "new"] / n[k, "new"]
			printf "%-22s %11s %9.1f -> %9.1f us (%+.1f%%)\n", substr(k, 1, index(k, " ") - 1), substr(k, index(k, " ") + 1), o, w, 100 * (w / o - 1)}}' "$raw" |
		sort -k1,1 -k2,2n | tee "$OUT/builds.txt"
	note builds "$([[ -s $OUT/builds.txt ]] && echo ok || echo FAIL)" "builds.txt"
}

# A kernel replayed for a second pass would wait for a peer that does not replay: only counters of one pass.
step_profile() {
	local ncu
	ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
	if [[ -z $ncu || $PEER == 0 ]]; then
		note profile skip "needs ncu and two GPUs"
		return
	fi
	local m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.avg,sm__cycles_elapsed.avg
	local b dt r rc port=29650
	: >"$OUT/profile.txt"
	for b in "${LP_RUNS[@]}"; do
		dt=${b#*:} b=${b%:*}
		local tag=${b%_perf}-$dt pids=()
		port=$((port + 1))
		for r in 0 1; do
			local pre=()
			((r == 0)) && pre=("$ncu" --metrics "$m" --cache-control none --clock-control none -k 'regex:^lp_'
				--launch-skip 6 --launch-count 2 --csv --log-file "$OUT/profile-$tag.csv")
			RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
				timeout -k 10 150 "${pre[@]}" "$BIN/$b" --engine gpu --lp -d "$dt" -g 1 -b 1G -e 1G -w 5 -n 5 -c 0 -T 60 \
				>"$OUT/profile-$tag.$r.log" 2>&1 &
			pids+=($!)
		done
		rc=0
		for r in "${pids[@]}"; do wait "$r" || rc=$?; done
		ncu_rows "$tag" "$OUT/profile-$tag.csv" >>"$OUT/profile.txt"
		note "profile-$tag" "$([[ $rc == 0 ]] && grep -q "^$tag " "$OUT/profile.txt" && echo ok || echo FAIL)" "rc=$rc profile-$tag.csv"
	done
	cat "$OUT/profile.txt"
}

# ncu_rows TAG CSV: one line per profiled launch of ncu's CSV: TAG, HBM read and written (GB), kernel us,
# HBM GB/s, and the percentage of cycles that issued an instruction.
ncu_rows() {
	awk -F'","' -v tag="$1" 'NF > 10 && $1 ~ /^"[0-9]+$/ {
			id = substr($1, 2); v = $NF; gsub(/[",]/, "", v); m = $(NF - 2)
			if (!(id in seen)) { seen[id] = 1; ids[++n] = id }
			if (m ~ /read/) rd[id] = v; else if (m ~ /write/) wr[id] = v; else if (m ~ /duration/) ns[id] = v
			else if (m ~ /inst_executed/) inst[id] = v; else if (m ~ /cycles_elapsed/) cyc[id] = v }
		END { for (i = 1; i <= n; i++) { id = ids[i]; if (ns[id] == 0 || cyc[id] == 0) continue
			printf "%s read %.3f write %.3f GB %.1f us %.0f GB/s issue %.1f%%\n", tag, rd[id] / 1e9, wr[id] / 1e9,
				ns[id] / 1e3, (rd[id] + wr[id]) / ns[id], 100 * inst[id] / cyc[id] } }' "$2"
}

# The vendor engine runs the other seven binaries: every type, op and root must check out (exit 0; #wrong > 0
# exits 7), at 8 B under -G 20 and at 1 GiB too; the corrupt hook on the root must be caught.
step_colls() {
	local m=$OUT/alltoallv-matrix.txt
	printf '0 4096 1048576\n65536 0 16\n12345 777777 0\n' >"$m"
	for b in "${COLL_BINS[@]:0:7}"; do
		local n=${b%_perf}
		expect "$n" 0 colls.log "$BIN/$b" --engine vendor "${VG[@]}" -b 8 -e 1M -f 32 -d all -o all -r -1 -w 1 -n 2 -T 60
		expect "$n-8B-G" 0 colls.log "$BIN/$b" --engine vendor "${VG[@]}" -b 8 -e 8 -G 20 -w 5 -n 20
		expect "$n-1G" 0 colls.log "$BIN/$b" --engine vendor "${VG[@]}" -b 1G -e 1G -w 5 -n 20
		RCCLX_TESTS_CORRUPT_RANK=$PEER expect "$n-bad" 7 colls.log "$BIN/$b" --engine vendor "${VG[@]}" -b 1M -e 1M -r $PEER -n 2
		# The gpu engine runs it, or says per type that it does not (exit 0 either way, never a crash).
		expect "$n-gpu" 0 colls.log "$BIN/$b" --engine gpu "${GG[@]}" -b 1K -e 1M -f 32 -n 2 -T 60
	done
	expect bias-nccl 0 colls.log "$BIN/all_reduce_bias_perf" --engine vendor "${VG[@]}" -b 1K -e 1K -n 2
	NCCL_TESTS_ALLTOALLV_MATRIX_FILE=$m NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY=1 \
		expect alltoallv-mx 0 colls.log "$BIN/alltoallv_perf" --engine vendor "${VG[@]}" -b 2M -e 2M -d all -n 5
	grep -E '^# (Collective test starting|Out of bounds)|^timeout|_perf: ' "$OUT/colls.log" | uniq -c | head -60
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
		-test.run 'TestGPU(PeerCollectivesMatchHost|AllToAllVMatrix|AllToAllVGraph)'
	grep -E '^(--- |FAIL|ok|PASS)|wrong|differs' "$OUT/peers-test.log" | head -20
	for b in "${COLL_BINS[@]:0:7}"; do
		for eng in gpu vendor; do
			expect "${b%_perf}-$eng" 0 peers.log "$BIN/$b" --engine "$eng" $(ranks "$eng") -b 8 -e 4M -f 16 -w 1 -n 2 -d all -o all -r -1 -T 30
		done
		expect "${b%_perf}-8r" 0 peers.log "$BIN/$b" --engine gpu -g 8 --oversubscribe -b 1K -e 1M -f 32 -w 1 -n 2 -d all -o all -T 60
	done
	# With -w 0 each size's first call is captured into the graph: alltoallv's table travels with it.
	expect alltoallv-G-w0 0 peers.log "$BIN/alltoallv_perf" --engine gpu "${GG[@]}" -b 1K -e 4M -f 4 -G 5 -w 0 -n 5 -T 30
}

# Every GPU of the machine a rank (3 or more GPUs; the other steps cover two): the perf binaries and the seven
# point-to-point ones on both engines, checked; the perf binaries as one process per GPU; the gpuengine matrix at
# 3 and NGPU ranks; and the four perf binaries next to NCCL, plain 8 B..1 GiB, FP8 LP 64 MiB..1 GiB and DDA with
# graphs 8 B..1 MiB, whose time ratios it prints.
step_scale() {
	if ((NGPU < 3)); then
		note scale skip "$NGPU GPUs: the other steps cover two"
		return
	fi
	local g=(-g "$NGPU") b eng mode
	run_step scale-test scale-test.log "$BIN/gpuengine.test" -test.v -test.timeout 400s \
		-test.run "TestGPUAlgorithmsMatchHost/^(3|$NGPU)ranks/"
	grep -E '^(--- FAIL|FAIL|ok|PASS)|wrong|differs' "$OUT/scale-test.log" | head -20
	for b in "${PERF_BINS[@]}"; do
		for mode in "-d all -o all" "--dda -d all" "--lp" "--lp -d bfloat16 --lp-mode scaled -E RCCLX_TESTS_LP_MIN_BYTES=0"; do
			# shellcheck disable=SC2086
			expect "${b%_perf}-g$NGPU" 0 scale.log "$BIN/$b" --engine gpu "${g[@]}" -b 8 -e 64M -f 32 -w 1 -n 2 -T 30 $mode
		done
		expect "${b%_perf}-v$NGPU" 0 scale.log "$BIN/$b" --engine vendor "${g[@]}" -b 8 -e 64M -f 32 -w 1 -n 2 -T 30 -d all -o all
		for eng in gpu vendor; do
			procs "$NGPU" "$BIN/$b" "${b%_perf}-${eng}-${NGPU}p" "scale-$b-$eng-mp.log" --engine "$eng" -b 8 -e 64M -f 8 -w 1 -n 2
		done
	done
	for b in "${COLL_BINS[@]:0:7}"; do
		for eng in gpu vendor; do
			expect "${b%_perf}-$eng$NGPU" 0 scale.log "$BIN/$b" --engine "$eng" "${g[@]}" -b 8 -e 4M -f 16 -w 1 -n 2 -d all -o all -r -1 -T 30
		done
	done
	for b in "${PERF_BINS[@]}"; do
		expect "${b%_perf}-perf$NGPU" 0 scale-perf.log "$BIN/$b" --engine vendor,gpu "${g[@]}" -b 8 -e 1G -f 8 -w 5 -n 20
		expect "${b%_perf}-lp$NGPU" 0 scale-perf.log "$BIN/$b" --engine vendor,gpu "${g[@]}" --lp -b 64M -e 1G -f 4 -w 5 -n 20
	done
	expect dda-G-perf$NGPU 0 scale-perf.log "$P" --engine vendor,gpu "${g[@]}" --dda -b 8 -e 1M -f 8 -G 20 -w 20 -n 50
	grep -E '^# (Collective test starting|Time ratio|  +size)|^# +[0-9]+ ' "$OUT/scale-perf.log" | head -120
}

step_peerperf() {
	for b in "${COLL_BINS[@]:0:7}"; do
		expect "${b%_perf}-8B-G" 0 peerperf.log "$BIN/$b" --engine vendor,gpu "${VG[@]}" -b 8 -e 32 -f 4 -G 20 -w 20 -n 50
		expect "${b%_perf}-1G" 0 peerperf.log "$BIN/$b" --engine vendor,gpu "${VG[@]}" -b 1G -e 1G -w 5 -n 20
	done
}

for s in "${STEPS[@]}"; do "step_$s"; done
tar -czf "$OUT/kcache.tgz" -C "$BIN/kcache" . 2>/dev/null
[[ -n ${PACK:-} ]] && tar -czf "$PACK/gpu-check-logs.tgz" --exclude kcache.tgz --exclude gpu-check-logs.tgz -C "$(dirname "$OUT")" "$(basename "$OUT")"
grep -A40 'algo  ' "$OUT/perf.log" 2>/dev/null | grep -v '^---' | sed 's/^ *perf_test.go:[0-9]*: *//' | head -40
# The short tables: gpu engine time over NCCL's from one run, and the A/B.
[[ -f $OUT/bins.log ]] && grep -E '^# (Time ratio|  +size| +[0-9]+ +[a-z0-9]+ +[a-z]+ +[0-9.N/A]+ )' "$OUT/bins.log" | head -60
for f in ab-ch1-32 ab-ch32-1 ab-delay-gpu ab-delay-vendor ab ab-2p-ch ab-2p-dda; do
	[[ -f $OUT/$f.log ]] && echo "$f:" && grep -E '^([|+]|# A/B)' "$OUT/$f.log" | head -20
done
[[ -f $OUT/a2a.log ]] && grep -E '^(# (Engine|Time ratio|  +size)| +[0-9]+ +[0-9]+ +[a-z0-9]+ +[a-z]+ +[0-9-]+ |[|+])' "$OUT/a2a.log" | head -60
[[ -f $OUT/cetune.log ]] && grep -E '^([|+]|# A/B)' "$OUT/cetune.log" | head -60
[[ -f $OUT/lp.log ]] && grep -E '^# (Engine|Time ratio|  +size| +[0-9]+ +[a-z0-9]+ +[a-z]+ +[0-9.N/A]+ )' "$OUT/lp.log" | head -80
[[ -f $OUT/peerperf.log ]] && grep -E '^# (Time ratio|Collective test starting)|^ +[0-9]+ +[0-9]+ ' "$OUT/peerperf.log" | head -60
[[ -f $OUT/kt.txt ]] && cat "$OUT/kt.txt"
printf '%s\n' "${SUMMARY[@]}"
