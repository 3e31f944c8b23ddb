package results

import (
	"strconv"
	"strings"
)

// rowKey identifies a result row across runs of the same sweep. Root tells
// apart the rows of rooted collectives with -r -1 ("" where there is none);
// Ordinal, rows that repeat the same size (sizes that round to the same byte
// count).
type rowKey struct {
	Series, Type, Redop, Root string
	Size                      int64
	Ordinal                   int
}

// keyedRow is one result with its key.
type keyedRow struct {
	key rowKey
	res *Result
}

// halfNames are the names of Result's halves, out-of-place first.
var halfNames = [2]string{"out-of-place", "in-place"}

// halves returns the two halves of r in the order of halfNames.
func (r *Result) halves() [2]*Half {
	return [2]*Half{&r.OutOfPlace, &r.InPlace}
}

// seriesOf names the A/B arm (experiment name) r belongs to and the engine that produced r. The algorithm is
// not part of it: a row is the same measurement whichever algorithm ran it (a build may change the algorithm;
// the time is what the gate judges).
func seriesOf(r *Result) string {
	var parts []string
	for _, p := range []string{r.ExperimentName, r.Engine} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "/")
}

// keyRows keys the results of rec. Engine and A/B arm take part in the key
// only when the record mixes several, so a single-engine run matches a plain
// nccl-tests run.
func keyRows(rec *Record) []keyedRow {
	series := map[string]bool{}
	for i := range rec.Results {
		series[seriesOf(&rec.Results[i])] = true
	}
	seen := map[rowKey]int{}
	rows := make([]keyedRow, 0, len(rec.Results))
	for i := range rec.Results {
		r := &rec.Results[i]
		k := rowKey{Type: r.Type, Redop: r.Redop, Size: r.Size}
		if root := strings.TrimSpace(r.Root); root != "-1" {
			k.Root = root
		}
		if len(series) > 1 {
			k.Series = seriesOf(r)
		}
		base := k
		k.Ordinal = seen[base]
		seen[base]++
		rows = append(rows, keyedRow{k, r})
	}
	return rows
}

// labeler names keys as briefly as the set of keys allows: the size alone
// when every key shares series, type, reduction and root.
type labeler struct{ detailed, roots bool }

func newLabeler(keys []rowKey) labeler {
	var l labeler
	for _, k := range keys {
		if k.Series != keys[0].Series || k.Type != keys[0].Type || k.Redop != keys[0].Redop {
			l.detailed = true
		}
		l.roots = l.roots || k.Root != keys[0].Root
	}
	return l
}

func (l labeler) label(k rowKey) string {
	parts := []string{FormatSize(k.Size)}
	if l.detailed {
		parts = append(parts, k.Type, k.Redop)
		if k.Series != "" {
			parts = append([]string{k.Series}, parts...)
		}
	}
	if l.roots {
		parts = append(parts, "root "+k.Root)
	}
	if k.Ordinal > 0 {
		parts = append(parts, "#"+strconv.Itoa(k.Ordinal+1))
	}
	return strings.Join(parts, " ")
}
