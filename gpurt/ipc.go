package gpurt

import (
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// IpcMemHandle names a device allocation to other processes (CUipcMemHandle, hipIpcMemHandle_t: 64 bytes).
type IpcMemHandle [64]byte

// ipcHandleArg is CUipcMemHandle as a C struct, for passing by value.
type ipcHandleArg struct{ Reserved [64]byte }

// ipcMemLazyEnablePeerAccess is the one flag cuIpcOpenMemHandle and hipIpcOpenMemHandle take, 1 in both; HIP's
// headers up to ROCm 5.2 said 0, and newer HIP runtimes refuse any other value.
const (
	ipcMemLazyEnablePeerAccess = 0x1
	hipIpcMemLazyOld           = 0x0
)

// cuIpcOpenMemHandle takes the 64-byte handle by value, which ccall cannot
// pass; purego's RegisterFunc places it on the stack as the C ABI wants.
var ipcOpen struct {
	once sync.Once
	fn   func(p *DevicePtr, h ipcHandleArg, flags uint32) uint32
}

// IpcGetMemHandle returns a handle for an allocation from MemAlloc.
func IpcGetMemHandle(p DevicePtr) (IpcMemHandle, error) {
	var h IpcMemHandle
	err := cuIpcGetMemHandle.call(uintptr(unsafe.Pointer(&h)), uintptr(p))
	return h, err
}

// IpcOpenMemHandle maps another process's allocation into the current context.
func IpcOpenMemHandle(h IpcMemHandle) (DevicePtr, error) {
	if cuIpcOpenMemHandle.addr == 0 {
		return 0, errNotLoaded
	}
	ipcOpen.once.Do(func() { purego.RegisterFunc(&ipcOpen.fn, cuIpcOpenMemHandle.addr) })
	var p DevicePtr
	r := ipcOpen.fn(&p, ipcHandleArg{Reserved: h}, ipcMemLazyEnablePeerAccess)
	if r == errorInvalidValue && Loaded() == HIP {
		r = ipcOpen.fn(&p, ipcHandleArg{Reserved: h}, hipIpcMemLazyOld)
	}
	if r != 0 {
		return 0, driverError(cuIpcOpenMemHandle.name, int(r))
	}
	return p, nil
}

// IpcCloseMemHandle unmaps memory from IpcOpenMemHandle.
func IpcCloseMemHandle(p DevicePtr) error { return cuIpcCloseMemHandle.call(uintptr(p)) }
