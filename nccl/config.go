package nccl

import (
	"errors"
	"math"
	"unsafe"
)

// Config is ncclConfig_t in its NCCL 2.14 form: the first version of the struct, and the smallest one that
// has blocking. Later versions only append fields (NCCL 2.28 has 17 more), and the library accepts every
// older form: ncclCommInitRankConfig first fills its own full struct with NCCL_CONFIG_INITIALIZER's values
// (every option undefined), copies min(Size, its own size) bytes of ours over it, checks Magic, then resets
// every field newer than Version to undefined again. So this form sets blocking and nothing else on any
// library from 2.14 on, and the library never reads past the memory we pass; the full 2.28 form would tie the
// binding to one release's field list for options the suite does not set.
type Config struct {
	Size     uint64 // size_t: bytes of the struct the caller passes
	Magic    uint32 // configMagic
	Version  uint32 // the NCCL version whose struct this is
	Blocking int32  // 0: calls may return ncclInProgress and finish in the library's threads
	// Tail is C's padding up to size_t's alignment (sizeof is 24 on LP64). NCCL 2.17 put cgaClusterSize at
	// this offset; the library copies these bytes and then resets the field because Version predates it.
	// It holds UndefInt, the initializer's value there, so even a library that skipped the reset would see
	// "undefined".
	Tail int32
}

const (
	// configMagic is NCCL_API_MAGIC, which NCCL_CONFIG_INITIALIZER writes and the library checks.
	configMagic = 0xcafebeef
	// configVersion is NCCL_VERSION(2,14,0), the version that introduced ncclConfig_t with blocking.
	configVersion = 21400
	// UndefInt is NCCL_CONFIG_UNDEF_INT (INT_MIN): the option is not set, the library chooses.
	UndefInt = math.MinInt32
)

// NonBlockingConfig is the configuration for non-blocking communicators: init, group end and collective
// calls may return ncclInProgress; CommGetAsyncError tells when the work finished, and CommAbort stops it.
func NonBlockingConfig() Config {
	return Config{Size: 24, Magic: configMagic, Version: configVersion, Blocking: 0, Tail: UndefInt}
}

// IsInProgress reports whether err is a call that returned ncclInProgress: on a non-blocking communicator
// its work goes on after the call returned.
func IsInProgress(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == InProgress
}

// CTAConfig is ncclConfig_t in its NCCL 2.27 form (up to nvlsCTAs), the first with CTAPolicy, for nccl-tests'
// -x. Config's Tail is cgaClusterSize in this form. Every option but blocking and CTAPolicy is undefined.
type CTAConfig struct {
	Config
	MinCTAs, MaxCTAs         int32
	NetName                  uintptr // const char*
	SplitShare, TrafficClass int32
	CommName                 uintptr // const char*
	CollnetEnable, CTAPolicy int32
	ShrinkShare, NVLSCTAs    int32
}

// CTAPolicyVersion is the first NCCL version with CTAPolicy (0 default, 1 efficiency); policy 2 (zero) came
// with CTAPolicyZeroVersion.
const (
	CTAPolicyVersion     = 22700
	CTAPolicyZeroVersion = 22800
)

// NewCTAConfig is a configuration that sets the CTA policy, and blocking = 0 when nonBlocking.
func NewCTAConfig(policy int, nonBlocking bool) CTAConfig {
	c := CTAConfig{Config: Config{Magic: configMagic, Version: CTAPolicyVersion, Blocking: UndefInt, Tail: UndefInt},
		MinCTAs: UndefInt, MaxCTAs: UndefInt, SplitShare: UndefInt, TrafficClass: UndefInt, CollnetEnable: UndefInt,
		CTAPolicy: int32(policy), ShrinkShare: UndefInt, NVLSCTAs: UndefInt}
	c.Size = uint64(unsafe.Sizeof(c))
	if nonBlocking {
		c.Blocking = 0
	}
	return c
}

// Base is c as the *Config ncclCommInitRankConfig takes: the library reads Size bytes from it.
func (c *CTAConfig) Base() *Config { return (*Config)(unsafe.Pointer(c)) }
