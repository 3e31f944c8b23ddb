package gpurt

// MemWatch says how much device memory some work took: the free memory of each device before it (Start),
// against the free memory after (Used). nccl-tests' -M "Initialization" is this around communicator creation.
type MemWatch map[Device]memMark

type memMark struct {
	ctx  *Context
	free int64
}

// Start records dev's free memory, read with ctx (dev's context) current, unless dev was recorded already;
// ctx is current afterwards.
func (w MemWatch) Start(dev Device, ctx *Context) error {
	if err := ctx.SetCurrent(); err != nil {
		return err
	}
	if _, ok := w[dev]; ok {
		return nil
	}
	free, _, err := MemGetInfo()
	w[dev] = memMark{ctx, free}
	return err
}

// Used is the most free memory any recorded device lost since Start; it changes the current context.
func (w MemWatch) Used() (int64, error) {
	most := int64(0)
	for _, m := range w {
		if err := m.ctx.SetCurrent(); err != nil {
			return 0, err
		}
		free, _, err := MemGetInfo()
		if err != nil {
			return 0, err
		}
		most = max(most, m.free-free)
	}
	return most, nil
}
