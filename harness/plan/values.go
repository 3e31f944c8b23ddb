package plan

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/rcclx-tests/rcclx-tests/collectives"
)

// Halves is -O: which of the out-of-place and in-place halves run. rccl-tests reads the value as strtol
// does (base 0) and any value other than 0 selects out-of-place only: -O 2 is -O 1 there, and here.
type Halves int

const (
	BothHalves     Halves = -1
	InPlaceOnly    Halves = 0
	OutOfPlaceOnly Halves = 1
)

func (h *Halves) String() string {
	if *h == BothHalves {
		return "both"
	}
	return strconv.Itoa(int(*h))
}

func (h *Halves) Set(s string) error {
	if s == "both" {
		*h = BothHalves
		return nil
	}
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return fmt.Errorf("want 0 (in-place only), 1 or any other integer (out-of-place only), or both")
	}
	*h = InPlaceOnly
	if n != 0 {
		*h = OutOfPlaceOnly
	}
	return nil
}

func (*Halves) Type() string { return "0|1|both" }

// Seed is --seed: the inputs' seed, random unless given.
type Seed struct {
	Value uint64
	Given bool // --seed was given, or a seed drawn (Resolve)
}

func (s *Seed) String() string {
	if !s.Given {
		return "random"
	}
	return strconv.FormatUint(s.Value, 10)
}

func (s *Seed) Set(v string) error {
	n, err := strconv.ParseUint(v, 0, 64)
	if err != nil {
		return fmt.Errorf("want an unsigned 64-bit integer")
	}
	s.Value, s.Given = n, true
	return nil
}

func (*Seed) Type() string { return "uint64" }

// Resolve returns the seed, drawing a random one the first time when none was given.
func (s *Seed) Resolve() uint64 {
	if !s.Given {
		var b [8]byte
		_, _ = rand.Read(b[:])
		s.Value, s.Given = binary.LittleEndian.Uint64(b[:]), true
	}
	return s.Value
}

// RCCLOptions are the parsed values of these flags.
type RCCLOptions struct {
	MemoryType     string // -Y/--memory_type, or -y with a word: coarse, fine, host, managed ("" when not given)
	Cumask         string // --cumask, or -u with a mask list: AMD compute-unit masks
	DelayUs        int    // -q/--delay_inout_place: microseconds between the out-of-place and in-place Halves
	CacheFlush     int    // -F/--cache_flush: flush the instruction cache every N iterations (0: never)
	RotatingTensor int    // --rotating_tensor, or -E 0|1: alternate the timed iterations between two buffer Halves
	Format         string // -Z/--rccl_output_format: csv or json
	File           string // -X/--rccl_output_file (--csv FILE is -Z csv -X FILE)
	CSVAlias       bool   // the file came from --csv
	AlgoColumns    int    // -A/--output_algo_proto_channels: algorithm, protocol and channel columns
	CTAPolicy      int    // -x/--cta_policy: ncclConfig's CTAPolicy (-1: not set)
	DeviceImpl     int    // -D/--device_implementation
	DeviceCTAs     int    // -V/--device_cta_count
}

// MemoryTypes are rccl-tests' memory types, in its order.
var MemoryTypes = map[string]collectives.MemoryKind{
	"coarse": collectives.MemoryCoarse, "fine": collectives.MemoryFine, "host": collectives.MemoryHost,
	"managed": collectives.MemoryManaged,
}

// MemoryKind is the memory type the engines get.
func (r *RCCLOptions) MemoryKind() collectives.MemoryKind { return MemoryTypes[r.MemoryType] }

// ABVariable is what the run knows, before it measures, about whether anything reads the --ab variable.
type ABVariable struct {
	Known   bool // false: the library file could not be searched (the run then fails to load it, or says why)
	Read    bool
	Library string // the library file searched (vendor engine)
	// noEffect: read, but with the run's other settings both values give the collective the same policy.
	NoEffect bool
}

// RotatingBytes is how far rccl-tests' rotating tensor moves every other iteration (its cache_bytes).
const RotatingBytes = 192 << 20
