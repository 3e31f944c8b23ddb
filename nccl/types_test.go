package nccl

import (
	"bytes"
	"errors"
	"testing"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

func TestDataTypeValues(t *testing.T) {
	want := map[string]DataType{"int8": 0, "uint8": 1, "int32": 2, "uint32": 3, "int64": 4, "uint64": 5,
		"half": 6, "float": 7, "double": 8, "bfloat16": 9, "f8e4m3": 10, "f8e5m2": 11}
	for _, d := range collectives.AllDTypes() {
		got, err := DataTypeOf(d, 22803)
		if err != nil || got != want[d.String()] {
			t.Errorf("DataTypeOf(%s) = %d, %v; want %d", d, got, err, want[d.String()])
		}
	}
	if len(want) != len(collectives.AllDTypes()) {
		t.Errorf("the suite has %d types, the table %d", len(collectives.AllDTypes()), len(want))
	}
}

func TestDataTypeVersions(t *testing.T) {
	cases := []struct {
		d       collectives.DType
		version int
		ok      bool
	}{
		{collectives.F8E4M3, 22303, false}, {collectives.F8E4M3, 22400, true}, {collectives.F8E5M2, 22304, false},
		{collectives.BFloat16, 20804, false}, {collectives.BFloat16, 21000, true}, {collectives.Float, 2408, true},
	}
	for _, c := range cases {
		_, err := DataTypeOf(c.d, c.version)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, collectives.ErrUnsupported)) {
			t.Errorf("DataTypeOf(%s, %d) error = %v, want ok=%v", c.d, c.version, err, c.ok)
		}
	}
}

func TestRedOpValues(t *testing.T) {
	want := map[collectives.Op]RedOp{collectives.Sum: 0, collectives.Prod: 1, collectives.Max: 2, collectives.Min: 3,
		collectives.Avg: 4}
	for o, w := range want {
		if got, err := RedOpOf(o, 22803); err != nil || got != w {
			t.Errorf("RedOpOf(%s) = %d, %v; want %d", o, got, err, w)
		}
	}
	if _, err := RedOpOf(collectives.Avg, 20804); !errors.Is(err, collectives.ErrUnsupported) {
		t.Errorf("avg on NCCL 2.8: %v", err)
	}
	if _, err := RedOpOf(collectives.MulSum, 22803); err == nil {
		t.Error("MulSum mapped to a built-in operation")
	}
}

func TestScalar(t *testing.T) {
	cases := []struct {
		f    collectives.FP8Flavour
		d    collectives.DType
		v    int
		want []byte
	}{
		{0, collectives.Int8, 2, []byte{2}}, {0, collectives.Uint32, 2, []byte{2, 0, 0, 0}},
		{0, collectives.Int64, -1, bytes.Repeat([]byte{0xff}, 8)},
		{0, collectives.Half, 2, []byte{0x00, 0x40}}, {0, collectives.BFloat16, 2, []byte{0x00, 0x40}},
		{0, collectives.Float, 2, []byte{0, 0, 0, 0x40}}, {0, collectives.Double, 1, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}},
		{0, collectives.F8E4M3, 2, []byte{0x40}}, {0, collectives.F8E5M2, 2, []byte{0x40}}, {0, collectives.F8E4M3, 1, []byte{0x38}},
		{collectives.FP8FNUZ, collectives.F8E4M3, 1, []byte{0x40}}, {collectives.FP8FNUZ, collectives.F8E5M2, 2, []byte{0x44}},
	}
	for _, c := range cases {
		if got := Scalar(c.d, c.f, c.v); !bytes.Equal(got, c.want) {
			t.Errorf("Scalar(%s, %s, %d) = % x, want % x", c.d, c.f, c.v, got, c.want)
		}
	}
}

func TestVersionString(t *testing.T) {
	for code, want := range map[int]string{22803: "2.28.3", 21003: "2.10.3", 2804: "2.8.4", 22400: "2.24.0"} {
		if got := VersionString(code); got != want {
			t.Errorf("VersionString(%d) = %q, want %q", code, got, want)
		}
	}
}
