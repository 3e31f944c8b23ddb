package results

import (
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// confidence is the two-sided level of every interval in this package.
const confidence = 0.95

// tQuantile is the two-sided critical value of Student's t with df degrees
// of freedom.
func tQuantile(df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - (1-confidence)/2)
}

// meanInterval returns the mean of xs and its t-based confidence interval;
// ok is false with fewer than two values.
func meanInterval(xs []float64) (mean, lo, hi float64, ok bool) {
	if len(xs) == 0 {
		return 0, 0, 0, false
	}
	if len(xs) == 1 {
		return xs[0], xs[0], xs[0], false
	}
	mean, sd := stat.MeanStdDev(xs, nil)
	half := tQuantile(float64(len(xs)-1)) * sd / math.Sqrt(float64(len(xs)))
	return mean, mean - half, mean + half, true
}

// diffInterval is the Welch interval of mean(b) - mean(a). A side with one
// value counts as exact; ok is false when neither side has two values.
func diffInterval(a, b []float64) (diff, lo, hi float64, ok bool) {
	ma, va, dfa := meanVarOfMean(a)
	mb, vb, dfb := meanVarOfMean(b)
	diff = mb - ma
	if dfa == 0 && dfb == 0 {
		return diff, diff, diff, false
	}
	se := math.Sqrt(va + vb)
	if se == 0 {
		return diff, diff, diff, true
	}
	// Welch-Satterthwaite degrees of freedom.
	den := 0.0
	if dfa > 0 {
		den += va * va / dfa
	}
	if dfb > 0 {
		den += vb * vb / dfb
	}
	half := tQuantile((va+vb)*(va+vb)/den) * se
	return diff, diff - half, diff + half, true
}

// meanVarOfMean returns the mean of xs, the variance of that mean and its
// degrees of freedom (0 for fewer than two values).
func meanVarOfMean(xs []float64) (mean, v, df float64) {
	if len(xs) < 2 {
		return stat.Mean(xs, nil), 0, 0
	}
	m, variance := stat.MeanVariance(xs, nil)
	return m, variance / float64(len(xs)), float64(len(xs) - 1)
}

// SpeedupEstimator names the one estimator of a speedup (or a change) in this package, which compare, gate,
// the A/B table and the A/B plot all print: the geometric mean of one side's times over the other's, which is
// the geometric mean of the per-cycle (or per-round) time ratios where the samples pair up.
const SpeedupEstimator = "geomean of per-cycle time ratios"

// Speedup is how many times faster times b are than times a, by SpeedupEstimator: the geometric mean of a's
// times above 0 over that of b's. ok is false where a side has none.
func Speedup(a, b []float64) (speedup float64, ok bool) {
	ga, gb := GeoMean(a), GeoMean(b)
	if ga == 0 || gb == 0 {
		return 0, false
	}
	return ga / gb, true
}

// GeoMean is the geometric mean of the values of xs above 0 (0 where there is none).
func GeoMean(xs []float64) float64 {
	l := logs(xs)
	if len(l) == 0 {
		return 0
	}
	return math.Exp(stat.Mean(l, nil))
}

// logs is the natural logarithm of each value of xs above 0.
func logs(xs []float64) []float64 {
	var out []float64
	for _, x := range xs {
		if x > 0 {
			out = append(out, math.Log(x))
		}
	}
	return out
}
