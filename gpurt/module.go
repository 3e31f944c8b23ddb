package gpurt

import "unsafe"

// Module is a loaded code object: a CUBIN or PTX image on CUDA, an AMDGPU ELF (.hsaco) on HIP.
type Module struct{ h uintptr }

// Function is a kernel of a loaded module.
type Function uintptr

// ModuleLoadData loads a CUBIN (or NUL-terminated PTX) image into the current context.
func ModuleLoadData(image []byte) (*Module, error) {
	buf := make([]byte, len(image)+1) // PTX text must end in NUL; CUBIN ignores it
	copy(buf, image)
	m := &Module{}
	if err := cuModuleLoadData.call(uintptr(unsafe.Pointer(&m.h)), uintptr(unsafe.Pointer(&buf[0]))); err != nil {
		return nil, err
	}
	return m, nil
}

// Function looks up a kernel by its (extern "C" or mangled) name.
func (m *Module) Function(name string) (Function, error) {
	var f Function
	cname := cString(name)
	err := cuModuleGetFunction.call(uintptr(unsafe.Pointer(&f)), m.h, uintptr(unsafe.Pointer(&cname[0])))
	return f, err
}

// Unload unloads the module; its functions become invalid.
func (m *Module) Unload() error { return cuModuleUnload.call(m.h) }

const funcAttributeMaxDynamicSharedSizeBytes = 8

// SetMaxDynamicSharedMem allows launches of f with up to bytes of dynamic
// shared memory (needed above 48 KiB on CUDA; HIP has no opt-in, and a launch asking too much fails).
func (f Function) SetMaxDynamicSharedMem(bytes int) error {
	if Loaded() == HIP {
		return nil
	}
	return cuFuncSetAttribute.call(uintptr(f), funcAttributeMaxDynamicSharedSizeBytes, uintptr(bytes))
}
