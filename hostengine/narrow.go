package hostengine

import (
	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/numeric"
)

// codec converts a narrow floating format (stored as E) to and from float32: decoding is exact, encoding rounds
// to nearest even.
type codec[E uint8 | uint16] struct {
	decode func(dst []float32, src []E)
	encode func(dst []E, src []float32)
}

var (
	halfCodec = codec[uint16]{decode: numeric.F16ToF32Slice, encode: numeric.F32ToF16Slice}
	bf16Codec = codec[uint16]{decode: numeric.BF16ToF32Slice, encode: numeric.F32ToBF16Slice}
)

func fp8Codec(f numeric.FP8) codec[uint8] {
	return codec[uint8]{decode: f.DecodeSlice, encode: f.EncodeSlice}
}

// narrowBlock is how many elements a narrow reduction decodes at a time.
const narrowBlock = 512

// narrowReducer reduces a narrow format through float32, block by block (dst may alias a or b: both inputs of
// a block are decoded before the block is written).
func narrowReducer[E uint8 | uint16](op collectives.Op, c codec[E]) reducer {
	k := kernelFor[float32](op)
	r := reducer{combine: func(dst, a, b []byte, preA, preB int) {
		d, x, y := as[E](dst), as[E](a), as[E](b)
		fa, fb := make([]float32, narrowBlock), make([]float32, narrowBlock)
		tmp := make([]E, narrowBlock)
		for lo := 0; lo < len(d); lo += narrowBlock {
			hi := min(lo+narrowBlock, len(d))
			n := hi - lo
			c.decode(fa[:n], x[lo:hi])
			c.decode(fb[:n], y[lo:hi])
			pa, pb := float32(preA), float32(preB)
			if op == collectives.MulSum {
				c.scale(fa[:n], pa, tmp)
				c.scale(fb[:n], pb, tmp)
				pa, pb = 1, 1
			}
			k(fa[:n], fa[:n], fb[:n], pa, pb)
			c.encode(d[lo:hi], fa[:n])
		}
	}}
	if op == collectives.Avg {
		r.finish = func(buf []byte, nranks int) {
			d := as[E](buf)
			f := make([]float32, narrowBlock)
			for lo := 0; lo < len(d); lo += narrowBlock {
				hi := min(lo+narrowBlock, len(d))
				c.decode(f[:hi-lo], d[lo:hi])
				divideFloat(f[:hi-lo], nranks)
				c.encode(d[lo:hi], f[:hi-lo])
			}
		}
	}
	return r
}

// scale multiplies f by p and rounds each product to the format (mulsum's premultiplication in the element
// type); tmp holds the encoded products.
func (c codec[E]) scale(f []float32, p float32, tmp []E) {
	if p == 1 {
		return
	}
	for i := range f {
		f[i] *= p
	}
	c.encode(tmp[:len(f)], f)
	c.decode(f, tmp[:len(f)])
}
