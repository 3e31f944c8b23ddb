package vendorengine

import "github.com/rcclx-tests/rcclx-tests/collectives"

// corrupt applies the corrupt hook (collectives.EnvCorruptRank) after c: the hooked rank's output element 0
// gets collectives.CorruptMask flipped in byte CorruptByte, so validation must report it wrong. The library's
// result has to exist first, so this waits for the collective (bounded by -T like Wait) and rewrites the byte
// from the host. Graph captures are left alone: the harness validates direct launches only, and a capturing
// stream cannot be waited for.
func (g *group) corrupt(c *collectives.Call) error {
	for l, r := range g.ranks {
		if r.global != g.c.hooks.CorruptRank || c.Coll.Checked(r.global, c.Root, g.c.nranks, c.Counts[l]) == 0 || g.capturing {
			continue
		}
		if err := g.Wait(); err != nil {
			return err
		}
		v := c.Recv[l]
		v.Off += int64(collectives.CorruptByte(c.DType.Size()))
		b := make([]byte, 1)
		if err := g.Read(b, v); err != nil {
			return err
		}
		b[0] ^= collectives.CorruptMask
		return g.Write(v, b)
	}
	return nil
}
