package results

import (
	"bytes"
	"strings"
	"testing"
)

// A rooted collective's -r -1 rows (nccl-tests' layout) and hypercube's empty redop column.
const rootedText = `# Collective test starting: reduce_perf
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
        1024           256     float     sum       0    10.00    0.10    0.10       0    10.00    0.10    0.10       0
        1024           256     float     sum       1    20.00    0.05    0.05       0    20.00    0.05    0.05       0
# Out of bounds values : 0 OK
`

const hypercubeText = `# Collective test starting: hypercube_perf
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
        4096           256     float              -1    13.17    0.23    0.23       0    21.97    0.14    0.14       0
# Out of bounds values : 0 OK
`

func TestRootsAreRowsOfTheirOwn(t *testing.T) {
	rec, err := Parse("reduce.txt", []byte(rootedText))
	if err != nil || len(rec.Results) != 2 || rec.Results[1].Root != "     1" {
		t.Fatalf("%v %+v", err, rec)
	}
	var out bytes.Buffer
	if err := Compare(&out, []Run{{"a", rec}, {"b", rec}}, CompareOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1KiB root 0", "1KiB root 1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no row %q in\n%s", want, out.String())
		}
	}
}

func TestEmptyRedopColumn(t *testing.T) {
	rec, err := Parse("hypercube.txt", []byte(hypercubeText))
	if err != nil || len(rec.Results) != 1 {
		t.Fatalf("%v %+v", err, rec)
	}
	r := rec.Results[0]
	if r.Redop != "" || r.Root != "    -1" || r.Size != 4096 || r.Count != 256 || r.OutOfPlace.BusBW != 0.23 {
		t.Errorf("row %+v", r)
	}
	if f := RowFields("        1024           256     float     sum      -1"); len(f) != 5 || f[3] != "sum" {
		t.Errorf("RowFields of a full row: %q", f)
	}
}
