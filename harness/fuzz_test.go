package harness

import (
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// FuzzSizeFlag: the size flag never panics, and what it accepts prints back to the same value.
func FuzzSizeFlag(f *testing.F) {
	for _, s := range []string{"8", "32M", "1G", "4k", "0", "12Q", "-1", "9223372036854775807", "8589934592G", "1.5M", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var n int64
		v := sizeValue{&n}
		if err := v.Set(s); err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("%q parsed to negative %d", s, n)
		}
		var back int64
		if err := (sizeValue{&back}).Set(v.String()); err != nil || back != n {
			t.Fatalf("%q -> %d -> %q -> %d (%v)", s, n, v.String(), back, err)
		}
	})
}

// FuzzArgs: any command line either parses into valid options or fails with exactly one line.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{"-b 8 -e 1G -f 2 -g 2", "-n 0", "-d all -o all", "--ab K=1,2 --ab-rounds 3",
		"-E A=B -E C", "-O both -I 1 -K 3", "--engine fake,auto", "-b", "--seed 0x10 -T 5 -z 3", "-e 9999999999999G"} {
		f.Add(s)
	}
	names := func() []string { return []string{"auto", "fake", "other"} }
	f.Fuzz(func(t *testing.T, line string) {
		a := &app{coll: collectives.AllReduce, engines: engineSource{names: names}}
		o, run, err := a.parse(strings.Fields(line))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: multi-line error %q", line, err)
			}
			return
		}
		if run && (o.NThreads < 1 || o.Iters < 1 || o.MinBytes > o.MaxBytes || len(o.dtypes) == 0 || len(o.engines) == 0) {
			t.Fatalf("%q: accepted invalid options %+v", line, o)
		}
	})
}
