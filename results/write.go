package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// maxSuffix bounds the search for a free name in Write.
const maxSuffix = 10000

// Write stores rec as indented JSON at path without ever replacing an existing
// file: if path exists it tries path.0, path.1, ... like nccl-tests. The file
// appears atomically (written to a temporary file in the same directory, then
// linked into place). It returns the name used.
func Write(path string, rec *Record) (string, error) {
	data, err := json.MarshalIndent(withEmptyLists(rec), "", " ")
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return writeNew(path, append(data, '\n'))
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
