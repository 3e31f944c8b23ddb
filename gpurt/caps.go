package gpurt

import (
	"bytes"
	"fmt"
	"strings"
	"unsafe"
)

// Layouts of hipDeviceProp_t for its one field without an attribute, gcnArchName (char[256]): the versioned
// hipGetDevicePropertiesR0600 (ROCm 6 and later) fills the R0600 layout, the unversioned hipGetDeviceProperties
// the R0000 one in every ROCm (checked against the installed header by a test).
const (
	propsR0600Size     = 1472
	propsR0600ArchName = 1160
	propsR0000Size     = 792
	propsR0000ArchName = 396
	archNameLen        = 256
	propsBuffer        = 8192 // larger than any layout, so a newer one cannot write past it
)

// Arch returns the architecture the device's kernels compile for: "sm_90" on CUDA, the full gcnArchName on HIP
// (e.g. "gfx942:sramecc+:xnack-").
func (d Device) Arch() (string, error) {
	if Loaded() != HIP {
		major, minor, err := d.ComputeCapability()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("sm_%d%d", major, minor), nil
	}
	buf := make([]byte, propsBuffer)
	if err := hipGetDeviceProperties.call(uintptr(unsafe.Pointer(&buf[0])), uintptr(d)); err != nil {
		return "", err
	}
	off := propsR0000ArchName
	if hipGetDeviceProperties.name == "hipGetDevicePropertiesR0600" {
		off = propsR0600ArchName
	}
	name := buf[off : off+archNameLen]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	if len(name) == 0 {
		return "", fmt.Errorf("gpu runtime: %s gives device %d no gcnArchName", hipGetDeviceProperties.name, d)
	}
	return string(name), nil
}

// ArchBase is an arch without its feature flags: "gfx942" for "gfx942:sramecc+:xnack-".
func ArchBase(arch string) string {
	base, _, _ := strings.Cut(arch, ":")
	return base
}

// FP8Format is the encoding of the 8-bit float types (E4M3, E5M2) that a GPU's native FP8 and its vendor's
// collective library use.
type FP8Format int

const (
	FP8OCP  FP8Format = iota // OCP 8-bit floats: NVIDIA, AMD gfx950
	FP8FNUZ                  // the FNUZ variants (no negative zero, NaN 0x80, bias one more): AMD gfx942
)

func (f FP8Format) String() string {
	if f == FP8FNUZ {
		return "fnuz"
	}
	return "ocp"
}

// CommonFP8 is the FP8 format of every device of caps. A process generates and checks its data in one format,
// so devices of two formats in one process are an error, naming an architecture of each.
func CommonFP8(caps []Caps) (FP8Format, error) {
	for _, c := range caps[1:] {
		if c.FP8 != caps[0].FP8 {
			return 0, fmt.Errorf("%s computes FP8 in %s, %s in %s: run them in separate processes", caps[0].Arch,
				caps[0].FP8, c.Arch, c.FP8)
		}
	}
	return caps[0].FP8, nil
}

// Caps are what a device's runtime and architecture allow, by which features are switched: never by the
// compute-capability number.
type Caps struct {
	Runtime  Runtime
	Arch     string // as Arch returns it
	WarpSize int    // threads of a warp (32) or wavefront (64 on AMD Instinct)
	// EarlyLaunch: a kernel may be launched to start while the one ahead of it on the stream ends
	// (programmatic dependent launch: CUDA on sm_90 and later).
	EarlyLaunch bool
	// BulkCopy: the SMs' bulk asynchronous copies (cp.async.bulk, sm_90 and later).
	BulkCopy bool
	FP8      FP8Format
	// LL128 and CopyEngine are the defaults of the LL128 protocol and the copy-engine transport: on where
	// measured correct and fast (NVIDIA), off on HIP until checked on AMD hardware.
	LL128      bool
	CopyEngine bool
	// ICacheFlush: the instruction cache can be flushed by a kernel (LoadICacheFlush; AMD's s_icache_inv).
	ICacheFlush bool
}

// Caps returns the device's capabilities under the bound runtime.
func (d Device) Caps() (Caps, error) {
	arch, err := d.Arch()
	if err != nil {
		return Caps{}, err
	}
	warp, err := d.Attribute(WarpSize)
	if err != nil {
		return Caps{}, err
	}
	c := Caps{Runtime: Loaded(), Arch: arch, WarpSize: warp}
	if c.Runtime == HIP {
		if ArchBase(arch) == "gfx942" {
			c.FP8 = FP8FNUZ
		}
		c.ICacheFlush = true
		return c, nil
	}
	major, _, err := d.ComputeCapability()
	if err != nil {
		return Caps{}, err
	}
	c.EarlyLaunch = major >= 9 && cuLaunchKernelEx.addr != 0
	c.BulkCopy = major >= 9
	c.LL128, c.CopyEngine = true, true
	return c, nil
}
