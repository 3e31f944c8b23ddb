package collectives

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/rcclx-tests/rcclx-tests/numeric"
)

// FP8Flavour is how a device encodes the two FP8 types: OCP (E4M3FN and E5M2, NVIDIA and AMD gfx950) or FNUZ
// (E4M3FNUZ and E5M2FNUZ: no Inf, no -0, NaN 0x80; AMD gfx942, MI300), as RCCL reads ncclFloat8e4m3 and
// ncclFloat8e5m2 on each, and as rccl-tests generates and checks them. The GPU runtime layer tells a device's
// (gpurt.Caps.FP8); this is the data's.
type FP8Flavour int

const (
	FP8OCP FP8Flavour = iota
	FP8FNUZ
)

// EnvFP8 tells the host engine which flavour to compute in (it has no device to ask).
const EnvFP8 = "RCCLX_TESTS_FP8"

func (f FP8Flavour) String() string {
	if f == FP8FNUZ {
		return "fnuz"
	}
	return "ocp"
}

// ParseFP8Flavour reads "ocp" or "fnuz"; an empty value is OCP.
func ParseFP8Flavour(s string) (FP8Flavour, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "ocp":
		return FP8OCP, nil
	case "fnuz":
		return FP8FNUZ, nil
	}
	return FP8OCP, fmt.Errorf("%s=%q: want ocp or fnuz", EnvFP8, s)
}

// Format is the numeric format of FP8 type dt in this flavour; it panics for other types.
func (f FP8Flavour) Format(dt DType) numeric.FP8 {
	switch {
	case dt == F8E4M3 && f == FP8FNUZ:
		return numeric.E4M3FNUZ
	case dt == F8E4M3:
		return numeric.E4M3
	case dt == F8E5M2 && f == FP8FNUZ:
		return numeric.E5M2FNUZ
	case dt == F8E5M2:
		return numeric.E5M2
	}
	panic("FP8Flavour.Format: not an FP8 type: " + dt.String())
}

// FP8Reporter is a Comm whose ranks may hold FP8 data in FNUZ: it says which flavour its devices compute in.
// A Comm that is no FP8Reporter computes in OCP.
type FP8Reporter interface {
	FP8Flavour() FP8Flavour
}

// FP8FlavourOf is c's flavour.
func FP8FlavourOf(c Comm) FP8Flavour {
	if r, ok := c.(FP8Reporter); ok {
		return r.FP8Flavour()
	}
	return FP8OCP
}

// runFP8 is the flavour of the FP8 data this process generates and checks.
var runFP8 atomic.Int32

// UseFP8Flavour makes f the flavour of the FP8 data that Input and Expect generate and that EncodeFloat,
// DecodeFloat and the checks read, for the whole process: the harness sets it from each communicator it opens
// (FP8FlavourOf), before generating any data. One process drives devices of one kind.
func UseFP8Flavour(f FP8Flavour) { runFP8.Store(int32(f)) }

// RunFP8Flavour is the flavour UseFP8Flavour set (OCP until then).
func RunFP8Flavour() FP8Flavour { return FP8Flavour(runFP8.Load()) }
