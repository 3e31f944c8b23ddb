package collectives

import (
	"strings"
	"testing"
)

// The anchors (real nccl-tests on 2 ranks, float) fix how sizes map to counts.
func TestCountsMatchNcclTests(t *testing.T) {
	cases := []struct {
		c                 *Collective
		size              int64
		nranks            int
		wantBytes, wantCt int64
	}{
		{AllReduce, 8, 2, 8, 2},
		{AllReduce, 1073741824, 2, 1073741824, 268435456},
		{AllGather, 8, 2, 0, 0},
		{AllGather, 16, 2, 0, 0},
		{AllGather, 32, 2, 32, 4},
		{AllGather, 1073741824, 2, 1073741824, 134217728},
		{AllToAll, 32, 2, 32, 4},
		{ReduceScatter, 32, 2, 32, 4},
		{ReduceScatter, 48, 2, 32, 4},
	}
	for _, tc := range cases {
		k := tc.c.Counts(tc.size, tc.nranks, 1, Float)
		if got := tc.c.Bytes(k, Float); got != tc.wantBytes || k.Param != tc.wantCt {
			t.Errorf("%s %d B on %d ranks: size %d count %d, want %d %d", tc.c.Name, tc.size, tc.nranks, got,
				k.Param, tc.wantBytes, tc.wantCt)
		}
	}
}

func TestBandwidthMatchesAnchor(t *testing.T) {
	// all_gather 1 GiB, 2 ranks, 1981.22 us -> algbw 541.96, busbw 270.98 in the anchor.
	k := AllGather.Counts(1<<30, 2, 0, Float)
	sec := 1981.22e-6
	if a, b := AllGather.AlgBW(k, Float, sec), AllGather.BusBW(k, Float, sec, 2); !near(a, 541.96) || !near(b, 270.98) {
		t.Errorf("algbw %.2f busbw %.2f, want 541.96 270.98", a, b)
	}
	k = AllReduce.Counts(1<<30, 2, 0, Float)
	if b := AllReduce.BusBW(k, Float, 3259.70e-6, 2); !near(b, 329.40) {
		t.Errorf("all_reduce busbw %.2f, want 329.40", b)
	}
	if f := AllReduce.BusFactor(8); f != 1.75 {
		t.Errorf("all_reduce bus factor at 8 ranks %v, want 1.75", f)
	}
}

func near(a, b float64) bool { return a > b-0.006 && a < b+0.006 }

func TestInPlaceOffsets(t *testing.T) {
	k := AllGather.Counts(1024, 4, 3, Float)
	if k.SendInPlace != 3*k.Param || k.RecvInPlace != 0 {
		t.Errorf("all_gather in-place offsets %+v", k)
	}
	k = ReduceScatter.Counts(1024, 4, 2, Float)
	if k.RecvInPlace != 2*k.Param || k.SendInPlace != 0 {
		t.Errorf("reduce_scatter in-place offsets %+v", k)
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "8": 8, "4K": 4096, "128M": 128 << 20, "1G": 1 << 30, "2g": 2 << 30, "16MB": 16 << 20,
		"1.5M": 3 << 19, "1.5": 1, "0.5K": 512, ".25K": 256, "2.0G": 2 << 30} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "1T", "K", "99999999999G", "0x10", "1.5.5", "-0.5", "1e3", "NaN", "Inf", "9e99", "99999999999.5G"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) should fail", bad)
		}
	}
	for in, want := range map[string]DType{"float": Float, "fp8_e4m3": F8E4M3, "f8e5m2": F8E5M2, "bfloat16": BFloat16, "half": Half} {
		if got, err := ParseDTypes(in); err != nil || len(got) != 1 || got[0] != want {
			t.Errorf("ParseDTypes(%q) = %v, %v", in, got, err)
		}
	}
	if all, _ := ParseDTypes("all"); len(all) != 12 {
		t.Errorf("-d all gives %d types, want 12", len(all))
	}
	if ops, _ := ParseOps("all"); len(ops) != 6 {
		t.Errorf("-o all gives %d ops, want 6", len(ops))
	}
	if _, err := ParseDTypes("float17"); err == nil {
		t.Error("ParseDTypes(float17) should fail")
	}
	if _, err := ParseOps("xor"); err == nil {
		t.Error("ParseOps(xor) should fail")
	}
}

// Devices follow the ranks (wrapping when ranks share GPUs), or start at NCCL_TESTS_DEVICE's and must exist.
func TestConfigDevice(t *testing.T) {
	byRank := Config{}
	if d, err := byRank.Device(1, 2, 1, 8); d != 3 || err != nil {
		t.Errorf("process 1 of 2 ranks, rank 1: device %d, %v; want 3", d, err)
	}
	if d, err := byRank.Device(0, 8, 5, 2); d != 1 || err != nil {
		t.Errorf("8 ranks on 2 devices, rank 5: device %d, %v; want 1", d, err)
	}
	pinned := Config{PinDevices: true, FirstDevice: 2}
	if d, err := pinned.Device(3, 2, 1, 4); d != 3 || err != nil {
		t.Errorf("pinned at 2, rank 1: device %d, %v; want 3 whatever the process", d, err)
	}
	if _, err := pinned.Device(0, 2, 1, 3); err == nil || !strings.Contains(err.Error(), "NCCL_TESTS_DEVICE=2") {
		t.Errorf("device 3 of 3: %v", err)
	}
}
