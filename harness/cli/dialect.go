package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rcclx-tests/rcclx-tests/harness/exit"
	"github.com/rcclx-tests/rcclx-tests/harness/plan"
)

// DriverFiles are the device files of AMD's GPU driver and of NVIDIA's: a machine with the first and not the
// second is an AMD machine, where rccl-tests is the user's tool. Tests point them elsewhere.
var DriverFiles = struct{ AMD, NVIDIA string }{"/dev/kfd", "/dev/nvidiactl"}

// EarlyDialect is the dialect of what is decided before any engine opens (a refusal of the command line,
// hypercube's rank count): --dialect, read from args even where an earlier flag is bad (the parser stops at
// the first error); else RCCLX_TESTS_DIALECT; else rccl-tests' on an AMD machine (DriverFiles), where --lib
// names an RCCL library or RCCLX_TESTS_GPU_RUNTIME is hip; else nccl-tests'.
func EarlyDialect(args []string, getenv func(string) string) string {
	flag := func(name string) string {
		v := ""
		for i, a := range args {
			if a == "--" {
				break
			}
			if x, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				v = x
			} else if a == "--"+name && i+1 < len(args) {
				v = args[i+1]
			}
		}
		return v
	}
	for _, d := range []string{flag("dialect"), getenv(plan.EnvDialect)} {
		if d == plan.DialectNCCL || d == plan.DialectRCCL {
			return d
		}
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if exists(DriverFiles.AMD) && !exists(DriverFiles.NVIDIA) ||
		strings.Contains(strings.ToLower(filepath.Base(flag("lib"))), "rccl") ||
		strings.TrimSpace(getenv("RCCLX_TESTS_GPU_RUNTIME")) == "hip" {
		return plan.DialectRCCL
	}
	return plan.DialectNCCL
}

// RCCLRefusal is rccl-tests' own line for a command line it refuses with return -1 (exit status 255): an
// unparsable -b, -e or -i, -b above -e, -Z other than csv or json, -D above 0 without -R 2. "" for any other
// error, which both dialects refuse in this suite's words (exit 1).
func RCCLRefusal(err error) string {
	var ue *exit.UsageError
	if errors.As(err, &ue) {
		return ue.RCCL
	}
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return ""
	}
	switch name := ive.GetFlag().Name; name {
	case "minbytes", "maxbytes":
		return "invalid size specified for '" + name + "'"
	case "stepbytes":
		return "invalid size specified for 'stepBytes'"
	}
	return ""
}

// rcclRefused marks a refusal of this suite's that rccl-tests also refuses, with its own line.
func rcclRefused(err error, line string) error {
	var ue *exit.UsageError
	if errors.As(err, &ue) {
		ue.RCCL = line
	}
	return err
}
