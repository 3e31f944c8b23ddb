// Package version describes a binary of the suite for --version: the suite's version, the commit and Go
// version recorded in the build, and the Go modules it was built with. It loads no native library.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Suite is the suite's version, printed in every perf binary's header ("# rcclx-tests version ...").
const Suite = "0.1.0"

// modules are the dependencies --version names, when the binary contains them.
var modules = []string{
	"github.com/spf13/cobra", "github.com/ebitengine/purego", "gonum.org/v1/gonum", "gonum.org/v1/plot",
	"github.com/olekukonko/tablewriter",
}

// Text is the --version report of binary, from the build information Go embeds in every binary. native says
// which libraries a run of binary loads and where it reports their versions.
func Text(binary, native string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{GoVersion: runtime.Version()}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (rcclx-tests) %s\n", binary, Suite)
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		fmt.Fprintf(&b, "module:  %s %s\n", bi.Main.Path, v)
	}
	fmt.Fprintf(&b, "commit:  %s\n", commit(bi.Settings))
	fmt.Fprintf(&b, "go:      %s %s/%s\n", bi.GoVersion, runtime.GOOS, runtime.GOARCH)
	var deps []string
	for _, want := range modules {
		for _, d := range bi.Deps {
			if d.Path == want {
				deps = append(deps, d.Path[strings.LastIndex(d.Path, "/")+1:]+" "+d.Version)
			}
		}
	}
	if len(deps) > 0 {
		fmt.Fprintf(&b, "modules: %s\n", strings.Join(deps, ", "))
	}
	fmt.Fprintf(&b, "native:  %s\n", native)
	return b.String()
}

// commit is the VCS revision, time and modified flag Go stamps into binaries built from a checkout.
func commit(settings []debug.BuildSetting) string {
	var rev, when, modified string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "unknown (built without version control information, e.g. go build -buildvcs=false or go install)"
	}
	out := rev
	if when != "" {
		out += " " + when
	}
	if modified == "true" {
		out += " (modified)"
	}
	return out
}
