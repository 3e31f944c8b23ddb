package bootstrap

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// slurmNodeLists are the variables that name the step's nodes, in Slurm's hostlist syntax: the step's own
// (srun sets it) before the allocation's.
var slurmNodeLists = []string{"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}

// slurmRendezvous is where the tasks of an srun step on several nodes meet without help: the step's first
// node, where srun's block and cyclic distributions both place task 0, on a port derived from the job and step
// ids, so that two steps (or jobs) sharing a node pick different ports without talking. "" with no error on a
// single node (Rendezvous's 127.0.0.1 and the same port serve) and when no node list is set. Rank 0 checks that
// it runs on that first node (SLURMD_NODENAME): an arbitrary distribution may place it elsewhere.
func slurmRendezvous(getenv func(string) string, l Launch) (string, error) {
	if l.RunID == "" || l.LocalSize == l.Size {
		return "", nil
	}
	port := strconv.Itoa(derivedPort(l.RunID))
	for _, key := range slurmNodeLists {
		list := getenv(key)
		if list == "" {
			continue
		}
		hosts, err := hostlist(list, 1)
		if err != nil {
			return "", fmt.Errorf("bootstrap: %s=%q: %v", key, list, err)
		}
		if me := getenv("SLURMD_NODENAME"); l.Rank == 0 && me != "" && me != hosts[0] {
			return "", fmt.Errorf("bootstrap: srun placed rank 0 on %s, not on the step's first node %s (%s=%q), "+
				"where the other tasks look for it: use a block or cyclic distribution, or set MASTER_ADDR and "+
				"MASTER_PORT", me, hosts[0], key, list)
		}
		return net.JoinHostPort(hosts[0], port), nil
	}
	return "", nil
}

// hostlist expands a node list in Slurm's hostlist syntax, up to limit names: comma-separated entries, each a
// name with bracketed lists of numbers and ranges, zero-padded to the width of the range's first bound
// ("n[01-03,7],gpu5" is n01 n02 n03 n7 gpu5; "r[1-2]n[1-2]" is every combination, the last bracket fastest).
func hostlist(s string, limit int) ([]string, error) {
	var out []string
	for _, entry := range splitTop(s) {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, errors.New("an empty host name")
		}
		parts, err := entryParts(entry)
		if err != nil {
			return nil, err
		}
		out = expand(out, "", parts, limit)
		if len(out) >= limit {
			break
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no host names")
	}
	return out, nil
}

// splitTop splits s at the commas outside brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// entryParts cuts one entry into its literal text and bracket groups: each part is the list of strings it can
// stand for (one, for literal text).
func entryParts(entry string) ([][]string, error) {
	var parts [][]string
	for entry != "" {
		open := strings.IndexAny(entry, "[]")
		if open < 0 {
			parts = append(parts, []string{entry})
			break
		}
		if entry[open] == ']' {
			return nil, fmt.Errorf("%q has a ']' without its '['", entry)
		}
		if open > 0 {
			parts = append(parts, []string{entry[:open]})
		}
		end := strings.IndexAny(entry[open+1:], "[]")
		if end < 0 || entry[open+1+end] != ']' {
			return nil, fmt.Errorf("%q has a '[' without its ']'", entry)
		}
		nums, err := bracket(entry[open+1 : open+1+end])
		if err != nil {
			return nil, err
		}
		parts = append(parts, nums)
		entry = entry[open+2+end:]
	}
	return parts, nil
}

// maxRange bounds one range of a node list, so that a typo cannot ask for billions of names.
const maxRange = 1 << 20

// bracket expands the inside of one bracket group: "01-03,7" is 01 02 03 7.
func bracket(s string) ([]string, error) {
	var out []string
	for _, r := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, errA := strconv.Atoi(lo)
		b, errB := strconv.Atoi(hi)
		if lo == "" || hi == "" || strings.Trim(lo+hi, "0123456789") != "" || errA != nil || errB != nil {
			return nil, fmt.Errorf("[%s]: %q is not a number or a range of numbers", s, r)
		}
		if a > b || b-a >= maxRange {
			return nil, fmt.Errorf("[%s]: %q is not a range from low to high of at most %d numbers", s, r, maxRange)
		}
		for n := a; n <= b; n++ {
			out = append(out, fmt.Sprintf("%0*d", len(lo), n))
		}
	}
	return out, nil
}

// expand appends prefix followed by every combination of parts to out, until out holds limit names.
func expand(out []string, prefix string, parts [][]string, limit int) []string {
	if len(parts) == 0 {
		return append(out, prefix)
	}
	for _, p := range parts[0] {
		if len(out) >= limit {
			break
		}
		out = expand(out, prefix+p, parts[1:], limit)
	}
	return out
}
