#!/usr/bin/env bash
# ncclt-compare.sh: times reported by nccl-tests and by this suite's vendor engine (same library, sizes and
# iteration counts), run alternately on one machine, and whether they agree within 1 us below 1 MiB and 3% from
# 1 MiB up.
#
#   scripts/ncclt-compare.sh NCCLT_BIN OUR_BIN OUT [ARGS...]
#
# NCCLT_BIN holds nccl-tests' <coll>_perf binaries (built from a nccl-tests source tree; none is kept in this
# repository), OUR_BIN this suite's. ARGS (default: the anchors' -b 8 -e 1G -f 2 -g 2 -w 20 -n 50) go to both.
# Each collective runs nccl-tests, ours, nccl-tests, ours, ... (NCCLT_ROUNDS pairs, default 2). The table
# compares each of our runs with the nccl-tests run before it, nccl-tests' later runs with its first (its own
# run-to-run spread), and, per size, the best time of each tool over all rounds ("best"): where calls are
# host-bound, a run's times move by several microseconds with what else the machine does, and the best of
# several runs is what each tool's own host path costs. With 4 rounds or more, "ncclt-self" compares the best
# of nccl-tests' first half of rounds with the best of its second half: how well it agrees with itself.
# NCCLT_CPUS (a taskset list such as 0-7) runs both tools on those CPUs.
set -uo pipefail
usage() { sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0"; }
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
	usage
	exit 0
fi
if [[ $# -lt 3 || ! -d $1 || ! -d $2 ]]; then
	[[ $# -ge 3 ]] && echo "ncclt-compare.sh: NCCLT_BIN ($1) and OUR_BIN ($2) must be directories" >&2
	usage >&2
	exit 2
fi
NCCLT=$1 OURS=$2 OUT=$3
shift 3
ARGS=("$@")
[[ ${#ARGS[@]} -eq 0 ]] && ARGS=(-b 8 -e 1G -f 2 -g 2 -w 20 -n 50)
ROUNDS=${NCCLT_ROUNDS:-2}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# nccl-tests moves alltoall with grouped ncclSend/ncclRecv, never ncclAlltoAll: so do we here.
export RCCLX_TESTS_VENDOR_ALLTOALL=${RCCLX_TESTS_VENDOR_ALLTOALL:-sendrecv}
mkdir -p "$OUT"

# rows FILE: size, out-of-place time, in-place time of every data row, sorted by size.
rows() { awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 13 { print $1, $6, $10 }' "$1" | sort -k1,1; }

# best FILE...: per size, the least out-of-place and the least in-place time over the runs.
best() {
	local f
	for f in "$@"; do rows "$f"; done | awk '
		!($1 in oop) || $2 < oop[$1] { oop[$1] = $2 }
		!($1 in ip) || $3 < ip[$1] { ip[$1] = $3 }
		END { for (s in oop) print s, oop[s], ip[s] }' | sort -k1,1
}

# agree A B LABEL: per size, B's times (size oop ip rows) against A's; prints the rows and a summary line.
agree() {
	join "$1" "$2" | sort -n | awk -v label="$3" '
		function ok(a, b, size) { d = b - a; if (d < 0) d = -d; return size < 1048576 ? d <= 1 : d <= 0.03 * a }
		{
			n++; good = ok($2, $4, $1) + ok($3, $5, $1); pass += good
			printf "%-16s %11d %10.2f %10.2f %+7.2f%% %10.2f %10.2f %+7.2f%% %s\n", label, $1, $2, $4,
				100 * ($4 - $2) / $2, $3, $5, 100 * ($5 - $3) / $3, good == 2 ? "ok" : "OUT"
		}
		END { printf "%-16s %d of %d times within bounds\n", label, pass, 2 * n }'
}

PIN=()
[[ -n ${NCCLT_CPUS:-} ]] && PIN=(taskset -c "$NCCLT_CPUS")
printf '%-16s %11s %10s %10s %8s %10s %10s %8s\n' "pair" "bytes" "ref_oop" "oop" "diff" "ref_ip" "ip" "diff"
for coll in ${NCCLT_COLLS:-all_reduce all_gather reduce_scatter alltoall}; do
	b=${coll}_perf
	for round in $(seq "$ROUNDS"); do
		timeout -k 10 300 "${PIN[@]}" "$NCCLT/$b" "${ARGS[@]}" >"$OUT/ncclt-$coll-$round.txt" 2>&1
		timeout -k 10 300 "${PIN[@]}" "$OURS/$b" --engine vendor "${ARGS[@]}" >"$OUT/ours-$coll-$round.txt" 2>&1
	done
	for round in $(seq "$ROUNDS"); do
		agree <(rows "$OUT/ncclt-$coll-$round.txt") <(rows "$OUT/ours-$coll-$round.txt") "$coll/ours$round"
	done
	for round in $(seq 2 "$ROUNDS"); do
		agree <(rows "$OUT/ncclt-$coll-1.txt") <(rows "$OUT/ncclt-$coll-$round.txt") "$coll/ncclt$round"
	done
	agree <(best "$OUT"/ncclt-"$coll"-*.txt) <(best "$OUT"/ours-"$coll"-*.txt) "$coll/best"
	# nccl-tests' own floor: the best of its first half of rounds against the best of its second half.
	if ((ROUNDS >= 4)); then
		half=$((ROUNDS / 2))
		agree <(best $(seq -f "$OUT/ncclt-$coll-%g.txt" 1 "$half")) \
			<(best $(seq -f "$OUT/ncclt-$coll-%g.txt" $((half + 1)) "$ROUNDS")) "$coll/ncclt-self"
	fi
done
