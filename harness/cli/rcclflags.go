package cli

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rcclx-tests/rcclx-tests/harness/plan"
	"github.com/rcclx-tests/rcclx-tests/results"
)

// rccl-tests' flags, and nccl-tests' -x, -D and -V. Where rccl-tests gives a letter of nccl-tests' (or of
// this suite) another meaning, the value's form decides: -y 0|1 is nccl-tests' stream_null, a word is
// rccl-tests' memory type; -u N is nccl-tests' unalign, a list of hex masks rccl-tests' cumask; -E KEY=VALUE
// is this suite's environment override, anything else rccl-tests' rotating tensor switch.

// registerRCCLFlags defines the flags above that have no letter of nccl-tests'.
func registerRCCLFlags(fs *pflag.FlagSet, o *plan.Options) {
	r := &o.RCCL
	r.CTAPolicy = -1
	fs.VarP(wordValue{&r.MemoryType, slices.Sorted(maps.Keys(plan.MemoryTypes)), "want coarse, fine, host or managed", "type"},
		"memory_type", "Y", "rccl-tests' buffer memory: coarse, fine, host or managed")
	fs.Var(cumaskValue{&r.Cumask}, "cumask", "rccl-tests' AMD compute-unit masks d0,d1,d2,d3 (hex; also -u with a list)")
	fs.VarP(decimalValue{&r.DelayUs}, "delay_inout_place", "q",
		"microseconds to wait after the out-of-place half (decimal, as rccl-tests reads it)")
	fs.IntVarP(&r.CacheFlush, "cache_flush", "F", 0, "flush the instruction cache every N timed iterations (rccl-tests; 0 or less = never)")
	fs.Var(switchValue{&r.RotatingTensor}, "rotating_tensor",
		"1: alternate timed iterations between buffers 192 MiB apart (rccl-tests; any nonzero is 1; also -E 0|1)")
	// Any word is taken here and checked with the other flags (rcclChecks), where rccl-tests checks it.
	fs.VarP(wordValue{p: &r.Format, kind: "csv|json"},
		"rccl_output_format", "Z", "rccl-tests' result file format: csv or json (with -X)")
	fs.StringVarP(&r.File, "rccl_output_file", "X", "", "write rccl-tests' csv or json result file at this path, created or emptied (-Z; json without it)")
	fs.Var(csvAliasValue{r}, "csv", "write rccl-tests' CSV to this file: the same as -Z csv -X FILE")
	fs.VarP(switchValue{&r.AlgoColumns}, "output_algo_proto_channels", "A",
		"append algorithm, protocol and channel columns (0/1; any nonzero is 1, as rccl-tests)")
	fs.IntVarP(&r.CTAPolicy, "cta_policy", "x", -1, "ncclConfig CTA policy: 0 default, 1 efficiency, 2 zero (-1 = not set)")
	fs.IntVarP(&r.DeviceImpl, "device_implementation", "D", 0, "NCCL device-API implementation (needs -R 2 above 0)")
	fs.IntVarP(&r.DeviceCTAs, "device_cta_count", "V", 16, "CTAs of the device-API implementation (1-128)")
	fs.IntVar(&o.Memory, "memory_report", 0, "rccl-tests' name of -M")
}

// validateRCCL checks what the flags' own parsers cannot: ranges and combinations.
func validateRCCL(o *plan.Options, fs *pflag.FlagSet) error {
	r := &o.RCCL
	for _, c := range []intRule{
		{"delay_inout_place", r.DelayUs, 0, 1 << 30}, {"cta_policy", r.CTAPolicy, -1, 2}, {"device_implementation", r.DeviceImpl, 0, 1 << 20},
		{"device_cta_count", r.DeviceCTAs, 1, 128},
	} {
		if c.v < c.min || c.v > c.max {
			return BadValue(fs, c.name, fmt.Sprintf("must be between %d and %d", c.min, c.max))
		}
	}
	if r.CSVAlias && (fs.Changed("rccl_output_file") || fs.Changed("rccl_output_format")) {
		return BadValue(fs, "csv", "is -Z csv -X FILE: cannot be combined with -X or -Z json")
	}
	if r.File != "" && r.Format == "" {
		r.Format = results.RCCLJSON // rccl-tests' reporter writes JSON unless -Z says csv
	}
	return nil
}

// streamNullValue is -y: nccl-tests' stream_null (an integer) or, given a word, rccl-tests' memory type.
type streamNullValue struct {
	null *int
	mem  *string
}

func (v streamNullValue) String() string {
	if v.null == nil {
		return "0"
	}
	return strconv.Itoa(*v.null)
}

func (v streamNullValue) Set(s string) error {
	if n, err := strconv.ParseInt(s, 0, 32); err == nil {
		*v.null = int(n)
		return nil
	}
	if _, ok := plan.MemoryTypes[s]; ok {
		*v.mem = s
		return nil
	}
	return fmt.Errorf("want 0 or 1 (stream_null), or rccl-tests' memory type coarse, fine, host or managed")
}

func (streamNullValue) Type() string { return "int" }

// unalignValue is -u: nccl-tests' unalign (an integer) or, given anything else, rccl-tests' cumask list.
type unalignValue struct {
	unalign *int
	cumask  *string
}

func (v unalignValue) String() string {
	if v.unalign == nil {
		return "0"
	}
	return strconv.Itoa(*v.unalign)
}

func (v unalignValue) Set(s string) error {
	if n, err := strconv.ParseInt(s, 0, 32); err == nil {
		*v.unalign = int(n)
		return nil
	}
	if err := (cumaskValue{v.cumask}).Set(s); err != nil {
		return fmt.Errorf("want an element count (unalign), or rccl-tests' cumask list of up to 4 hex masks")
	}
	return nil
}

func (unalignValue) Type() string { return "int" }

// cumaskValue is --cumask: up to four comma-separated hex masks.
type cumaskValue struct{ p *string }

func (v cumaskValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v cumaskValue) Set(s string) error {
	masks := strings.Split(s, ",")
	if len(masks) > 4 {
		return fmt.Errorf("want up to 4 hex masks d0,d1,d2,d3")
	}
	for _, m := range masks {
		if _, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(m), "0x"), 16, 32); err != nil {
			return fmt.Errorf("want up to 4 hex masks d0,d1,d2,d3")
		}
	}
	*v.p = s
	return nil
}

func (cumaskValue) Type() string { return "masks" }

// envValue is -E: KEY=VALUE is this suite's environment override (repeatable); an integer is rccl-tests'
// rotating tensor switch (nonzero is on, as there).
type envValue struct {
	env      *[]string
	rotating *int
}

func (v envValue) String() string {
	if v.env == nil || len(*v.env) == 0 {
		return "" // --help then says "(default none)" once
	}
	return "[" + strings.Join(*v.env, ",") + "]"
}

func (v envValue) Set(s string) error {
	if strings.Contains(s, "=") {
		*v.env = append(*v.env, s)
		return nil
	}
	if err := (switchValue{v.rotating}).Set(s); err != nil {
		return fmt.Errorf("want KEY=VALUE (environment override), or 0/1 (rccl-tests' rotating tensor; any nonzero is 1)")
	}
	return nil
}

func (envValue) Type() string { return "KEY=VALUE" }

// wordValue is a flag that takes one of a few words (-Y); want is the message for any other. Without words it
// takes any.
type wordValue struct {
	p          *string
	words      []string
	want, kind string
}

func (v wordValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v wordValue) Set(s string) error {
	if v.words != nil && !slices.Contains(v.words, s) {
		return errors.New(v.want)
	}
	*v.p = s
	return nil
}

func (v wordValue) Type() string { return v.kind }

// csvAliasValue is --csv FILE: -Z csv -X FILE.
type csvAliasValue struct{ r *plan.RCCLOptions }

func (v csvAliasValue) String() string {
	if v.r == nil || !v.r.CSVAlias {
		return ""
	}
	return v.r.File
}

func (v csvAliasValue) Set(s string) error {
	if s == "" {
		return fmt.Errorf("want a file name")
	}
	v.r.File, v.r.Format, v.r.CSVAlias = s, results.RCCLCSV, true
	return nil
}

func (csvAliasValue) Type() string { return "string" }
