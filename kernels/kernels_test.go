package kernels

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestSourceHoldsEveryFileInOrder(t *testing.T) {
	src := Source()
	embedded, err := fs.Glob(files, "*.cu*")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(embedded)
	listed := slices.Clone(Files)
	slices.Sort(listed)
	if !slices.Equal(embedded, listed) {
		t.Fatalf("embedded files %v, Files lists %v", embedded, listed)
	}
	last := -1
	for _, name := range Files {
		data, _ := files.ReadFile(name)
		if len(data) == 0 {
			t.Errorf("%s is empty", name)
		}
		at := strings.Index(src, "// ---- "+name+"\n"+string(data))
		if at <= last {
			t.Errorf("%s missing or out of order in Source()", name)
		}
		last = at
	}
}

// Only prelude.cuh may hold PTX or CUDA-only intrinsics, and nothing may include a header.
func TestVendorSpecificsOnlyInPrelude(t *testing.T) {
	for _, name := range Files {
		data, _ := files.ReadFile(name)
		text := string(data)
		if strings.Contains(text, "#include") {
			t.Errorf("%s includes a header; NVRTC has no include path", name)
		}
		if name == "prelude.cuh" {
			continue
		}
		for _, w := range []string{"asm", "__syncthreads", "__threadfence", "__float_as", "__uint_as", "__shfl"} {
			if strings.Contains(text, w) {
				t.Errorf("%s uses %s; keep it in prelude.cuh", name, w)
			}
		}
	}
}

// With a clang that has a CUDA front end (Debian's clang-14 does), every module compiles for a real GPU
// target: a syntax and template check without the device.
func TestClangCompilesModules(t *testing.T) {
	clang := ""
	for _, c := range []string{"clang", "clang-14", "clang-15", "clang-16"} {
		if p, err := exec.LookPath(c); err == nil {
			clang = p
			break
		}
	}
	if clang == "" {
		t.Skip("no clang on PATH: the CUDA syntax check needs one (apt-get install clang)")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "all.cu")
	if err := os.WriteFile(src, []byte(Source()), 0o644); err != nil {
		t.Fatal(err)
	}
	shim, _ := filepath.Abs("testdata/clang_shim.h")
	// Every dtype with sum and every op with one type of each family: each code path of types.cuh.
	var pairs [][2]int
	for dt := range 12 {
		pairs = append(pairs, [2]int{dt, 0})
	}
	for op := 1; op < 6; op++ {
		for _, dt := range []int{0, 6, 7} {
			pairs = append(pairs, [2]int{dt, op})
		}
	}
	if testing.Short() {
		pairs = [][2]int{{7, 0}, {9, 0}, {6, 2}, {10, 5}}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, p := range pairs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out, err := exec.Command(clang, "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_80",
				"-nocudainc", "-nocudalib", "-std=c++17", "-O1", "-S", "-o", os.DevNull,
				"-DRX_DTYPE="+strconv.Itoa(p[0]), "-DRX_OP="+strconv.Itoa(p[1]), "-include", shim, src).CombinedOutput()
			if err != nil || len(out) > 0 {
				t.Errorf("dtype %d op %d: %v\n%s", p[0], p[1], err, out)
			}
		})
	}
	wg.Wait()
}
