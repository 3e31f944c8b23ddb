package collectives

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func matrixEnv(t *testing.T, text string) func(string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "matrix")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return func(k string) string {
		if k == envVMatrix {
			return file
		}
		return ""
	}
}

// Matrix entries are read as nccl-tests reads them (strtod): hexadecimal with or without an exponent, and
// decimal fractions, each rounded down to 16 bytes; what strtod stops short of is refused.
func TestAllToAllVMatrixValues(t *testing.T) {
	c, err := AllToAllV.Prepare(matrixEnv(t, "0 0x100 0X20\n0x1p5 +48 1e2\n17.9 0x.8p6 0\n"), 3, 1024, 1024)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int64{{0, 256, 32}, {32, 48, 96}, {16, 32, 0}}
	for r := range 3 {
		k := c.Counts(1024, 3, r, Int8)
		for p := range 3 {
			if k.SendCounts[p] != want[r][p] {
				t.Errorf("rank %d sends %d bytes to %d, want %d", r, k.SendCounts[p], p, want[r][p])
			}
		}
	}
	for _, bad := range []string{"0x", "0x1_0", "1_0", "0xg", "1e", "--1"} {
		_, err := AllToAllV.Prepare(matrixEnv(t, "0 "+bad+"\n0 0\n"), 2, 1024, 1024)
		if err == nil || !strings.Contains(err.Error(), "not a number") {
			t.Errorf("entry %q: %v, want not a number", bad, err)
		}
	}
}

// Like nccl-tests, a -e below what the matrix needs is reported before -b differing from -e.
func TestAllToAllVMatrixCheckOrder(t *testing.T) {
	_, err := AllToAllV.Prepare(matrixEnv(t, "0 64\n64 0\n"), 2, 16, 32)
	if err == nil || !strings.Contains(err.Error(), "-e must be at least 64") {
		t.Errorf("-b 16 -e 32 for 64 bytes: %v", err)
	}
	_, err = AllToAllV.Prepare(matrixEnv(t, "0 64\n64 0\n"), 2, 16, 64)
	if err == nil || !strings.Contains(err.Error(), "-b and -e must be equal") {
		t.Errorf("-b 16 -e 64: %v", err)
	}
}

// A matrix is refused, naming the file, when it sends nothing (all zeros, or a scale that rounds every entry
// to 0), and when the file is no matrix: /dev/zero and /dev/urandom fail at once, read no further than their
// first line; a named pipe nobody writes to is empty, not waited on. One larger than the run is used in part,
// and the header says so (Note).
func TestAllToAllVMatrixRefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	for _, c := range []struct {
		name, text, scale, file, want string
	}{
		{"zeros", strings.Repeat("0 0 0 0\n", 4), "", "", "sends nothing"},
		{"scale 1e-300", strings.Repeat("1024 1024 1024 1024\n", 4), "1e-300", "", "sends nothing"},
		{"/dev/zero", "", "", "/dev/zero", "not a matrix"},
		{"/dev/urandom", "", "", "/dev/urandom", "/dev/urandom"},
		{"named pipe without a writer", "", "", fifo, "is empty"},
	} {
		env := matrixEnv(t, c.text)
		getenv := func(k string) string {
			switch {
			case k == envVMatrix && c.file != "":
				return c.file
			case k == envVScale:
				return c.scale
			}
			return env(k)
		}
		start := time.Now()
		_, err := AllToAllV.Prepare(getenv, 4, 1<<20, 1<<20)
		if err == nil || !strings.Contains(err.Error(), c.want) || time.Since(start) > 2*time.Second {
			t.Errorf("%s: %v after %v", c.name, err, time.Since(start))
		}
	}
	five := matrixEnv(t, strings.Repeat("16 16 16 16 16\n", 5))
	for nranks, want := range map[int]string{4: "is 5x5: its first 4 rows and columns are used", 5: ""} {
		c, err := AllToAllV.Prepare(five, nranks, 1<<20, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if note := c.Note(); (want == "" && note != "") || !strings.Contains(note, want) {
			t.Errorf("5x5 for %d ranks: note %q", nranks, note)
		}
	}
}
