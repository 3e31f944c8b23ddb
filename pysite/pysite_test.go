package pysite

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestDirs(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"venv/lib/python3.12/site-packages", "home/.local/lib/python3.11/site-packages",
		"conda/lib/python3.10/dist-packages", "py/bin", "py/lib/python3.13/site-packages", "nopy/lib/python3.9/site-packages"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "py/bin/python3"), nil, 0o755)
	env := map[string]string{"VIRTUAL_ENV": filepath.Join(root, "venv"), "HOME": filepath.Join(root, "home"),
		"CONDA_PREFIX": filepath.Join(root, "conda"), "PATH": filepath.Join(root, "py/bin") + ":" + filepath.Join(root, "nopy/bin")}
	got := Dirs(func(k string) string { return env[k] }, filepath.Glob)
	for _, want := range []string{"venv/lib/python3.12/site-packages", "home/.local/lib/python3.11/site-packages",
		"conda/lib/python3.10/dist-packages", "py/lib/python3.13/site-packages"} {
		if !slices.Contains(got, filepath.Join(root, want)) {
			t.Errorf("missing %s in %q", want, got)
		}
	}
	if slices.Contains(got, filepath.Join(root, "nopy/lib/python3.9/site-packages")) {
		t.Errorf("a PATH entry without python3 must not count: %q", got)
	}
}
