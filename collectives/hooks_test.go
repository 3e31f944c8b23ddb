package collectives

import "testing"

func TestHooksFromEnv(t *testing.T) {
	h, err := HooksFromEnv(env(map[string]string{EnvSkipRank: "1", EnvCorruptRank: "0"}), 2)
	if err != nil || h.SkipRank != 1 || h.CorruptRank != 0 {
		t.Errorf("hooks %+v, %v", h, err)
	}
	if h, _ := HooksFromEnv(env(nil), 2); h.SkipRank != -1 || h.CorruptRank != -1 {
		t.Errorf("no hooks set: %+v", h)
	}
	for _, kv := range []map[string]string{{EnvSkipRank: "2"}, {EnvCorruptRank: "x"}, {EnvSkipRank: "-1"}} {
		if _, err := HooksFromEnv(env(kv), 2); err == nil {
			t.Errorf("%v accepted", kv)
		}
	}
}
