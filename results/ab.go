package results

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// ABReport is the "ab" key of a Record: an interleaved comparison of two arms
// (for example two engines or two algorithms) measured round by round.
type ABReport struct {
	Arms [2]string `json:"arms"`
	// Pids are the process ids of each arm's worker processes, in rank order: each arm runs in processes of
	// its own, so that a variable a library reads once per process differs between the arms.
	Pids [2][]int `json:"pids,omitempty"`
	Rows []ABRow  `json:"rows"`
	// VariableRead says whether anything in the run reads the arms' variable (false: both arms ran the same);
	// Library is the library file that was searched for its name (vendor engine).
	VariableRead *bool  `json:"variable_read,omitempty"`
	Library      string `json:"library,omitempty"`
}

// ABRow is the comparison at one size of one type, reduction and root (-1
// where the collective has none), as the Results rows name them. TimesA and
// TimesB are the per-round times (us) of arm A and arm B, paired by index;
// TimeA and TimeB their geometric means over the rounds paired in the ratios.
// Speedup is time A / time B (above 1: B is faster), so that Speedup = TimeA /
// TimeB exactly; [Lo, Hi] is its 95% confidence interval. AlgorithmA and
// AlgorithmB name the algorithm each arm ran, where the engine knows it.
type ABRow struct {
	Size       int64     `json:"size"`
	Type       string    `json:"type,omitempty"`
	Redop      string    `json:"redop,omitempty"`
	Root       int       `json:"root"`
	TimesA     []float64 `json:"times_a"`
	TimesB     []float64 `json:"times_b"`
	TimeA      float64   `json:"time_a"`
	TimeB      float64   `json:"time_b"`
	Speedup    float64   `json:"speedup"`
	Lo         float64   `json:"lo"`
	Hi         float64   `json:"hi"`
	Verdict    string    `json:"verdict"`
	AlgorithmA string    `json:"algorithm_a,omitempty"`
	AlgorithmB string    `json:"algorithm_b,omitempty"`
}

// Verdicts of an ABRow: arm B against arm A.
const (
	VerdictFaster   = "faster"         // B is faster: the interval lies above 1
	VerdictSlower   = "slower"         // B is slower: the interval lies below 1
	VerdictNoise    = "within noise"   // the interval contains 1
	VerdictTooFewAB = "too few rounds" // fewer than two paired rounds
)

// AnalyzeAB compares arm B with arm A at each size from their per-round
// times, a[i] and b[i] for sizes[i], measured interleaved (ABAB...) so that
// round j of A and round j of B saw the same conditions. The speedup is the
// geometric mean of the paired ratios tA_j/tB_j, its 95% interval the
// Student-t interval of the mean log ratio, exponentiated: always positive,
// and swapping the arms inverts speedup and interval exactly. Rounds without
// a positive time on both arms are left out of the ratios and of the arms'
// geometric means, which are 0 when no round is left.
func AnalyzeAB(sizes []int64, a, b [][]float64) []ABRow {
	rows := make([]ABRow, len(sizes))
	for i, size := range sizes {
		row := ABRow{Size: size, TimesA: roundsAt(a, i), TimesB: roundsAt(b, i)}
		var ratios, pairedA, pairedB []float64
		for j := 0; j < len(row.TimesA) && j < len(row.TimesB); j++ {
			if row.TimesA[j] > 0 && row.TimesB[j] > 0 {
				pairedA, pairedB = append(pairedA, row.TimesA[j]), append(pairedB, row.TimesB[j])
				ratios = append(ratios, math.Log(row.TimesA[j]/row.TimesB[j]))
			}
		}
		if len(ratios) > 0 {
			row.TimeA, row.TimeB = GeoMean(pairedA), GeoMean(pairedB)
		}
		_, lo, hi, ok := meanInterval(ratios)
		row.Speedup, _ = Speedup(pairedA, pairedB)
		row.Lo, row.Hi = math.Exp(lo), math.Exp(hi)
		switch {
		case !ok:
			row.Verdict = VerdictTooFewAB
		case row.Lo > 1:
			row.Verdict = VerdictFaster
		case row.Hi < 1:
			row.Verdict = VerdictSlower
		default:
			row.Verdict = VerdictNoise
		}
		rows[i] = row
	}
	return rows
}

func roundsAt(times [][]float64, i int) []float64 {
	if i < len(times) {
		return times[i]
	}
	return nil
}

// ABSeries are the rows of one type, reduction and root, labelled by what
// tells them from the other series of their panel ("", "max", "float sum", "root 1").
type ABSeries struct {
	Label string
	Rows  []ABRow
}

// Panels splits the report's rows into series by type, reduction and root, in
// the order each first appears, and the series into panels as Aggregate does.
// Records written before rows named these are one series.
func (r *ABReport) Panels() []Panel[ABSeries] {
	type key struct {
		dtype, redop string
		root         int
	}
	var keys []key
	rows := map[key][]ABRow{}
	for _, row := range r.Rows {
		k := key{row.Type, row.Redop, row.Root}
		if _, seen := rows[k]; !seen {
			keys = append(keys, k)
		}
		rows[k] = append(rows[k], row)
	}
	titles, groups := splitByType(keys, func(k key) string { return k.dtype })
	panels := make([]Panel[ABSeries], len(groups))
	for g, group := range groups {
		var dtypes, redops, roots bool
		for _, k := range group {
			dtypes, redops, roots = dtypes || k.dtype != group[0].dtype, redops || k.redop != group[0].redop,
				roots || k.root != group[0].root
		}
		panels[g].Title = titles[g]
		for _, k := range group {
			var label []string
			if dtypes {
				label = append(label, k.dtype)
			}
			if redops {
				label = append(label, k.redop)
			}
			if roots {
				label = append(label, fmt.Sprintf("root %d", k.root))
			}
			panels[g].Series = append(panels[g].Series, ABSeries{Label: strings.Join(label, " "), Rows: rows[k]})
		}
	}
	return panels
}

// SameAlgorithm is the algorithm both arms ran, or "" when they differ or the
// engine does not say.
func (r ABRow) SameAlgorithm() string {
	if r.AlgorithmA != r.AlgorithmB {
		return ""
	}
	return r.AlgorithmA
}

// VerdictText is the verdict column: the verdict, preceded by a note when
// both arms ran the same algorithm (a difference then comes from something
// else than the algorithm choice: channels, protocol, a planted delay).
func (r ABRow) VerdictText() string {
	if a := r.SameAlgorithm(); a != "" {
		return "same algorithm (" + a + "): " + r.Verdict
	}
	return r.Verdict
}

// RenderAB prints rows as a table: the geometric mean time of each arm over
// the paired rounds, the speedup of B over A (SpeedupEstimator: the ratio of
// the two columns) with its interval, and the verdict. timeName is what the times are: "time", or "cputime" (-C 1, the
// host's enqueue time).
func RenderAB(w io.Writer, armA, armB, timeName string, rows []ABRow) error {
	unit := " us (geomean)"
	if timeName != "time" {
		unit = " " + timeName + unit
	}
	t := newTable(w)
	t.Header("size", armA+unit, armB+unit, "rounds", "speedup A/B ("+SpeedupEstimator+")", "95% CI", "verdict")
	for _, r := range rows {
		if err := t.Append(FormatSize(r.Size), fmtTime(r.TimeA), fmtTime(r.TimeB),
			fmt.Sprint(min(len(r.TimesA), len(r.TimesB))), fmt.Sprintf("%.3fx", r.Speedup),
			fmt.Sprintf("%.3f..%.3f", r.Lo, r.Hi), r.VerdictText()); err != nil {
			return err
		}
	}
	return t.Render()
}

func fmtTime(us float64) string {
	if us <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", us)
}
