package nccl

import (
	"encoding/binary"
	"fmt"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// DataType is ncclDataType_t.
type DataType int32

// NCCL's values, which RCCL shares.
const (
	Int8 DataType = iota
	Uint8
	Int32
	Uint32
	Int64
	Uint64
	Float16
	Float32
	Float64
	Bfloat16
	Float8e4m3
	Float8e5m2
)

// RedOp is ncclRedOp_t: a built-in operation, or one made by RedOpCreatePreMulSum.
type RedOp int32

const (
	OpSum RedOp = iota
	OpProd
	OpMax
	OpMin
	OpAvg
)

// dataTypes maps the suite's types to NCCL's, with the first version that has each.
var dataTypes = map[collectives.DType]struct {
	dt    DataType
	since int
}{
	collectives.Int8: {Int8, 0}, collectives.Uint8: {Uint8, 0}, collectives.Int32: {Int32, 0},
	collectives.Uint32: {Uint32, 0}, collectives.Int64: {Int64, 0}, collectives.Uint64: {Uint64, 0},
	collectives.Half: {Float16, 0}, collectives.Float: {Float32, 0}, collectives.Double: {Float64, 0},
	collectives.BFloat16: {Bfloat16, 21000}, collectives.F8E4M3: {Float8e4m3, 22400},
	collectives.F8E5M2: {Float8e5m2, 22400},
}

// DataTypeOf maps d for a library of the given version. FP8 also needs an sm_90 device, which the caller
// checks.
func DataTypeOf(d collectives.DType, version int) (DataType, error) {
	m, ok := dataTypes[d]
	if !ok || version < m.since {
		return 0, fmt.Errorf("%s needs NCCL %s or later (library is %s): %w", d, VersionString(m.since),
			VersionString(version), collectives.ErrUnsupported)
	}
	return m.dt, nil
}

// RedOpOf maps the built-in operations. MulSum is not built in: make it per communicator with
// RedOpCreatePreMulSum.
func RedOpOf(o collectives.Op, version int) (RedOp, error) {
	switch o {
	case collectives.Sum:
		return OpSum, nil
	case collectives.Prod:
		return OpProd, nil
	case collectives.Max:
		return OpMax, nil
	case collectives.Min:
		return OpMin, nil
	case collectives.Avg:
		if version >= 21000 {
			return OpAvg, nil
		}
		return 0, fmt.Errorf("avg needs NCCL 2.10 or later (library is %s): %w", VersionString(version), collectives.ErrUnsupported)
	}
	return 0, fmt.Errorf("%s is not a built-in NCCL operation", o)
}

// Scalar encodes the integer v as one element of d, the FP8 types in flavour f, for RedOpCreatePreMulSum.
func Scalar(d collectives.DType, f collectives.FP8Flavour, v int) []byte {
	b := make([]byte, 8)
	if d.IsFloat() {
		binary.LittleEndian.PutUint64(b, f.EncodeFloat(d, float64(v)))
	} else {
		binary.LittleEndian.PutUint64(b, uint64(int64(v)))
	}
	return b[:d.Size()]
}

// VersionString renders a version code: 22803 -> "2.28.3"; codes before 2.9 used 1000*major+100*minor+patch.
func VersionString(code int) string {
	if code < 20900 {
		return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
}
