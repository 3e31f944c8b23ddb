package nccl

import (
	"debug/elf"
	"fmt"
	"strings"
)

// LinkedHIP returns the HIP runtime the library file at path links: the libamdhip64 soname among its DT_NEEDED
// entries ("libamdhip64.so.6"), or "" where there is none. RCCL and RCCLX link libamdhip64; NVIDIA's NCCL links
// no GPU runtime (it loads libcuda itself). The suite must bind exactly that soname, so that the process holds
// one HIP runtime: two would hand each other handles that neither knows.
func LinkedHIP(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading the libraries %s links: %w", path, err)
	}
	defer f.Close()
	needed, err := f.ImportedLibraries()
	if err != nil {
		return "", fmt.Errorf("reading the libraries %s links: %w", path, err)
	}
	for _, lib := range needed {
		if strings.HasPrefix(lib, "libamdhip64.so") {
			return lib, nil
		}
	}
	return "", nil
}
