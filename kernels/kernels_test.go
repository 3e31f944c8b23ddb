package kernels

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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

// hipInclude is the one include allowed: the HIP runtime for hipcc (hiprtc has it built in, NVRTC never sees it).
const hipInclude = "#if defined(__HIPCC__) && !defined(__HIPCC_RTC__)\n#include <hip/hip_runtime.h>\n#endif\n"

// Only prelude.cuh may hold PTX or CUDA-only intrinsics, and nothing but its HIP branch may include a header.
func TestVendorSpecificsOnlyInPrelude(t *testing.T) {
	for _, name := range Files {
		data, _ := files.ReadFile(name)
		text := string(data)
		if name == "prelude.cuh" {
			text = strings.Replace(text, hipInclude, "", 1)
		}
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
// target through the prelude's CUDA branch: a syntax and template check without the device.
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
	shim, _ := filepath.Abs("testdata/clang_shim.h")
	compileModules(t, representativeModules(), func(src string, m module) []string {
		args := []string{clang, "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_80", "-nocudainc",
			"-nocudalib", "-std=c++17", "-O1", "-S", "-o", os.DevNull, "-include", shim}
		return append(append(args, m.defines()...), src)
	})
}
