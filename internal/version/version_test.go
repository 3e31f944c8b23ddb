package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestCommit(t *testing.T) {
	got := commit([]debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-11-23T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"}})
	if got != "abc123 2026-11-23T10:00:00Z (modified)" {
		t.Errorf("commit %q", got)
	}
	if got := commit(nil); !strings.HasPrefix(got, "unknown") {
		t.Errorf("no VCS settings: %q", got)
	}
}

func TestText(t *testing.T) {
	text := Text("x_perf", "none")
	for _, want := range []string{"x_perf (rcclx-tests) " + Suite + "\n", "go:      " + runtime.Version(), "native:  none\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
}
