package results

// ABReport is the "ab" key of a Record: an interleaved comparison of two arms
// (for example two engines or two algorithms) measured round by round.
type ABReport struct {
	Arms [2]string `json:"arms"`
	Rows []ABRow   `json:"rows"`
}

// ABRow is the comparison at one size. TimesA and TimesB are the per-round
// times (us) of arm A and arm B, paired by index. Speedup is time A / time B
// (above 1: B is faster), [Lo, Hi] its 95% confidence interval.
type ABRow struct {
	Size    int64     `json:"size"`
	TimesA  []float64 `json:"times_a"`
	TimesB  []float64 `json:"times_b"`
	Speedup float64   `json:"speedup"`
	Lo      float64   `json:"lo"`
	Hi      float64   `json:"hi"`
	Verdict string    `json:"verdict"`
}
