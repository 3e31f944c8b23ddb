// Package engines maps the names --engine accepts to the engines that implement them, and decides what
// --engine auto measures.
package engines

import (
	"fmt"
	"strings"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpuengine"
	"github.com/rcclx-tests/rcclx-tests/gpurt"
	"github.com/rcclx-tests/rcclx-tests/hostengine"
	"github.com/rcclx-tests/rcclx-tests/nccl"
	"github.com/rcclx-tests/rcclx-tests/vendorengine"
)

// Auto is the --engine value that measures what nccl-tests and rccl-tests measure where it can (see Choose).
const Auto = "auto"

// entry is one engine --engine can name.
type entry struct {
	name string
	new  func() collectives.Engine
}

// registry lists the engines. Adding an engine is one line.
var registry = []entry{
	{collectives.EngineGPU, gpuengine.New},
	{collectives.EngineHost, hostengine.New},
	{collectives.EngineVendor, vendorengine.New},
}

// What Choose asks of the machine; tests stand other answers in.
var (
	findGPUs    = gpurt.FindGPUs
	openLibrary = func(lib string) error { _, err := nccl.Open(lib); return err }
	gpuUsable   = func() error { return available(gpuengine.New()) }
)

// Names lists the values --engine accepts.
func Names() []string {
	out := []string{Auto}
	for _, e := range registry {
		out = append(out, e.name)
	}
	return out
}

// New creates the engine called name; "auto" is the engine Choose picks for the default library.
func New(name string) (collectives.Engine, error) {
	if name == Auto {
		eng, _, err := Choose("")
		return eng, err
	}
	return byName(name)
}

func byName(name string) (collectives.Engine, error) {
	for _, e := range registry {
		if e.name == name {
			return e.new(), nil
		}
	}
	return nil, fmt.Errorf("unknown engine %q (want one of %s)", name, strings.Join(Names(), ", "))
}

// Choose is --engine auto: the vendor engine where an NCCL-ABI library (lib, or nccl.DefaultNames where lib is
// "") loads and a GPU is seen; else, on a GPU, this suite's own kernels (the gpu engine); else the host engine.
// note, when not empty, is the one line that says why it is not the library (what was looked for, and where).
// A GPU that neither the library nor the gpu engine can use is a *collectives.LibraryError naming both reasons:
// a run on the CPU would not measure what the user has.
func Choose(lib string) (eng collectives.Engine, note string, err error) {
	gpus := findGPUs()
	if gpus.Count == 0 {
		note = "no GPU found (" + gpus.Tried + "): measuring this suite's host engine on the CPU (--engine host)"
		eng, err = byName(collectives.EngineHost)
		return eng, note, err
	}
	libErr := openLibrary(lib)
	if libErr == nil {
		eng, err = byName(collectives.EngineVendor)
		return eng, "", err
	}
	seen := fmt.Sprintf("%d %s GPU(s)", gpus.Count, gpus.Runtime)
	if err := gpuUsable(); err != nil {
		return nil, "", &collectives.LibraryError{Err: fmt.Errorf("%s seen, but no engine can use them: vendor: %v; "+
			"gpu: %v (--engine host measures the CPU instead)", seen, libErr, err)}
	}
	note = "no NCCL-ABI library found (" + libErr.Error() + "): measuring this suite's own kernels on " + seen +
		" (--engine gpu), not NCCL or RCCL"
	eng, err = byName(collectives.EngineGPU)
	return eng, note, err
}

// available is the engine's probe (nil for an engine that cannot probe).
func available(e collectives.Engine) error {
	if p, ok := e.(collectives.Prober); ok {
		return p.Available()
	}
	return nil
}

// Readers lists the engines that --engine name may create when every one of them reads no environment variable
// outside collectives.Variables (ok true): then a name outside the registry reads nothing. "auto" is the engine
// Choose picks for the default library (where it picks none, the run fails before it reads anything). ok is
// false for an engine whose library may read variables of its own (vendor).
func Readers(name string) (readers []string, ok bool) {
	if name == Auto {
		e, _, err := Choose("")
		if err != nil {
			return nil, false
		}
		name = e.Name()
	}
	if name != collectives.EngineHost && name != collectives.EngineGPU {
		return nil, false
	}
	return []string{name}, true
}
