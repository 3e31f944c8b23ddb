package collectives

import (
	"errors"
	"fmt"
)

// ErrNotPowerOfTwo is Prepare's error for hypercube on a rank count that is not a power of two.
var ErrNotPowerOfTwo = errors.New("hypercube needs a power-of-two number of ranks")

// HyperCube: an all-gather in log2(n) pairwise steps (n a power of two): at step s every rank swaps the 2^s
// pieces it holds with rank XOR 2^s. Every rank sends S/n bytes and receives all pieces (S bytes); the
// algorithm bandwidth counts the (n-1) pieces a rank receives, the bus factor is 1, the redop column is empty.
var HyperCube = &Collective{
	Name:            "hypercube",
	opCol:           opBlank,
	sameOnEveryRank: true,
	algorithm:       HyperCubeSteps,
	counts: func(elems int64, nranks, rank int, dt DType) Counts {
		p := perRank(elems, nranks, dt)
		return Counts{Send: p, Recv: p * int64(nranks), Param: p, SendInPlace: int64(rank) * p}
	},
	busFactor: func(int) float64 { return 1 },
	algElems:  func(k Counts) int64 { return k.Recv - k.Send },
	source: func(rank, root, nranks int, c Counts, i int64) (int, int64, bool) {
		return int(i / c.Param), i % c.Param, false
	},
	prepare: func(c *Collective, _ func(string) string, nranks int, _, _ int64) (*Collective, error) {
		if nranks < 1 || nranks&(nranks-1) != 0 {
			return nil, fmt.Errorf("%w, got %d", ErrNotPowerOfTwo, nranks)
		}
		return c, nil
	},
}
