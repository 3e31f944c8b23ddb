package gpuengine

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/rcclx-tests/rcclx-tests/kernels"
)

// Every kernel the engine looks up is defined in the embedded source.
func TestKernelNamesInSource(t *testing.T) {
	src := kernels.Source()
	names := []string{flipKernel, barrierKernel, ceReduceKernel, llFlatKernel, llTreeKernel}
	for _, byAlgo := range kernelNames {
		for _, name := range byAlgo {
			names = append(names, name)
		}
	}
	for _, name := range names {
		if !strings.Contains(src, "RX_KERNEL "+name+"(Args a)") && !strings.Contains(src, "__global__ void "+name+"(") {
			t.Errorf("kernel %s is not defined in kernels.Source()", name)
		}
	}
}

// layout.go mirrors the numbers of kernels/comm.cuh.
func TestLayoutMatchesSource(t *testing.T) {
	src := kernels.Source()
	for name, want := range map[string]int{
		"RX_MAXB": maxBlocks, "RX_MAXR": maxBarrierRanks, "RX_NSLOTS": fifoSlots, "RX_SLOT_BYTES": slotBytes,
		"RX_CTRL_BYTES": ctrlBytes, "RX_ARGS_BYTES": argsBytes, "RX_LL_MAXR": llMaxRanks, "RX_LL_BYTES": llBytes,
	} {
		m := regexp.MustCompile(`#define ` + name + ` (\d+)`).FindStringSubmatch(src)
		if m == nil {
			t.Errorf("%s is not defined as a number in the source", name)
			continue
		}
		if got, _ := strconv.Atoi(m[1]); got != want {
			t.Errorf("%s = %d in the source, %d in layout.go", name, got, want)
		}
	}
	if s := unsafe.Sizeof(kernelArgs{}); s != argsBytes {
		t.Errorf("kernelArgs is %d bytes; struct Args is %d", s, argsBytes)
	}
	if !strings.Contains(src, "__launch_bounds__(512)") || blockThreads != 512 {
		t.Errorf("block size: the prelude's launch bounds and blockThreads (%d) disagree", blockThreads)
	}
}
