package numeric

// EncodeSlice sets dst[i] = Encode(src[i]); dst must be at least as long as
// src.
func (f FP8) EncodeSlice(dst []uint8, src []float32) {
	dst = dst[:len(src)]
	encoded, lowBits := f.encoded, f.lowBits
	for i, x := range src {
		dst[i] = lookupEncoded(encoded, lowBits, x)
	}
}

// DecodeSlice sets dst[i] = Decode(src[i]); dst must be at least as long as
// src.
func (f FP8) DecodeSlice(dst []float32, src []uint8) {
	dst = dst[:len(src)]
	values := f.values
	for i, b := range src {
		dst[i] = values[b]
	}
}

// DecodeAdd adds Decode(src[i]) to dst[i]; dst must be at least as long as
// src.
func (f FP8) DecodeAdd(dst []float32, src []uint8) {
	dst = dst[:len(src)]
	values := f.values
	for i, b := range src {
		dst[i] += values[b]
	}
}
