//go:build rccl

package nccl

// The rccl build tag (make RCCL=1) links RCCL as rccl-tests' binaries do: librccl.so.1 is in the binary's
// DT_NEEDED, so the dynamic loader maps it before main (found through the run path make sets), ldd lists it
// (rccl-tests' roctx_perf_run.py records a run's library from that line), and the vendor engine opens that
// very library unless --lib names another: dlopen of a name already mapped returns the mapped object.
//
//go:cgo_import_dynamic _ _ "librccl.so.1"

func init() { DefaultNames = []string{"librccl.so.1", "libnccl.so.2"} }
