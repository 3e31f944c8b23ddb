package rcclxtests_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDevelopingListsEveryGPUCheckStep: docs/DEVELOPING.md's list of scripts/gpu-check.sh steps is the script's, every one
// in the order of its -h text.
func TestDevelopingListsEveryGPUCheckStep(t *testing.T) {
	script, err := os.ReadFile("scripts/gpu-check.sh")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("docs/DEVELOPING.md")
	if err != nil {
		t.Fatal(err)
	}
	var help []string // step names in the order of the -h text
	for _, m := range regexp.MustCompile(`(?m)^# (?:Steps:|      ) ([a-z0-9]+) `).FindAllSubmatch(script, -1) {
		help = append(help, string(m[1]))
	}
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^step_([a-z0-9]+)\(\) \{`).FindAllSubmatch(script, -1) {
		defined[string(m[1])] = true
	}
	if len(help) != len(defined) {
		t.Fatalf("gpu-check.sh -h names %v, the script defines %v", help, defined)
	}
	for _, s := range help {
		if !defined[s] {
			t.Errorf("gpu-check.sh -h names %s, which the script does not define", s)
		}
	}
	m := regexp.MustCompile("`scripts/gpu-check.sh STEP...` \\(steps: ([a-z0-9 \\n]+);").FindSubmatch(readme)
	if m == nil {
		t.Fatal("docs/DEVELOPING.md lists no gpu-check.sh steps")
	}
	if got, want := strings.Fields(string(m[1])), help; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("docs/DEVELOPING.md lists steps %v, gpu-check.sh -h %v", got, want)
	}
}
