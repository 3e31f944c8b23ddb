package gpurt

import "unsafe"

// Graph is a captured CUgraph; GraphExec is its instantiated, launchable form.
type (
	Graph     uintptr
	GraphExec uintptr
)

const streamCaptureModeThreadLocal = 1

// BeginCapture starts recording the work enqueued on s (by this thread) into a graph.
func (s Stream) BeginCapture() error {
	return cuStreamBeginCapture.call(uintptr(s), streamCaptureModeThreadLocal)
}

// EndCapture stops recording and returns the graph.
func (s Stream) EndCapture() (Graph, error) {
	var g Graph
	err := cuStreamEndCapture.call(uintptr(s), uintptr(unsafe.Pointer(&g)))
	return g, err
}

// Instantiate makes a launchable graph.
func (g Graph) Instantiate() (GraphExec, error) {
	var x GraphExec
	err := cuGraphInstantiateWithFlags.call(uintptr(unsafe.Pointer(&x)), uintptr(g), 0)
	return x, err
}

// Destroy destroys the graph; instantiated copies stay valid.
func (g Graph) Destroy() error { return cuGraphDestroy.call(uintptr(g)) }

// Launch enqueues one replay of the graph on s.
func (x GraphExec) Launch(s Stream) error { return cuGraphLaunch.call(uintptr(x), uintptr(s)) }

// Destroy destroys the instantiated graph.
func (x GraphExec) Destroy() error { return cuGraphExecDestroy.call(uintptr(x)) }
