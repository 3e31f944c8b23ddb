package gpuengine

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/kernels"
)

// Every kernel the engine looks up is defined in the embedded source.
func TestKernelNamesInSource(t *testing.T) {
	src := kernels.Source()
	names := []string{flipKernel, barrierKernel, ceReduceKernel, llFlatKernel, llTreeKernel, ll128Kernel, pushKernel}
	for _, byAlgo := range kernelNames {
		for _, name := range byAlgo {
			names = append(names, name)
		}
	}
	for _, name := range names {
		if strings.HasPrefix(name, "lp_") {
			if !strings.Contains(src, "RX_LP_ENTRIES("+name+")") { // name and name_scaled
				t.Errorf("LP kernel %s is not defined in kernels.Source()", name)
			}
			continue
		}
		if !strings.Contains(src, "RX_KERNEL "+name+"(Args a)") && !strings.Contains(src, "__global__ void "+name+"(") {
			t.Errorf("kernel %s is not defined in kernels.Source()", name)
		}
	}
	for coll, byAlgo := range kernelNames {
		if name := byAlgo[collectives.LowPrecision]; name != "" {
			narrow := lpNarrow(coll, 2, false, 0) // plans launch name_narrow (bfloat16 only)
			if narrow != strings.Contains(src, "RX_LP_NARROW("+name+")") {
				t.Errorf("LP kernel %s: plans launch its _narrow entry %v, the source defines it %v", name, narrow, !narrow)
			}
		}
	}
}

// A kernel that makePlan launches early (DDA's and LP's) waits for the kernel ahead before anything else. The
// LP kernels' entry points come from one macro, whose two entries must each begin with the wait.
func TestEarlyKernelsWaitFirst(t *testing.T) {
	src := kernels.Source()
	names := []string{llFlatKernel, llTreeKernel, ll128Kernel, pushKernel}
	var lp []string
	for _, byAlgo := range kernelNames {
		for algo, name := range byAlgo {
			switch algo {
			case collectives.DDA, collectives.DDAFlat, collectives.DDATree:
				names = append(names, name)
			case collectives.LowPrecision:
				lp = append(lp, name)
			}
		}
	}
	for _, name := range names {
		if !strings.Contains(src, "RX_KERNEL "+name+"(Args a) {\n  grid_dep_sync();") {
			t.Errorf("kernel %s is launched early but does not begin with grid_dep_sync()", name)
		}
	}
	if len(names) < 9 || len(lp) != 4 {
		t.Errorf("%d DDA kernels, want 9; %d LP kernels, want 4", len(names), len(lp))
	}
	begins := regexp.MustCompile(`\(Args a\) \{\s*\\\s*grid_dep_sync\(\);`)
	entries := regexp.MustCompile(`(?s)#define RX_LP_ENTRIES\(name\).*?\n\n`).FindString(src)
	if n := len(begins.FindAllString(entries, -1)); n != 2 {
		t.Errorf("RX_LP_ENTRIES: %d of its entries begin with grid_dep_sync(), want 2:\n%s", n, entries)
	}
	narrow := regexp.MustCompile(`(?s)#define RX_LP_NARROW\(name\) .*?\n#else`).FindString(src)
	if n := len(begins.FindAllString(narrow, -1)); n != 1 {
		t.Errorf("RX_LP_NARROW: %d of its entries begin with grid_dep_sync(), want 1:\n%s", n, narrow)
	}
	for _, name := range lp {
		if !strings.Contains(src, "RX_LP_ENTRIES("+name+")") {
			t.Errorf("LP kernel %s is not made by RX_LP_ENTRIES", name)
		}
	}
}

// layout.go mirrors the numbers of kernels/comm.cuh.
func TestLayoutMatchesSource(t *testing.T) {
	src := kernels.Source()
	for name, want := range map[string]int{
		"RX_MAXB": maxBlocks, "RX_MAXR": maxBarrierRanks, "RX_NSLOTS": fifoSlots, "RX_SLOT_BYTES": slotBytes,
		"RX_CTRL_BYTES": ctrlBytes, "RX_ARGS_BYTES": argsBytes, "RX_LL_MAXR": llMaxRanks, "RX_LL_BYTES": llBytes, "RX_LL128_MAXR": ll128MaxRanks, "RX_LL128_SLOT": ll128Slot,
		"RX_LP_SPLIT_CHUNKS": lpSplitChunks, "RX_LP_NARROW_THREADS": lpNarrowThreads,
		"RX_BULK_THREADS": lpBulkThreads, "RX_BULK_TILE": lpBulkTile, "RX_BULK_STAGES": lpBulkStages,
		"RX_BULK_OUTS": lpBulkOuts,
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
	lp := regexp.MustCompile(`#if RX_DTYPE == RX_FLOAT\n#define RX_LP_RCCLX_THREADS (\d+)\n#else\n#define ` +
		`RX_LP_RCCLX_THREADS (\d+)\n#endif\n#define RX_LP_SCALED_THREADS (\d+)\n`).FindStringSubmatch(src)
	if lp == nil {
		t.Fatal("the LP block sizes are not defined as numbers in the source")
	}
	for i, c := range []struct {
		size   int
		scaled bool
	}{{4, false}, {2, false}, {4, true}} {
		if got, _ := strconv.Atoi(lp[i+1]); got != lpThreads(c.size, c.scaled) {
			t.Errorf("LP block size of %d-byte elements (scaled %v): %d in the source, %d in layout.go", c.size,
				c.scaled, got, lpThreads(c.size, c.scaled))
		}
	}
}
