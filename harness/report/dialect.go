package report

import (
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// TypeName is the type column: rccl-tests spells FP8 fp8_e4m3 and fp8_e5m2.
func TypeName(o *plan.Options, dt collectives.DType) string {
	if o.RCCLDialect {
		return results.RCCLTypeName(dt.String())
	}
	return dt.String()
}

// RedopName is the redop column in the dialect's spelling.
func RedopName(o *plan.Options, c *collectives.Collective, op collectives.Op) string {
	if o.RCCLDialect {
		return results.RCCLRedopName(c.RedOpName(op))
	}
	return c.RedOpName(op)
}

// BlockingLine is the header's -z line ("" for -z 0).
func BlockingLine(o *plan.Options) string {
	if o.RCCLDialect {
		switch {
		case o.Blocking == 1:
			return "# Blocking Enabled: wait for completion and barrier after each collective "
		case o.Blocking > 1:
			return "# Blocking Enabled: wait for completion after each collective (no barrier) "
		}
		return ""
	}
	switch o.Blocking {
	case 1:
		return "# Blocking Enabled: wait and barrier after each inner iteration (-m) "
	case 2:
		return "# Blocking Enabled: wait after each inner iteration (-m), no barrier "
	case 3:
		return "# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes barrier "
	}
	return ""
}
