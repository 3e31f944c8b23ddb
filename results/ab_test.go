package results

import (
	"fmt"
	"strconv"

	"bytes"
	"gonum.org/v1/gonum/stat"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// abRounds draws n interleaved rounds of two arms whose true speedup (time
// A / time B) is speedup, with a shared per-round drift and private noise.
func abRounds(n int, speedup, noise float64) (a, b []float64) {
	rng := newRand()
	for i := 0; i < n; i++ {
		drift := 1 + 0.2*rng.Float64()
		a = append(a, 100*drift*(1+noise*rng.NormFloat64()))
		b = append(b, 100/speedup*drift*(1+noise*rng.NormFloat64()))
	}
	return a, b
}

func TestAnalyzeAB(t *testing.T) {
	fa, fb := abRounds(30, 1.5, 0.01)
	sa, sb := abRounds(30, 0.8, 0.01)
	ea, eb := abRounds(30, 1, 0)
	rows := AnalyzeAB([]int64{1024, 2048, 4096, 8192}, [][]float64{fa, sa, ea, {5}}, [][]float64{fb, sb, eb, {4}})
	want := []string{VerdictFaster, VerdictSlower, VerdictNoise, VerdictTooFewAB}
	for i, r := range rows {
		if r.Verdict != want[i] {
			t.Errorf("size %d: verdict %q, want %q (%+v)", r.Size, r.Verdict, want[i], r)
		}
		if r.Lo > r.Speedup || r.Hi < r.Speedup {
			t.Errorf("size %d: speedup %v outside [%v, %v]", r.Size, r.Speedup, r.Lo, r.Hi)
		}
	}
	// The shared drift cancels in the paired ratios: the estimate is close to the truth and the interval
	// narrow. (Whether a 95% interval holds the truth is a coin with 5% odds: not asserted, or the test flakes.)
	if r := rows[0]; math.Abs(r.Speedup-1.5) > 0.02 || r.Hi-r.Lo > 0.05 {
		t.Errorf("speedup %v in [%v, %v]: want within 0.02 of 1.5 and a narrow interval", r.Speedup, r.Lo, r.Hi)
	}
	// Swapping the arms inverts the geometric-mean speedup and its interval.
	if s := AnalyzeAB([]int64{1024}, [][]float64{fb}, [][]float64{fa})[0]; math.Abs(s.Speedup*rows[0].Speedup-1) > 1e-12 ||
		math.Abs(s.Lo*rows[0].Hi-1) > 1e-12 {
		t.Errorf("swapped arms: %+v vs %+v", s, rows[0])
	}
	if r := rows[3]; r.Speedup != 1.25 || math.IsNaN(r.Lo) {
		t.Errorf("single round: %+v", r)
	}
}

func TestRenderABAndRecordKey(t *testing.T) {
	a, b := abRounds(10, 1.2, 0) // noiseless: the table must show 1.200x
	rows := AnalyzeAB([]int64{1 << 20}, [][]float64{a}, [][]float64{b})
	var out bytes.Buffer
	if err := RenderAB(&out, "nccl", "dda", "time", rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"nccl us", "dda us", "1MiB", VerdictFaster, "1.2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	rec := synthRecord(newRand(), 2, 1, 0, 0)
	rec.AB = &ABReport{Arms: [2]string{"nccl", "dda"}, Rows: rows}
	path, err := Write(filepath.Join(t.TempDir(), "ab.json"), rec)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.AB == nil || back.AB.Arms[1] != "dda" || len(back.AB.Rows[0].TimesB) != 10 || back.AB.Rows[0].TimesB[9] != b[9] {
		t.Fatalf("ab key did not round-trip: %+v", back.AB)
	}
}

// TestABColumnsAgreeWithSpeedup: rounds where the arms' means point one way and the paired ratios the other
// (one slow round of A dominates A's mean while B is slower in every other round). The table's arm columns are
// the geometric means over the paired rounds, whose ratio is the speedup: they cannot disagree with it.
func TestABColumnsAgreeWithSpeedup(t *testing.T) {
	a := []float64{100, 100, 100, 100, 400}
	b := []float64{150, 150, 150, 150, 160}
	if stat.Mean(a, nil) <= stat.Mean(b, nil) {
		t.Fatal("synthetic data: A's mean must be the larger")
	}
	r := AnalyzeAB([]int64{4096}, [][]float64{a}, [][]float64{b})[0]
	if r.Speedup >= 1 {
		t.Fatalf("speedup %v: B is slower in 4 of 5 paired rounds, the geometric mean of ratios must be below 1", r.Speedup)
	}
	if math.Abs(r.TimeA/r.TimeB-r.Speedup) > 1e-12 || r.TimeA >= r.TimeB {
		t.Errorf("columns %v and %v do not give the speedup %v", r.TimeA, r.TimeB, r.Speedup)
	}
	var out bytes.Buffer
	if err := RenderAB(&out, "A", "B", "cputime", []ABRow{r}); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	cells := strings.Fields(strings.NewReplacer("|", " ").Replace(strings.Split(table, "\n")[3]))
	colA, _ := strconv.ParseFloat(cells[1], 64)
	colB, _ := strconv.ParseFloat(cells[2], 64)
	if !strings.Contains(table, "A cputime us (geomean)") || !(colA < colB) ||
		strings.Contains(table, fmt.Sprintf("%.2f", stat.Mean(a, nil))) {
		t.Errorf("the table's arm columns must be the geometric means (A %v < B %v):\n%s", colA, colB, table)
	}
	// Unpaired or non-positive rounds are left out of the columns as of the ratios.
	r = AnalyzeAB([]int64{1}, [][]float64{{100, 0, 50}}, [][]float64{{50, 10}})[0]
	if math.Abs(r.TimeA-100) > 1e-9 || math.Abs(r.TimeB-50) > 1e-9 || math.Abs(r.Speedup-2) > 1e-12 {
		t.Errorf("unpaired rounds counted: %+v", r)
	}
	if r = AnalyzeAB([]int64{1}, [][]float64{{0}}, [][]float64{{1}})[0]; r.TimeA != 0 || r.Verdict != VerdictTooFewAB {
		t.Errorf("no paired round: %+v", r)
	}
}

// TestABSameAlgorithmVerdict: a row whose arms ran the same algorithm says so before its verdict; a row whose
// arms differ, or whose engine does not name its algorithm, shows the verdict alone.
func TestABSameAlgorithmVerdict(t *testing.T) {
	a, b := abRounds(5, 1, 0)
	rows := AnalyzeAB([]int64{8, 16, 32}, [][]float64{a, a, a}, [][]float64{b, b, b})
	rows[0].AlgorithmA, rows[0].AlgorithmB = "ring", "ring"
	rows[1].AlgorithmA, rows[1].AlgorithmB = "ring", "dda_flat"
	want := []string{"same algorithm (ring): " + VerdictNoise, VerdictNoise, VerdictNoise}
	var out bytes.Buffer
	if err := RenderAB(&out, "A", "B", "time", rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	for i, r := range rows {
		if r.VerdictText() != want[i] || !strings.HasSuffix(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(lines[3+i]), "|")), want[i]) {
			t.Errorf("row %d: verdict %q, want %q\n%s", i, r.VerdictText(), want[i], out.String())
		}
	}
	if !strings.Contains(lines[3+1], "| "+VerdictNoise+" |") && !strings.HasSuffix(strings.TrimSpace(lines[3+1]), " "+VerdictNoise+" |") {
		t.Errorf("row with different algorithms:\n%s", out.String())
	}
}

// TestABSeries: rows split by type, reduction and root in the order each first appears, labelled by what
// differs between the series of a panel; rows written before they named these keys are one unlabelled series;
// more series than a panel holds split into a panel per type.
func TestABSeries(t *testing.T) {
	row := func(size int64, dtype, redop string, root int) ABRow {
		return ABRow{Size: size, Type: dtype, Redop: redop, Root: root}
	}
	series := func(rows ...ABRow) string {
		var out []string
		for _, p := range (&ABReport{Rows: rows}).Panels() {
			if p.Title != "" {
				out = append(out, "["+p.Title+"]")
			}
			for _, s := range p.Series {
				var sizes []string
				for _, r := range s.Rows {
					sizes = append(sizes, strconv.FormatInt(r.Size, 10))
				}
				out = append(out, fmt.Sprintf("%q: %s", s.Label, strings.Join(sizes, " ")))
			}
		}
		return strings.Join(out, "; ")
	}
	// More series than a panel holds, of two types: a panel per type, labelled without it.
	var many []ABRow
	var want []string
	for _, dt := range []string{"float", "half"} {
		want = append(want, "["+dt+"]")
		for root := range MaxPanelLines {
			many = append(many, row(8, dt, "sum", root))
			want = append(want, fmt.Sprintf("%q: 8", fmt.Sprintf("root %d", root)))
		}
	}
	for _, c := range []struct {
		rows []ABRow
		want string
	}{
		{[]ABRow{row(8, "float", "sum", -1), row(16, "float", "sum", -1), row(8, "float", "max", -1),
			row(16, "float", "max", -1)}, `"sum": 8 16; "max": 8 16`},
		{[]ABRow{row(8, "float", "sum", -1), row(8, "half", "max", -1)}, `"float sum": 8; "half max": 8`},
		{[]ABRow{row(8, "float", "none", 0), row(8, "float", "none", 1), row(16, "float", "none", 1)},
			`"root 0": 8; "root 1": 8 16`},
		{[]ABRow{{Size: 8}, {Size: 16}}, `"": 8 16`},
		{many, strings.Join(want, "; ")},
	} {
		if got := series(c.rows...); got != c.want {
			t.Errorf("series %s, want %s", got, c.want)
		}
	}
}
