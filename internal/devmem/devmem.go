// Package devmem helps the engines' GPU tests check that device memory comes back: a Meter reads the free
// memory of the first n devices, and Check compares a reading with a baseline.
package devmem

import (
	"testing"

	"github.com/rcclx-tests/rcclx-tests/gpurt"
)

// Meter holds a retained primary context per device (released when the test ends).
type Meter struct {
	t    testing.TB
	ctxs []*gpurt.Context
}

// New retains the primary contexts of devices 0..n-1.
func New(t testing.TB, n int) *Meter {
	t.Helper()
	m := &Meter{t: t}
	for d := range n {
		ctx, err := gpurt.Device(d).RetainPrimaryContext()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ctx.Release() })
		m.ctxs = append(m.ctxs, ctx)
	}
	return m
}

// Free reads each device's free memory in bytes.
func (m *Meter) Free() []int64 {
	m.t.Helper()
	out := make([]int64, len(m.ctxs))
	for d, ctx := range m.ctxs {
		if err := ctx.SetCurrent(); err != nil {
			m.t.Fatal(err)
		}
		free, _, err := gpurt.MemGetInfo()
		if err != nil {
			m.t.Fatal(err)
		}
		out[d] = free
	}
	return out
}

// Check logs every device's free memory after what against base, and fails the test where more than
// tolerance bytes did not come back.
func (m *Meter) Check(what string, base []int64, tolerance int64) {
	m.t.Helper()
	now := m.Free()
	for d := range base {
		lost := base[d] - now[d]
		m.t.Logf("device %d after %s: %d MiB free, %+d MiB against the baseline", d, what, now[d]>>20, -lost>>20)
		if lost > tolerance {
			m.t.Errorf("device %d: %d MiB not given back after %s (tolerance %d MiB)", d, lost>>20, what, tolerance>>20)
		}
	}
}
