package collectives

import (
	"errors"
	"fmt"
	"strconv"
)

// GPUTuning is the GPU engine's own knobs, read at its Open like the policy (Config.Env over the environment).
// The registry (Variables) checks and compares their values with this reader, so the two cannot disagree.
//
//	RCCLX_TESTS_GPU_RING_BLOCKS  most blocks (ring channels) of a ring kernel (default 64)
//	RCCLX_TESTS_GPU_LP_BLOCKS    most blocks of an LP or direct alltoall kernel (default 128, and one per
//	                             multiprocessor for an LP all_gather that pushes its codes)
//	RCCLX_TESTS_GPU_CE_BYTES     smallest per-rank buffer that goes through the copy-engine transport
//	                             (default 16M for each peer: 16M at 2 ranks, 48M at 4; "off" never)
//	RCCLX_TESTS_GPU_CE_CHUNK     the chunk of the pieces a copy-engine receiver reduces or unpacks, and of
//	                             all_reduce's reduction and gather (default 64M)
//	RCCLX_TESTS_GPU_LL_BYTES     largest DDA all_reduce that uses the LL or LL128 kernels (default 1M, within
//	                             what their areas hold; 0 never)
//	RCCLX_TESTS_GPU_LAUNCHERS    on (default): a thread of its own launches each local rank after the first;
//	                             off: the harness thread launches every rank
//	RCCLX_TESTS_GPU_LL128        1 or 0: the LL128 protocol on or off where the GPU runtime's default differs
//	                             (off on HIP, whose line visibility over xGMI no AMD machine of ours has checked)
//
// DDA kernels use at most RCCL_DDA_MAX_BLOCKS (the policy). Every kernel also stays under the GPU's block cap.
type GPUTuning struct {
	RingBlocks     int
	LPBlocks       int   // 0: the engine's default
	CEBytes        int64 // -1: never
	CEPerPeer      bool  // CEBytes is for each peer (the default): CEMin
	CEChunk, LLMax int64
	Launchers      bool
	LL128          int // 1 on, -1 off, 0 the GPU runtime's default
}

// MaxGPUBlocks is the most blocks a GPU engine kernel may be given (RCCLX_TESTS_GPU_*_BLOCKS).
const MaxGPUBlocks = 160

// DefaultGPUTuning is the tuning with none of its variables set.
var DefaultGPUTuning = GPUTuning{RingBlocks: 64, CEBytes: 16 << 20, CEPerPeer: true, CEChunk: 64 << 20,
	LLMax: 1 << 20, Launchers: true}

// CEMin is the smallest per-rank buffer the copy engines take at n ranks, -1 for none. Their fixed cost grows
// with the turns a call takes, one per peer, while the kernels' does not: 16 MiB was where they overtook the
// kernels at 2 ranks on 2x H200, and at 4 ranks on 4x H200 they were 1.2-3.1x slower at 16 and 32 MiB and
// 4-10% faster from 64 MiB, at 3 ranks about even at 32 MiB (docs/PERFORMANCE.md), so by default each peer
// adds 16 MiB.
func (t GPUTuning) CEMin(n int) int64 {
	if t.CEBytes < 0 || !t.CEPerPeer {
		return t.CEBytes
	}
	return t.CEBytes * int64(max(n-1, 1))
}

// gpuTuningVars are the tuning's variables: the collectives each can change (none: every one) and how a
// value sets its field.
var gpuTuningVars = []struct {
	name  string
	colls []*Collective
	set   func(t *GPUTuning, value string) error
}{
	{"RCCLX_TESTS_GPU_RING_BLOCKS", nil, func(t *GPUTuning, s string) (err error) {
		t.RingBlocks, err = gpuBlocks(s)
		return err
	}},
	{"RCCLX_TESTS_GPU_LP_BLOCKS", nil, func(t *GPUTuning, s string) (err error) {
		t.LPBlocks, err = gpuBlocks(s)
		return err
	}},
	{"RCCLX_TESTS_GPU_CE_BYTES", nil, func(t *GPUTuning, s string) error {
		t.CEPerPeer = false
		if s == "off" {
			t.CEBytes = -1
			return nil
		}
		return setSize(&t.CEBytes, s, "want a size or off")
	}},
	{"RCCLX_TESTS_GPU_CE_CHUNK", nil, func(t *GPUTuning, s string) error { return setSize(&t.CEChunk, s, "want a size") }},
	{"RCCLX_TESTS_GPU_LL_BYTES", []*Collective{AllReduce}, func(t *GPUTuning, s string) error {
		return setSize(&t.LLMax, s, "want a size")
	}},
	{"RCCLX_TESTS_GPU_LL128", []*Collective{AllReduce}, func(t *GPUTuning, s string) error {
		switch s {
		case "1":
			t.LL128 = 1
		case "0":
			t.LL128 = -1
		default:
			return errors.New("want 0 or 1")
		}
		return nil
	}},
	{"RCCLX_TESTS_GPU_LAUNCHERS", nil, func(t *GPUTuning, s string) error {
		switch s {
		case "on", "1":
			t.Launchers = true
		case "off", "0":
			t.Launchers = false
		default:
			return errors.New("want on or off")
		}
		return nil
	}},
}

// GPUTuningFromEnv reads the tuning; an empty value is unset.
func GPUTuningFromEnv(getenv func(string) string) (GPUTuning, error) {
	t := DefaultGPUTuning
	for _, v := range gpuTuningVars {
		if s := getenv(v.name); s != "" {
			if err := v.set(&t, s); err != nil {
				return GPUTuning{}, fmt.Errorf("%s=%q: %v", v.name, s, err)
			}
		}
	}
	return t, nil
}

// gpuTuningVariables are the registry's entries for the tuning: Check is the reader's, and a value means the
// tuning it reads to (an empty value the default; one the reader refuses, only itself).
func gpuTuningVariables() []Variable {
	var vs []Variable
	for _, v := range gpuTuningVars {
		set := v.set
		vs = append(vs, Variable{Name: v.name, Engines: gpuOnly, Colls: v.colls,
			Check: func(s string) error {
				var t GPUTuning
				return set(&t, s)
			},
			Meaning: func(s string) any {
				t := DefaultGPUTuning
				if s != "" && set(&t, s) != nil {
					return s
				}
				return t
			}})
	}
	return vs
}

func gpuBlocks(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxGPUBlocks {
		return 0, fmt.Errorf("want 1..%d", MaxGPUBlocks)
	}
	return n, nil
}

func setSize(dst *int64, s, want string) error {
	n, err := ParseSize(s)
	if err != nil {
		return errors.New(want)
	}
	*dst = n
	return nil
}
