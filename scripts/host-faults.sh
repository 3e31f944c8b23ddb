#!/usr/bin/env bash
# host-faults.sh: tries every fault of docs/RELIABILITY.md that the host engine can show, with the binaries of
# `make`, and prints one line per fault: exit code, wall time, what the run printed on stderr (first line).
#   make && scripts/host-faults.sh
# Every command is bounded by `timeout -k 5` (the binaries take SIGTERM like Ctrl-C: finish the current
# measurement; -k kills what a single signal cannot stop).
set -u
cd "$(dirname "$0")/.."
B=build
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
unset RANK WORLD_SIZE OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID

# try NAME CMD...: runs CMD and prints its exit code, wall time and first stderr line.
try() {
	local name=$1
	shift
	local t0 rc
	t0=$(date +%s.%N)
	timeout -k 5 60 "$@" >"$W/out" 2>"$W/err"
	rc=$?
	printf '%-28s exit %3d %6.2fs  %s\n' "$name" "$rc" "$(echo "$(date +%s.%N) - $t0" | bc)" "$(head -c 160 "$W/err" | head -1)"
}

H=(--engine host)
try "bad -u" "$B/all_reduce_perf" "${H[@]}" -u -3
try "bad -b" "$B/all_reduce_perf" "${H[@]}" -b 12Q
try "bad -e" "$B/all_reduce_perf" "${H[@]}" -e 99999999999G
try "bad -d" "$B/all_reduce_perf" "${H[@]}" -d float7
try "bad -o" "$B/all_reduce_perf" "${H[@]}" -o xor
try "bad --engine" "$B/all_reduce_perf" --engine cuda9
try "bad --lib" "$B/all_reduce_perf" --engine vendor --lib /nonexistent/libnccl.so.2 -b 8 -e 8
try "-J in missing dir" "$B/all_reduce_perf" "${H[@]}" -b 8 -e 8 -J /nonexistent/r.json
COLLS=(all_reduce all_gather reduce_scatter alltoall broadcast reduce gather scatter sendrecv alltoallv hypercube)
for c in "${COLLS[@]}"; do
	try "skip rank, -T 3, $c" env RCCLX_TESTS_SKIP_RANK=1 "$B/${c}_perf" "${H[@]}" -g 4 -b 1M -e 1M -T 3
done
try "skip rank, -T 3, dda_flat" env RCCLX_TESTS_SKIP_RANK=3 "$B/all_reduce_perf" "${H[@]}" --dda -g 8 -b 64K -e 64K -T 3
try "skip rank, -T 3, dda_tree" env RCCLX_TESTS_SKIP_RANK=3 "$B/all_reduce_perf" "${H[@]}" --dda -g 8 -b 4M -e 4M -T 3
for c in "${COLLS[@]}"; do
	# -r 1: reduce and gather have output only at the root
	try "corrupt rank 1, $c" env RCCLX_TESTS_CORRUPT_RANK=1 "$B/${c}_perf" "${H[@]}" -g 4 -b 1M -e 4M -f 2 -r 1
	echo "    #wrong per row (out-of-place, in-place): $(awk '/^ +[0-9]/ {printf "%s/%s ", $(NF-4), $NF}' "$W/out")"
done
try "-e 1024G (host memory)" "$B/all_reduce_perf" "${H[@]}" -g 2 -b 1G -e 1024G -f 1024 -n 1 -w 0 -c 0
echo "    $(grep Reducing "$W/out")"

# interrupt NAME N DELAY CMD...: starts CMD, sends it N SIGINTs DELAY seconds apart (the first after DELAY),
# and prints its exit code, the time from the last signal to its exit, and its last stderr line.
interrupt() {
	local name=$1 n=$2 delay=$3 p rc t1
	shift 3
	"$@" >"$W/out" 2>"$W/err" &
	p=$!
	for _ in $(seq "$n"); do
		sleep "$delay"
		t1=$(date +%s.%N)
		kill -INT $p
	done
	wait $p
	rc=$?
	printf '%-28s exit %3d %6.2fs after the last signal  %s\n' "$name" $rc "$(echo "$(date +%s.%N) - $t1" | bc)" "$(tail -1 "$W/err")"
}
# Ctrl-C in the middle of an endless sweep, then twice on a run stuck without -T.
interrupt "SIGINT mid-sweep" 1 3 "$B/all_reduce_perf" "${H[@]}" -g 2 -b 1K -e 64M -f 2 -n 5 -N 0 -J "$W/int.json"
echo "    rows $(grep -cE '^ +[0-9]' "$W/out"), JSON incomplete: $(grep -c '"incomplete": true' "$W"/int.json*)"
interrupt "2x SIGINT, stuck, no -T" 2 1 env RCCLX_TESTS_SKIP_RANK=1 "$B/all_reduce_perf" "${H[@]}" -g 2 -b 8 -e 8

port=$((20000 + RANDOM % 20000))
try "RANK=1 of 2 alone, -T 3" env RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$B/all_reduce_perf" "${H[@]}" -b 8 -e 8 -T 3
try "RANK=0 of 2 alone, -T 3" env RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$B/all_reduce_perf" "${H[@]}" -b 8 -e 8 -T 3

A=results/testdata/nccl-tests-all_reduce.json
head -c 1000 "$A" >"$W/cut.json"
head -c 64 /dev/urandom >"$W/junk.json"
: >"$W/empty.json"
try "gate: truncated JSON" "$B/rcclx-results" gate --baseline "$A" "$W/cut.json"
try "gate: random bytes" "$B/rcclx-results" gate --baseline "$W/junk.json" "$A"
try "gate: empty file" "$B/rcclx-results" gate --baseline "$A" "$W/empty.json"
try "gate: missing file" "$B/rcclx-results" gate --baseline "$A" "$W/none.json"
