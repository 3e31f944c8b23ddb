package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxSuffix bounds the search for a free name in Write.
const maxSuffix = 10000

// Write stores rec as indented JSON at path without ever replacing an existing
// file: if path exists it tries path.0, path.1, ... like nccl-tests. The file
// appears atomically (written to a temporary file in the same directory, then
// linked into place). It returns the name used.
func Write(path string, rec *Record) (string, error) {
	data, err := Marshal(rec)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return writeNew(path, data)
}

// Marshal is rec as Write stores it: indented JSON and a newline.
func Marshal(rec *Record) ([]byte, error) {
	data, err := json.MarshalIndent(withEmptyLists(rec), "", " ")
	return append(data, '\n'), err
}

// Create makes a new empty file at the first free name among path, path.0,
// path.1, ... (nccl-tests' naming), exclusively (O_EXCL, mode 0644 less the
// umask), so that a program can claim its output file before it runs and
// never replaces one. A directory or a path ending in a separator is an
// error, as is a file that cannot be created (the error names path).
func Create(path string) (*os.File, error) {
	if st, err := os.Stat(path); (err == nil && st.IsDir()) || strings.HasSuffix(path, string(filepath.Separator)) {
		return nil, fmt.Errorf("%s is a directory", path)
	}
	for i := -1; i < maxSuffix; i++ {
		name := path
		if i >= 0 {
			name = fmt.Sprintf("%s.%d", path, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, fmt.Errorf("cannot create %s: %v", name, err)
		}
	}
	return nil, fmt.Errorf("no free name up to %s.%d", path, maxSuffix-1)
}

// withEmptyLists returns rec with nil lists as empty ones: nccl-tests always
// writes its lists, and its readers may not expect null.
func withEmptyLists(rec *Record) *Record {
	c := *rec
	for _, list := range []*[]string{&c.Args, &c.Env, &c.Errors} {
		if *list == nil {
			*list = []string{}
		}
	}
	if c.Results == nil {
		c.Results = []Result{}
	}
	if c.Config.Devices == nil {
		c.Config.Devices = []Device{}
	}
	return &c
}

// writeNew writes data to a temporary file and links it to the first free
// name among path, path.0, path.1, ...
func writeNew(path string, data []byte) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	for i := -1; i < maxSuffix; i++ {
		name := path
		if i >= 0 {
			name = fmt.Sprintf("%s.%d", path, i)
		}
		err := os.Link(tmp.Name(), name)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", placeWithoutLink(tmp.Name(), name, err)
		}
	}
	return "", fmt.Errorf("%s: no free name up to %s.%d", path, path, maxSuffix-1)
}

// placeWithoutLink renames tmp to name on file systems without hard links,
// still refusing to replace an existing file.
func placeWithoutLink(tmp, name string, linkErr error) error {
	if _, err := os.Lstat(name); err == nil {
		return fmt.Errorf("%s: exists (hard link failed: %v)", name, linkErr)
	}
	return os.Rename(tmp, name)
}
