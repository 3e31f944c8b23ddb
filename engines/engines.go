// Package engines maps the names --engine accepts to the engines that implement them.
package engines

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/gpuengine"
	"github.com/rcclx-tests/rcclx-tests/hostengine"
	"github.com/rcclx-tests/rcclx-tests/vendorengine"
)

// Auto is the --engine value that picks the first available engine among the auto candidates.
const Auto = "auto"

// entry is one engine --engine can name.
type entry struct {
	name string
	new  func() collectives.Engine
	auto bool // a candidate of --engine auto
}

// registry lists the engines; --engine auto tries its candidates in this order. Adding an engine is one line.
var registry = []entry{
	{"gpu", gpuengine.New, true},
	{"host", hostengine.New, true},
	{"vendor", vendorengine.New, false},
}

// Names lists the values --engine accepts.
func Names() []string {
	out := []string{Auto}
	for _, e := range registry {
		out = append(out, e.name)
	}
	return out
}

// New creates the engine called name; "auto" is the first candidate whose Prober reports it available (an
// engine that cannot probe counts as available).
func New(name string) (collectives.Engine, error) {
	if name != Auto {
		for _, e := range registry {
			if e.name == name {
				return e.new(), nil
			}
		}
		return nil, fmt.Errorf("unknown engine %q (want one of %s)", name, strings.Join(Names(), ", "))
	}
	_, eng, err := pick()
	return eng, err
}

// pick is the auto candidate New("auto") creates: the first available one.
func pick() (entry, collectives.Engine, error) {
	var reasons []string
	for _, e := range registry {
		if !e.auto {
			continue
		}
		eng := e.new()
		p, ok := eng.(collectives.Prober)
		if !ok {
			return e, eng, nil
		}
		err := p.Available()
		if err == nil {
			return e, eng, nil
		}
		reasons = append(reasons, e.name+": "+err.Error())
	}
	return entry{}, nil, errors.New("no engine available: " + strings.Join(reasons, "; "))
}

// Readers lists the engines that --engine name may create when every one of them reads no environment variable
// outside collectives.Variables (ok true): then a name outside the registry reads nothing. "auto" is the
// candidate New would pick (every candidate where none is available: the run then fails to open one). ok is
// false for an engine whose library may read variables of its own (vendor).
func Readers(name string) (readers []string, ok bool) {
	if name == Auto {
		if e, _, err := pick(); err == nil {
			name = e.name
		}
	}
	for _, e := range registry {
		if e.name == name || (name == Auto && e.auto) {
			if e.name != collectives.EngineHost && e.name != collectives.EngineGPU {
				return nil, false
			}
			readers = append(readers, e.name)
		}
	}
	return readers, len(readers) > 0
}
