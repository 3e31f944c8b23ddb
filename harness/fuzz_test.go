package harness

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/engines"
	"github.com/rcclx-tests/rcclx-tests/harness/exit"
)

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
		if run && (o.NThreads < 1 || o.Iters < 1 || o.MinBytes > o.MaxBytes || len(o.DTypes) == 0 || len(o.Engines) == 0) {
			t.Fatalf("%q: accepted invalid options %+v", line, o)
		}
	})
}

// commandLineFlags are flags and values, good and bad, that FuzzCommandLine combines into whole command lines.
// Values stay cheap to run (small sizes and counts) so that every accepted line runs on the host engine.
var commandLineFlags = []struct {
	flag   string
	values []string
}{
	{"-t", []string{"1", "2", "0", "4096", "-1", "x"}},
	{"-g", []string{"1", "3", "4096", "0", "65536"}},
	{"-b", []string{"0", "8", "1K", "1.5K", "-1", "12Q", "99999999999G"}},
	{"-e", []string{"8", "1K", "3.5K", "0", "1G1"}},
	{"-i", []string{"512", "1000", "0", "1.5K"}},
	{"-f", []string{"1", "2", "4", "0", "-3"}},
	{"-n", []string{"1", "3", "0"}},
	{"-m", []string{"1", "2", "0"}},
	{"-w", []string{"0", "1", "-1"}},
	{"-N", []string{"1", "2", "-2"}},
	{"-c", []string{"0", "1", "2"}},
	{"-d", []string{"float", "int8", "f8e4m3", "all", "float7"}},
	{"-o", []string{"sum", "min", "all", "xor"}},
	{"-r", []string{"0", "-1", "7", "-9"}},
	{"-z", []string{"0", "1", "2", "3", "4"}},
	{"-a", []string{"0", "3", "9"}},
	{"-u", []string{"0", "1", "7", "-3"}},
	{"-I", []string{"0", "1", "2"}},
	{"-K", []string{"0", "1", "5"}},
	{"-G", []string{"0", "2"}},
	{"-O", []string{"0", "1", "both", "2"}},
	{"-T", []string{"0", "30", "-1"}},
	{"-C", []string{"0", "1"}},
	{"-S", []string{"0", "1"}},
	{"-M", []string{"0", "1"}},
	{"--dda", nil},
	{"--lp", nil},
	{"--lp-mode", []string{"rcclx", "scaled", "fp4"}},
	{"-E", []string{"RCCL_DDA_ENABLE=1", "RCCL_DDA_ENABLE=0", "RCCL_DDA_ENABLE=yes", "NOVALUE", "=x"}},
	{"--ab", []string{"RCCL_DDA_ENABLE=0,1", "RCCL_DDA_ENABLE=1,1", "K=1", "NCCL_ALGO=Ring,Tree"}},
	{"--ab-rounds", []string{"1", "2", "0"}},
	{"--engine", []string{"host", "cuda9", "host,host"}},
	{"--lib", []string{"libnccl.so.2"}},
	{"--seed", []string{"7", "-1"}},
	{"--algo-column", nil},
}

// FuzzCommandLine: whole command lines, several flags at once, never panic: a line is refused with exactly one
// line naming what is wrong (exit 1), or it runs on the host engine to the end without a panic.
func FuzzCommandLine(f *testing.F) {
	for i := range uint64(24) {
		f.Add(i*0x9e3779b97f4a7c15, uint8(2+i%6))
	}
	f.Fuzz(func(t *testing.T, seed uint64, n uint8) {
		rng := rand.New(rand.NewPCG(seed, uint64(n)))
		args := []string{"-e", "1K"} // the default -e, 32M, would make a line seconds long
		for range 1 + int(n)%8 {
			fl := commandLineFlags[rng.IntN(len(commandLineFlags))]
			args = append(args, fl.flag)
			if fl.values != nil {
				args = append(args, fl.values[rng.IntN(len(fl.values))])
			}
		}
		if !slices.Contains(args, "--engine") {
			args = append(args, "--engine", "host")
		}
		r := runWith(t, collectives.AllReduce, args, engineSource{names: engines.Names, open: engines.New}, nil)
		switch {
		case r.code == exit.Usage && (strings.Count(r.stderr, "\n") != 1 || r.stdout != ""):
			t.Fatalf("%q: refused with stdout %q, stderr %q", args, r.stdout, r.stderr)
		case r.code != exit.Usage && r.code != exit.OK:
			t.Fatalf("%q: exit %d, stderr %q", args, r.code, r.stderr)
		}
	})
}
