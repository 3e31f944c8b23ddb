// Package pysite finds the Python package directories where pip installs NVIDIA's wheels (NCCL, NVRTC), for
// the library searches of the cuda and nccl packages.
package pysite

import "path/filepath"

// Dirs lists site-packages and dist-packages directories: the system's, the user's, the active virtual or conda
// environment's, and those of every python3 on PATH, each once.
func Dirs(getenv func(string) string, glob func(string) ([]string, error)) []string {
	prefixes := []string{"/usr", "/usr/local", getenv("VIRTUAL_ENV"), getenv("CONDA_PREFIX")}
	if home := getenv("HOME"); home != "" {
		prefixes = append(prefixes, filepath.Join(home, ".local"))
	}
	for _, dir := range filepath.SplitList(getenv("PATH")) {
		if pys, _ := glob(filepath.Join(dir, "python3*")); len(pys) > 0 && dir != "" {
			prefixes = append(prefixes, filepath.Dir(dir))
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range prefixes {
		if p == "" {
			continue
		}
		for _, kind := range []string{"site-packages", "dist-packages"} {
			matches, _ := glob(filepath.Join(p, "lib", "python3*", kind))
			for _, m := range matches {
				real, err := filepath.EvalSymlinks(m) // /lib is often /usr/lib
				if err != nil {
					real = m
				}
				if !seen[real] {
					seen[real] = true
					out = append(out, m)
				}
			}
		}
	}
	return out
}
