package gpurt

import "unsafe"

// Context is a device's primary context on CUDA. On HIP, whose devices have no context the API shows, it is the
// device: SetCurrent is hipSetDevice, and h the ordinal, which every call taking a context takes instead.
type Context struct {
	h   uintptr
	dev Device
}

// RetainPrimaryContext retains d's primary context; pair with Release.
func (d Device) RetainPrimaryContext() (*Context, error) {
	h, err := d.handle()
	if err != nil {
		return nil, err
	}
	c := &Context{dev: d}
	if Loaded() == HIP {
		c.h = h
		return c, nil
	}
	if err := cuDevicePrimaryCtxRetain.call(uintptr(unsafe.Pointer(&c.h)), h); err != nil {
		return nil, err
	}
	return c, nil
}

// SetCurrent binds c to the calling OS thread; the caller must hold
// runtime.LockOSThread for as long as it relies on that.
func (c *Context) SetCurrent() error {
	return cuCtxSetCurrent.call(c.h)
}

// Synchronize waits for all work of the calling thread's current context (device on HIP), on every stream.
func Synchronize() error { return cuCtxSynchronize.call() }

// Release drops the reference taken by RetainPrimaryContext.
func (c *Context) Release() error {
	if Loaded() == HIP {
		return nil
	}
	h, err := c.dev.handle()
	if err != nil {
		return err
	}
	return cuDevicePrimaryCtxRelease.call(h)
}

// Device returns the device the context belongs to.
func (c *Context) Device() Device { return c.dev }

// EnablePeerAccess lets the current context (device) access memory of peer's device.
// Access that is already enabled is not an error.
func EnablePeerAccess(peer *Context) error {
	err := cuCtxEnablePeerAccess.call(peer.h, 0)
	if e, ok := err.(*Error); ok && e.Code == errorPeerAccessAlreadyOn {
		return nil
	}
	return err
}
