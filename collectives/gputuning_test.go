package collectives

import (
	"strings"
	"testing"
)

func TestGPUTuningFromEnv(t *testing.T) {
	env := map[string]string{"RCCLX_TESTS_GPU_RING_BLOCKS": "8"}
	getenv := func(k string) string { return env[k] }
	want := DefaultGPUTuning
	want.RingBlocks = 8
	if tu, err := GPUTuningFromEnv(getenv); err != nil || tu != want {
		t.Errorf("tuning %+v, %v", tu, err)
	}
	env["RCCLX_TESTS_GPU_LAUNCHERS"] = "off"
	if tu, err := GPUTuningFromEnv(getenv); err != nil || tu.Launchers {
		t.Errorf("RCCLX_TESTS_GPU_LAUNCHERS=off: %+v, %v", tu, err)
	}
	for _, x := range []struct {
		value string
		n     int
		want  int64
	}{{"", 2, 16 << 20}, {"", 4, 48 << 20}, {"", 8, 112 << 20}, {"off", 4, -1}, {"0", 4, 0}, {"32M", 2, 32 << 20},
		{"32M", 8, 32 << 20}} {
		env["RCCLX_TESTS_GPU_CE_BYTES"] = x.value
		if tu, err := GPUTuningFromEnv(getenv); err != nil || tu.CEMin(x.n) != x.want {
			t.Errorf("RCCLX_TESTS_GPU_CE_BYTES=%q at %d ranks: %d, want %d (%v)", x.value, x.n, tu.CEMin(x.n), x.want, err)
		}
	}
	for k, v := range map[string]string{"RCCLX_TESTS_GPU_RING_BLOCKS": "x", "RCCLX_TESTS_GPU_LP_BLOCKS": "0",
		"RCCLX_TESTS_GPU_CE_BYTES": "-5", "RCCLX_TESTS_GPU_LL_BYTES": "x", "RCCLX_TESTS_GPU_LAUNCHERS": "yes",
		"RCCLX_TESTS_GPU_CE_CHUNK": "off"} {
		_, err := GPUTuningFromEnv(func(key string) string {
			if key == k {
				return v
			}
			return ""
		})
		if err == nil || !strings.HasPrefix(err.Error(), k+"=") {
			t.Errorf("%s=%s: %v", k, v, err)
		}
		if CheckVariable(EngineGPU, k, v) == nil {
			t.Errorf("the registry accepts %s=%s", k, v)
		}
	}
}

// The registry reads the tuning's values with the engine's reader: two spellings of one setting are the same
// arm, two settings are not.
func TestGPUTuningVariablesInRegistry(t *testing.T) {
	for _, x := range []struct {
		name, a, b string
		same       bool
	}{
		{"RCCLX_TESTS_GPU_LP_BLOCKS", "", "128", false}, // unset, a pushing all_gather takes every SM
		{"RCCLX_TESTS_GPU_LP_BLOCKS", "64", "064", true},
		{"RCCLX_TESTS_GPU_RING_BLOCKS", "", "128", false},
		{"RCCLX_TESTS_GPU_CE_BYTES", "8M", "8388608", true},
		{"RCCLX_TESTS_GPU_CE_BYTES", "", "16M", false}, // unset, 16M for each peer
		{"RCCLX_TESTS_GPU_CE_BYTES", "off", "0", false},
		{"RCCLX_TESTS_GPU_LL_BYTES", "1024K", "", true},
		{"RCCLX_TESTS_GPU_LAUNCHERS", "on", "1", true},
		{"RCCLX_TESTS_GPU_LAUNCHERS", "", "off", false},
	} {
		v, ok := LookupVariable(x.name)
		if !ok || !v.ReadBy(EngineGPU) || v.ReadBy(EngineHost) {
			t.Fatalf("%s: %+v", x.name, v)
		}
		if v.Same(x.a, x.b) != x.same {
			t.Errorf("%s: Same(%q, %q) = %v", x.name, x.a, x.b, !x.same)
		}
	}
	if v, _ := LookupVariable("RCCLX_TESTS_GPU_LL_BYTES"); v.ReadFor(AllGather) || !v.ReadFor(AllReduce) {
		t.Errorf("RCCLX_TESTS_GPU_LL_BYTES changes all_reduce only")
	}
}
