package results

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// missingKeys lists the key paths of want that got lacks.
func missingKeys(path string, want, got any) []string {
	var out []string
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{path + " (not an object)"}
		}
		for k, v := range w {
			gv, ok := g[k]
			if !ok {
				out = append(out, path+"."+k)
				continue
			}
			out = append(out, missingKeys(path+"."+k, v, gv)...)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{path + " (array differs)"}
		}
		for i := range w {
			out = append(out, missingKeys(path+"[]", w[i], g[i])...)
		}
	}
	return out
}

func checkRoundTrip(t *testing.T, path string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again, &got); err != nil {
		t.Fatal(err)
	}
	if miss := missingKeys("", want, got); len(miss) > 0 {
		sort.Strings(miss)
		t.Fatalf("re-marshalled record lacks keys: %v", miss)
	}
	if len(rec.Results) != 28 || rec.Results[27].Size != 1<<30 || rec.Results[0].Root != "    -1" {
		t.Fatalf("unexpected content: %d results", len(rec.Results))
	}
	if us, ok := rec.Results[0].OutOfPlace.Micros(); !ok || us != 20.5014 {
		t.Fatalf("first time = %v, %v", us, ok)
	}
}

func TestAnchorRoundTripTestdata(t *testing.T) {
	checkRoundTrip(t, filepath.Join("testdata", "nccl-tests-all_reduce.json"))
}

// TestDocsData: the result files docs/ draws its figures from load, and the JSON ones round-trip.
func TestDocsData(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "docs", "data", "*", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files under docs/data: %v", err)
	}
	for _, f := range files {
		switch filepath.Ext(f) {
		case ".json":
			checkRoundTrip(t, f)
		case ".txt", ".csv":
			rec, err := Load(f)
			if err != nil || len(rec.Results) == 0 {
				t.Errorf("%s: %v, %d rows", f, err, len(rec.Results))
			}
		}
	}
}

func TestMissingKeysDetectsLoss(t *testing.T) {
	want := map[string]any{"a": map[string]any{"b": 1.0, "c": 2.0}}
	got := map[string]any{"a": map[string]any{"b": 1.0}}
	if m := missingKeys("", want, got); len(m) != 1 || m[0] != ".a.c" {
		t.Fatalf("missingKeys = %v", m)
	}
}

func TestKeyOrderMatchesNcclTests(t *testing.T) {
	data, err := json.Marshal(&Record{})
	if err != nil {
		t.Fatal(err)
	}
	order := []string{`"version"`, `"start_time"`, `"args"`, `"env"`, `"nccl_version"`, `"config"`,
		`"results"`, `"out_of_bounds"`, `"average_bus_bandwidth"`, `"errors"`, `"end_time"`}
	last := -1
	for _, k := range order {
		i := strings.Index(string(data), k)
		if i <= last {
			t.Fatalf("key %s out of order in %s", k, data)
		}
		last = i
	}
}

func TestWriteNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.json")
	want := []string{path, path + ".0", path + ".1"}
	for i, w := range want {
		rec := &Record{Version: SchemaVersion, StartTime: string(rune('a' + i))}
		name, err := Write(path, rec)
		if err != nil {
			t.Fatal(err)
		}
		if name != w {
			t.Fatalf("write %d used %s, want %s", i, name, w)
		}
	}
	first, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if first.StartTime != "a" {
		t.Fatalf("first file was overwritten: start_time %q", first.StartTime)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Fatalf("temporary files left behind: %d entries", len(entries))
	}
}

func TestWriteEmptyListsNotNull(t *testing.T) {
	name, err := Write(filepath.Join(t.TempDir(), "empty.json"), &Record{Version: SchemaVersion})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"args": []`, `"env": []`, `"results": []`, `"errors": []`, `"devices": []`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("written record lacks %s:\n%s", key, data)
		}
	}
}

// TestPerIterKeyOrder: skipped_iterations opens the per-iteration object, as nccl-tests 2.19.6 writes it.
func TestPerIterKeyOrder(t *testing.T) {
	data, err := json.Marshal(PerIter{SkippedIterations: 3, MinUs: 1, TimesUs: []float64{1}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), `{"skipped_iterations":3,"min_us":1,`) {
		t.Errorf("per-iteration object %s", data)
	}
}
