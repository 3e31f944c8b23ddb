package cli

import (
	"fmt"
	"strconv"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// sizeValue is a byte count flag: an integer with an optional K, M or G suffix (powers of 1024).
type sizeValue struct {
	p    *int64
	text string // as the user wrote it (".5K"), for messages about the flag
}

func (v *sizeValue) String() string {
	switch {
	case v.text != "":
		return v.text
	case v.p == nil:
		return "0"
	}
	return formatSize(*v.p)
}

func (v *sizeValue) Set(s string) error {
	n, err := collectives.ParseSize(s)
	if err != nil {
		return err
	}
	*v.p, v.text = n, s
	return nil
}

func (*sizeValue) Type() string { return "size" }

// formatSize spells n with the largest exact K/M/G suffix, as users write it.
func formatSize(n int64) string {
	for _, u := range []struct {
		shift  uint
		suffix string
	}{{30, "G"}, {20, "M"}, {10, "K"}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// rootValue is -r: a rank, or -1 for every root; rccl-tests' "all" is -1 too. A number is read as the other
// integer flags are (and as nccl-tests' strtol with base 0): 0x10 is 16.
type rootValue struct{ p *int }

func (v rootValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (v rootValue) Set(s string) error {
	if s == "all" {
		*v.p = -1
		return nil
	}
	n, err := strconv.ParseInt(s, 0, 32)
	if err != nil {
		return fmt.Errorf("want a rank, -1 or all (every root)")
	}
	*v.p = int(n)
	return nil
}

func (rootValue) Type() string { return "int" }

// switchValue is an on/off flag given as an integer, read as rccl-tests reads its switches (strtol, base 0,
// then a test for nonzero): 0 is off, any other integer on (stored as 1).
type switchValue struct{ p *int }

func (v switchValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (v switchValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return fmt.Errorf("want 0 (off) or 1 (on)")
	}
	*v.p = 0
	if n != 0 {
		*v.p = 1
	}
	return nil
}

func (switchValue) Type() string { return "int" }

// decimalValue is an integer flag read in base 10 only, as rccl-tests reads -q (strtol with base 10):
// 010 is ten there, not eight.
type decimalValue struct{ p *int }

func (v decimalValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (v decimalValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return fmt.Errorf("want a decimal integer")
	}
	*v.p = int(n)
	return nil
}

func (decimalValue) Type() string { return "int" }

// onceString is a string flag that may be given once (--ab): a second one would replace the first unseen.
type onceString struct {
	p   *string
	set bool
}

func (v *onceString) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v *onceString) Set(s string) error {
	if v.set {
		return fmt.Errorf("given twice (first %q): one comparison per run", *v.p)
	}
	*v.p, v.set = s, true
	return nil
}

func (*onceString) Type() string { return "string" }
