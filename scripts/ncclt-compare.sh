#!/usr/bin/env bash
# ncclt-compare.sh: times reported by nccl-tests and by this suite's vendor engine (same library, sizes and
# iteration counts), run alternately on one machine, and whether they agree within issue 4's bounds: 1 us below
# 1 MiB, 3% from 1 MiB up.
#
#   scripts/ncclt-compare.sh NCCLT_BIN OUR_BIN OUT [ARGS...]
#
# NCCLT_BIN holds nccl-tests' <coll>_perf binaries (built from a nccl-tests source tree; none is kept in this
# repository), OUR_BIN this suite's. ARGS (default: the anchors' -b 8 -e 1G -f 2 -g 2 -w 20 -n 50) go to both.
# Each collective runs nccl-tests, ours, nccl-tests, ours; the table compares each of our runs with the
# nccl-tests run before it, and nccl-tests' second run with its first (its own run-to-run spread).
set -uo pipefail
NCCLT=$1 OURS=$2 OUT=$3
shift 3
ARGS=("$@")
[[ ${#ARGS[@]} -eq 0 ]] && ARGS=(-b 8 -e 1G -f 2 -g 2 -w 20 -n 50)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT"

# rows FILE: size, out-of-place time, in-place time of every data row.
rows() { awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 13 { print $1, $6, $10 }' "$1"; }

# agree A B LABEL: per size, B's times against A's; prints the rows and a summary line.
agree() {
	join <(rows "$1" | sort -k1,1) <(rows "$2" | sort -k1,1) | sort -n | awk -v label="$3" '
		function ok(a, b, size) { d = b - a; if (d < 0) d = -d; return size < 1048576 ? d <= 1 : d <= 0.03 * a }
		{
			n++; good = ok($2, $4, $1) + ok($3, $5, $1); pass += good
			printf "%-16s %11d %10.2f %10.2f %+7.2f%% %10.2f %10.2f %+7.2f%% %s\n", label, $1, $2, $4,
				100 * ($4 - $2) / $2, $3, $5, 100 * ($5 - $3) / $3, good == 2 ? "ok" : "OUT"
		}
		END { printf "%-16s %d of %d times within bounds\n", label, pass, 2 * n }'
}

printf '%-16s %11s %10s %10s %8s %10s %10s %8s\n' "pair" "bytes" "ref_oop" "oop" "diff" "ref_ip" "ip" "diff"
for coll in ${NCCLT_COLLS:-all_reduce all_gather reduce_scatter alltoall}; do
	b=${coll}_perf
	for round in 1 2; do
		timeout -k 10 300 "$NCCLT/$b" "${ARGS[@]}" >"$OUT/ncclt-$coll-$round.txt" 2>&1
		timeout -k 10 300 "$OURS/$b" --engine vendor "${ARGS[@]}" >"$OUT/ours-$coll-$round.txt" 2>&1
	done
	for round in 1 2; do
		agree "$OUT/ncclt-$coll-$round.txt" "$OUT/ours-$coll-$round.txt" "$coll/ours$round"
	done
	agree "$OUT/ncclt-$coll-1.txt" "$OUT/ncclt-$coll-2.txt" "$coll/ncclt2"
done
