package nccl

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Resolve finds, without loading anything, the file Open would load for nameOrPath: the first of Candidates
// that exists, a bare name as this process has it mapped already (a library the binary links, which dlopen
// returns), else looked up where the dynamic loader looks (LD_LIBRARY_PATH, the directories listed by
// /etc/ld.so.conf, the default directories). The loader's cache may know a directory this search does not.
func Resolve(nameOrPath string, getenv func(string) string, glob func(string) ([]string, error)) (string, error) {
	cands := Candidates(nameOrPath, getenv, glob)
	maps, _ := os.ReadFile("/proc/self/maps")
	for _, c := range cands {
		if strings.Contains(c, "/") {
			if isFile(c) {
				return c, nil
			}
			continue
		}
		if p := mappedFile(string(maps), c); p != c {
			return p, nil
		}
		for _, dir := range loaderDirs(getenv, glob) {
			if p := filepath.Join(dir, c); isFile(p) {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("nccl: no library file found; looked for %s", strings.Join(cands, ", "))
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// loaderDirs are the directories the dynamic loader searches for a bare name, in its order.
func loaderDirs(getenv func(string) string, glob func(string) ([]string, error)) []string {
	var dirs []string
	for _, d := range filepath.SplitList(getenv("LD_LIBRARY_PATH")) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	dirs = append(dirs, confDirs("/etc/ld.so.conf", glob, 0)...)
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// confDirs reads an ld.so.conf file: one directory a line, "include PATTERN" for more files.
func confDirs(path string, glob func(string) ([]string, error), depth int) []string {
	data, err := os.ReadFile(path)
	if err != nil || depth > 4 {
		return nil
	}
	var dirs []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if pattern, ok := strings.CutPrefix(line, "include "); ok {
			files, _ := glob(strings.TrimSpace(pattern))
			for _, f := range files {
				dirs = append(dirs, confDirs(f, glob, depth+1)...)
			}
		} else if strings.HasPrefix(line, "/") {
			dirs = append(dirs, line)
		}
	}
	return dirs
}

// FileContains reports whether the file at path contains the name s as a whole word: not followed by a letter,
// digit or underscore (a C string's terminator, "=", a space), so that RCCL_DDA_ENABLED does not count for
// RCCL_DDA_ENABLE. It reads the file once, in blocks.
func FileContains(path, s string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return readerContains(f, []byte(s))
}

func readerContains(r io.Reader, s []byte) (bool, error) {
	if len(s) == 0 {
		return true, nil
	}
	const block = 1 << 20
	buf := make([]byte, 0, block+len(s))
	for {
		n, err := io.ReadFull(r, buf[len(buf):len(buf)+block])
		buf = buf[:len(buf)+n]
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			return false, err
		}
		for off := 0; ; {
			i := bytes.Index(buf[off:], s)
			if i < 0 {
				break
			}
			end := off + i + len(s)
			if end == len(buf) && !eof {
				break // the byte after it comes with the next block
			}
			if end == len(buf) || !nameByte(buf[end]) {
				return true, nil
			}
			off += i + 1
		}
		if eof {
			return false, nil
		}
		// Keep the tail that could hold a match, or a match without its next byte.
		keep := min(len(s), len(buf))
		buf = append(buf[:0], buf[len(buf)-keep:]...)
	}
}

func nameByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z'
}
