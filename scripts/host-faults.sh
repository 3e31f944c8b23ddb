#!/usr/bin/env bash
# host-faults.sh: runs every fault of docs/RELIABILITY.md that a machine without a GPU can show, with freshly
# built binaries, and writes the table's rows from what happened (first stderr line, exit code, wall time).
#
#   scripts/host-faults.sh table   print the table (markdown) to stdout
#   scripts/host-faults.sh write   regenerate docs/RELIABILITY.md (rows the script cannot run are kept)
#   scripts/host-faults.sh check   run, and fail when an exit code differs from the one docs/RELIABILITY.md gives
#
# Every command is bounded by `timeout -k 5`. Runs take about half a minute on 2 cores. Faults that would take
# a shared machine's memory (-e beyond it) or need a GPU are rows of the document the script keeps as they are.
set -u
usage() { sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0"; }
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
	usage
	exit 0
fi
mode=${1:-}
if [[ $# -ne 1 || ! $mode =~ ^(table|write|check)$ ]]; then
	usage >&2
	exit 2
fi
cd "$(dirname "$0")/.."
DOC=docs/RELIABILITY.md
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
unset RANK WORLD_SIZE OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID NCCL_TESTS_MIN_BW
B=$W/bin
CGO_ENABLED=0 go build -o "$B/" ./cmd/all_reduce_perf ./cmd/all_gather_perf ./cmd/reduce_scatter_perf \
	./cmd/alltoall_perf ./cmd/alltoallv_perf ./cmd/rcclx-results || exit 2

rows=$W/rows
: >"$rows"
# row FAULT COMMAND TEST: one table row from the last run ($rc, $took, $W/err, $W/out).
row() {
	local what
	what=$(head -1 "$W/err" | cut -c1-150 | sed 's/|/\\|/g; s/`//g')
	if [ -z "$what" ]; then
		what=$EXTRA
	elif [ -n "$EXTRA" ]; then
		what="$what ($EXTRA)"
	fi
	printf '| %s | `%s` | %s | %s | %s s | %s |\n' "$1" "$2" "$what" "$rc" "$took" "$3" >>"$rows"
	EXTRA=
}
# run CMD...: runs CMD (in $W, bounded) and sets rc and took.
run() {
	local t0
	t0=$(date +%s.%N)
	(cd "$W" && timeout -k 5 120 "$@" >"$W/out" 2>"$W/err")
	rc=$?
	took=$(printf '%.2f' "$(echo "$(date +%s.%N) - $t0" | bc)")
}
# signal SIG N CMD...: starts CMD, sends SIG N times (1 s after the header, then 0.3 s apart), and sets rc and
# took (from the last signal to the exit).
signal() {
	local sig=$1 n=$2 p t1
	shift 2
	(cd "$W" && exec "$@") >"$W/out" 2>"$W/err" &
	p=$!
	for _ in $(seq 100); do grep -q '^# Using devices' "$W/out" && break; sleep 0.1; done
	sleep 0.7
	for _ in $(seq "$n"); do
		sleep 0.3
		t1=$(date +%s.%N)
		kill -"$sig" $p
	done
	wait $p
	rc=$?
	took=$(printf '%.2f' "$(echo "$(date +%s.%N) - $t1" | bc)")
}
# killed CMD...: starts CMD as the 2 processes of one run (RANK 0 and 1 by hand), kill -9s rank 1 one second
# after rank 0's header, and sets rc (rank 0's) and took (from the kill to rank 0's exit); $W/err is rank 0's.
killed() {
	local port=$((20000 + RANDOM % 20000)) p0 p1 t1
	(cd "$W" && exec timeout -k 5 120 env RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$@") \
		>"$W/out" 2>"$W/err" &
	p0=$!
	(cd "$W" && exec env RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$@") >/dev/null 2>&1 &
	p1=$!
	disown $p1 # no "Killed" line from the shell
	for _ in $(seq 300); do grep -q '^# Using devices' "$W/out" && break; sleep 0.1; done
	sleep 1
	t1=$(date +%s.%N)
	kill -9 $p1
	wait $p0
	rc=$?
	took=$(printf '%.2f' "$(echo "$(date +%s.%N) - $t1" | bc)")
}
H=(--engine host)
EXTRA=

run "$B/all_reduce_perf" "${H[@]}" -u -3 -J r.json
row "bad flag value (every flag)" "all_reduce_perf -u -3" "TestBadInput, TestReliabilityBadInputEndToEnd, FuzzArgs, FuzzCommandLine"
run "$B/all_reduce_perf" "${H[@]}" -t 64 -g 64
row "more ranks than a process can hold" "all_reduce_perf -t 64 -g 64" "TestParseTimeChecks, FuzzCommandLine"
run env RANK=5 WORLD_SIZE=2 "$B/all_reduce_perf" "${H[@]}"
row "launcher variables that make no sense" "RANK=5 WORLD_SIZE=2 all_reduce_perf" "TestParseTimeChecks"
run env NCCL_TESTS_MIN_BW=abc "$B/all_reduce_perf" "${H[@]}"
row "bad suite variable" "NCCL_TESTS_MIN_BW=abc all_reduce_perf" "TestParseTimeChecks"
run "$B/all_reduce_perf" "${H[@]}" -E RCCL_DDA_ENABLE=yes
row "bad RCCLX switch (-E, --ab or the environment)" "all_reduce_perf -E RCCL_DDA_ENABLE=yes" "TestParseTimeChecks"
run "$B/all_reduce_perf" "${H[@]}" --dda -E RCCL_DDA_ENABLE=0
row "flags that contradict each other" "all_reduce_perf --dda -E RCCL_DDA_ENABLE=0" "TestParseTimeChecks (docs/REFERENCE.md: contradictions table)"
run "$B/all_reduce_perf" "${H[@]}" --ab RCCLX_TESTS_DELAY_US=0,00
row "A/B arms that are the same" "all_reduce_perf --ab RCCLX_TESTS_DELAY_US=0,00" "TestABArmsThatMeanTheSame, TestParseTimeChecks"
run "$B/all_reduce_perf" "${H[@]}" --ab RCCLX_TESTS_DELAY_US=0,2000 --ab RCCL_DDA_ENABLE=0,1
row "A/B given twice" "all_reduce_perf --ab RCCLX_TESTS_DELAY_US=0,2000 --ab RCCL_DDA_ENABLE=0,1" "TestBadInput"
run "$B/all_reduce_perf" "${H[@]}" --ab NCCL_TESTS_ALLTOALLV_SPREAD=0.5,1
row "A/B of a variable nothing in the run reads" "all_reduce_perf --ab NCCL_TESTS_ALLTOALLV_SPREAD=0.5,1" "TestABVariableNothingReads"
run "$B/all_reduce_perf" "${H[@]}" --ab RCCLX_TESTS_DELAY_US=0,1 --csv r.csv
row "A/B with rccl-tests' result file" "all_reduce_perf --ab RCCLX_TESTS_DELAY_US=0,1 --csv r.csv" "TestABRefusesRCCLFile"
run "$B/all_reduce_perf" "${H[@]}" -K 3 -b 8 -e 8
EXTRA="$(grep -m1 'ignored' "$W/out" | cut -c1-100)"
row "a flag without the flag it needs" "all_reduce_perf -K 3" "TestIneffectiveFlagsNoted"
run "$B/all_reduce_perf" --engine vendor --lib /nonexistent/libnccl.so.2 -b 8 -e 8
row "collective library that does not load" "all_reduce_perf --engine vendor --lib /nonexistent/libnccl.so.2" "TestReliabilityBadInputEndToEnd"
run "$B/all_reduce_perf" "${H[@]}" -b 1M -e 64M -f 2 -J /proc/r.json
row "-J file that cannot be created" "all_reduce_perf -J /proc/r.json" "TestOutputFilesBeforeTheRun"
run "$B/all_reduce_perf" "${H[@]}" -b 8 -e 8 --csv /tmp
row "--csv names a directory" "all_reduce_perf --csv /tmp" "TestOutputFilesBeforeTheRun"
touch "$W/r.json"
run "$B/all_reduce_perf" "${H[@]}" -b 8 -e 8 -J r.json
EXTRA="$(grep -m1 '^# Writing JSON' "$W/out" | sed "s|$W/||")"
row "-J file that exists" "all_reduce_perf -J r.json (r.json exists)" "TestOutputFilesNeverOverwrite"
for c in all_reduce all_gather reduce_scatter alltoall; do
	run env RCCLX_TESTS_SKIP_RANK=3 "$B/${c}_perf" "${H[@]}" -g 8 -b 1M -e 1M -T 3
	row "a rank that never arrives, $c" "RCCLX_TESTS_SKIP_RANK=3 ${c}_perf -g 8 -b 1M -e 1M -T 3" "TestReliabilityHostHooksEveryCollective (every collective and algorithm, 3 to 8 ranks)"
done
run env RCCLX_TESTS_SKIP_RANK=3 "$B/all_reduce_perf" "${H[@]}" --dda -g 8 -b 64K -e 64K -T 3
row "a rank that never arrives, DDA" "RCCLX_TESTS_SKIP_RANK=3 all_reduce_perf --dda -g 8 -b 64K -e 64K -T 3" "TestReliabilityHostHooksEveryCollective"
run env RCCLX_TESTS_CORRUPT_RANK=1 "$B/reduce_scatter_perf" "${H[@]}" -g 4 -b 1M -e 4M -f 2
EXTRA="#wrong per row: $(awk '/^ +[0-9]/ {printf "%s/%s ", $9, $13}' "$W/out")"
row "one wrong element on one rank" "RCCLX_TESTS_CORRUPT_RANK=1 reduce_scatter_perf -g 4 -b 1M -e 4M -f 2" "TestReliabilityHostHooksEveryCollective, TestPlantedWrongElement"
signal INT 1 "$B/all_reduce_perf" "${H[@]}" -g 2 -b 64M -e 64M -n 2000 -c 0 -J int.json
EXTRA="rows so far, trailer, JSON incomplete: $(grep -c '"incomplete": true' "$W"/int.json*)"
row "Ctrl-C during a long measurement" "all_reduce_perf -g 2 -b 64M -e 64M -n 2000 -J int.json; SIGINT" "TestSignalStopsBetweenIterations, TestIterGate"
signal TERM 1 env RCCLX_TESTS_SKIP_RANK=1 "$B/all_reduce_perf" "${H[@]}" -g 2 -b 8 -e 8 -J stuck.json
EXTRA="trailer, JSON incomplete: $(grep -c '"incomplete": true' "$W"/stuck.json*)"
row "SIGTERM to a run stuck without -T" "RCCLX_TESTS_SKIP_RANK=1 all_reduce_perf -g 2 -J stuck.json; SIGTERM" "TestSignalStuckRunEndsOnFirstSIGTERM"
signal INT 2 env RCCLX_TESTS_SKIP_RANK=1 "$B/all_reduce_perf" "${H[@]}" -g 2 -b 8 -e 8 -T 0 -J twice.json
EXTRA="files under twice.json: $(find "$W" -maxdepth 1 -name 'twice.json*' | wc -l)"
row "Ctrl-C twice" "RCCLX_TESTS_SKIP_RANK=1 all_reduce_perf -g 2 -J twice.json; SIGINT, SIGINT" "TestReliabilitySIGINT, TestSecondSignalLeavesNoPartialFile"
signal HUP 1 "$B/all_reduce_perf" "${H[@]}" -g 2 -b 64M -e 64M -n 2000 -c 0 -J hup.json
EXTRA="trailer, JSON incomplete: $(grep -c '"incomplete": true' "$W"/hup.json*)"
row "terminal closed or ssh connection dropped (SIGHUP)" "all_reduce_perf -g 2 -b 64M -e 64M -n 2000 -J hup.json; SIGHUP" "TestSignalHangUp"
signal TERM 1 "$B/all_reduce_perf" "${H[@]}" -g 4 -b 256M -e 256M -w 0 -n 1 -J setup.json
EXTRA="trailer, JSON incomplete: $(grep -c '"incomplete": true' "$W"/setup.json*)"
row "SIGTERM while buffers and inputs are set up" "all_reduce_perf -g 4 -b 256M -e 256M -J setup.json; SIGTERM 1 s after the header" "TestSignalDuringSetUp"
t0=$(date +%s.%N)
(cd "$W" && timeout -k 5 120 "$B/all_reduce_perf" "${H[@]}" -g 2 -b 1K -e 1M -f 2 -N 0 -J pipe.json 2>"$W/err" | head -1 >/dev/null
	exit "${PIPESTATUS[0]}")
rc=$?
took=$(printf '%.2f' "$(echo "$(date +%s.%N) - $t0" | bc)")
EXTRA="JSON rows: $(grep -c '"size"' "$W"/pipe.json*), incomplete: $(grep -c '"incomplete": true' "$W"/pipe.json*)"
row "standard output closed (a pipe to head)" "all_reduce_perf -N 0 -J pipe.json \\| head -1" "TestSignalClosedStdout"
mkfifo "$W/fifo"
run "$B/all_reduce_perf" "${H[@]}" -b 8 -e 8 -T 2 --csv fifo
row "--csv to a named pipe nobody reads" "all_reduce_perf --csv fifo -T 2" "TestRCCLFileNamedPipeWithoutReader"
port=$((20000 + RANDOM % 20000))
run env RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$B/all_reduce_perf" "${H[@]}" -b 8 -e 8 -T 3
row "a lone process of a 2-process run" "RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=p all_reduce_perf -T 3" "TestReliabilityLoneProcess, bootstrap tests"
killed "$B/all_reduce_perf" "${H[@]}" -g 1 -b 1G -e 1G -w 5 -n 1 -J lost.json
EXTRA="rank 0's JSON incomplete: $(grep -c '"incomplete": true' "$W"/lost.json*)"
row "a process killed in the middle of a 1 GiB size" "RANK=0,1 WORLD_SIZE=2 all_reduce_perf -g 1 -b 1G -e 1G -w 5 -n 1 -J lost.json; kill -9 of rank 1 1 s after the header" "cmd/all_reduce_perf TestHostEngineKilledProcessEndsLongComputation, harness TestLostProcessEndsRun, TestLostProcessLastResort, hostengine TestCancelStopsLongCall"
(ulimit -v 3000000 && run "$B/all_reduce_perf" "${H[@]}" -g 4 -b 1M -e 1G -f 32 -J as.json && {
	EXTRA="$(grep -m1 '^# Reducing' "$W/out"), JSON incomplete: $(grep -c '"incomplete": true' "$W"/as.json*)"
	row "address space limit (RLIMIT_AS)" "ulimit -v 3000000; all_reduce_perf -g 4 -b 1M -e 1G -f 32" "TestMemoryPlanUnderAddressSpaceLimit"
})
# matrix FAULT FILE SCALE COMMAND: alltoallv_perf on 4 ranks with the matrix FILE (scaled by SCALE); 1 MiB
# covers every matrix here.
matrix() {
	run env NCCL_TESTS_ALLTOALLV_MATRIX_FILE="$2" NCCL_TESTS_ALLTOALLV_MATRIX_SCALE="$3" "$B/alltoallv_perf" "${H[@]}" \
		-g 4 -b 1M -e 1M
	sed -i "s|$W/||" "$W/err"
	EXTRA=$(grep -m1 '^# alltoallv matrix' "$W/out" | sed "s|$W/||")
	row "alltoallv matrix $1" "$4" "TestAllToAllVMatrixRefused"
}
matrix "file that is no matrix" /dev/zero "" "NCCL_TESTS_ALLTOALLV_MATRIX_FILE=/dev/zero alltoallv_perf -g 4"
yes '16 16 16 16 16' | head -5 >"$W/m5"
matrix "larger than the ranks" "$W/m5" "" "NCCL_TESTS_ALLTOALLV_MATRIX_FILE=m5 (5x5) alltoallv_perf -g 4"
yes '0 0 0 0' | head -4 >"$W/m0"
matrix "of zeros" "$W/m0" "" "NCCL_TESTS_ALLTOALLV_MATRIX_FILE=m0 (4x4 zeros) alltoallv_perf -g 4"
yes '1024 1024 1024 1024' | head -4 >"$W/m1"
matrix "scaled to nothing" "$W/m1" 1e-300 "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE=1e-300 alltoallv_perf -g 4 (4x4 of 1024)"
run "$B/rcclx-results" compare /dev/zero /dev/zero
row "result file that is no result file" "rcclx-results compare /dev/zero /dev/zero" "results TestReadFileBounds"
A=$PWD/results/testdata/nccl-tests-all_reduce.json
head -c 1000 "$A" >"$W/cut.json"
run "$B/rcclx-results" gate --baseline "$A" cut.json
row "malformed result file" "rcclx-results gate --baseline a.json cut.json (truncated)" "cmd/rcclx-results TestMalformedInputs, results FuzzLoad"

# Rows of faults this script cannot produce: kept from the document as they are.
kept() { grep -E '^\| ' "$DOC" 2>/dev/null | grep -F '(not run by host-faults.sh)' || true; }

table() {
	echo '| fault | command | what happens | exit code | time | held by |'
	echo '|---|---|---|---|---|---|'
	cat "$rows"
	kept
}

case $mode in
table) table ;;
write)
	{
		sed -n '1,/^<!-- table -->$/p' "$DOC"
		table
		sed -n '/^<!-- end of table -->$/,$p' "$DOC"
	} >"$W/doc" && cp "$W/doc" "$DOC"
	;;
check)
	fail=0
	while IFS= read -r line; do
		cmd=$(echo "$line" | awk -F' \\| ' '{print $2}')
		code=$(echo "$line" | awk -F' \\| ' '{print $4}')
		want=$(grep -F -- "$cmd" "$DOC" | head -1 | awk -F' \\| ' '{print $4}')
		if [ "$code" != "$want" ]; then
			echo "exit code $code, docs/RELIABILITY.md says ${want:-nothing}: $cmd"
			fail=1
		fi
	done <"$rows"
	[ $fail = 0 ] && echo "host-faults: every exit code as documented"
	exit $fail
	;;
esac
