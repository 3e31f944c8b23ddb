// Package collectives describes what the suite measures, independently of any engine: data types and
// reduction operations, one file per collective (sizes, bandwidth factor, input and expected data), the
// Engine/Comm/Group interfaces every engine implements, and the RCCLX algorithm policy shared by the host
// and GPU engines.
package collectives

import (
	"fmt"
	"strings"
)

// DType is an element type, named as nccl-tests names it.
type DType int

const (
	Int8 DType = iota
	Uint8
	Int32
	Uint32
	Int64
	Uint64
	Half
	Float
	Double
	BFloat16
	F8E4M3
	F8E5M2
	numDTypes
)

var dtypeInfo = [numDTypes]struct {
	name string
	size int
	// precision is the number of significand bits (implicit bit included) for floating types, 0 for integers.
	precision int
}{
	Int8:     {"int8", 1, 0},
	Uint8:    {"uint8", 1, 0},
	Int32:    {"int32", 4, 0},
	Uint32:   {"uint32", 4, 0},
	Int64:    {"int64", 8, 0},
	Uint64:   {"uint64", 8, 0},
	Half:     {"half", 2, 11},
	Float:    {"float", 4, 24},
	Double:   {"double", 8, 53},
	BFloat16: {"bfloat16", 2, 8},
	F8E4M3:   {"f8e4m3", 1, 4},
	F8E5M2:   {"f8e5m2", 1, 3},
}

// dtypeAliases are the other spellings users bring from nccl-tests and rccl-tests.
var dtypeAliases = map[string]DType{
	"char": Int8, "int": Int32, "uint": Uint32, "float16": Half, "fp16": Half, "float32": Float,
	"fp32": Float, "float64": Double, "fp64": Double, "bf16": BFloat16,
	"fp8_e4m3": F8E4M3, "fp8_e5m2": F8E5M2, "e4m3": F8E4M3, "e5m2": F8E5M2,
}

// FP8 reports whether d is one of the 8-bit float types.
func (d DType) FP8() bool { return d == F8E4M3 || d == F8E5M2 }

// AllDTypes lists every type in nccl-tests' order (what "-d all" runs).
func AllDTypes() []DType {
	out := make([]DType, numDTypes)
	for i := range out {
		out[i] = DType(i)
	}
	return out
}

func (d DType) String() string { return dtypeInfo[d].name }

// Size is the element size in bytes.
func (d DType) Size() int { return dtypeInfo[d].size }

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return dtypeInfo[d].precision > 0 }

// Precision is the significand width in bits (implicit bit included); 0 for integer types.
func (d DType) Precision() int { return dtypeInfo[d].precision }

// ParseDTypes parses the -d value: one name, an alias, or "all".
func ParseDTypes(s string) ([]DType, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "all" {
		return AllDTypes(), nil
	}
	for i := range dtypeInfo {
		if dtypeInfo[i].name == s {
			return []DType{DType(i)}, nil
		}
	}
	if d, ok := dtypeAliases[s]; ok {
		return []DType{d}, nil
	}
	return nil, fmt.Errorf("invalid datatype %q (want one of int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3 f8e5m2, or all)", s)
}

// Op is a reduction operation.
type Op int

const (
	Sum Op = iota
	Prod
	Max
	Min
	Avg
	MulSum // NCCL's PreMulSum: each rank's input is multiplied by PreMulScalar(rank) before the sum
	numOps
)

var opNames = [numOps]string{"sum", "prod", "max", "min", "avg", "mulsum"}

func (o Op) String() string { return opNames[o] }

// AllOps lists every op in nccl-tests' order (what "-o all" runs).
func AllOps() []Op {
	out := make([]Op, numOps)
	for i := range out {
		out[i] = Op(i)
	}
	return out
}

// ParseOps parses the -o value: one name or "all".
func ParseOps(s string) ([]Op, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "all" {
		return AllOps(), nil
	}
	for i, n := range opNames {
		if n == s {
			return []Op{Op(i)}, nil
		}
	}
	return nil, fmt.Errorf("invalid op %q (want one of sum prod max min avg mulsum, or all)", s)
}

// PreMulScalar is the factor rank applies to its input under MulSum, as nccl-tests chooses it (1 or 2, so the
// product is exact in every type).
func PreMulScalar(rank int) int { return 1 + rank%2 }
