package plots

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// checkOutputs refuses, before anything is drawn, no output, an output of an unknown format, one named twice,
// and one that exists (a symbolic link included) unless force.
func checkOutputs(outs []string, force bool) error {
	if len(outs) == 0 {
		return fmt.Errorf("-o: no output file given")
	}
	seen := map[string]bool{}
	for _, out := range outs {
		if _, err := formatOf(out); err != nil {
			return err
		}
		abs, err := filepath.Abs(out)
		if err != nil {
			return err
		}
		if seen[abs] {
			return fmt.Errorf("-o %s: given twice", out)
		}
		seen[abs] = true
		st, err := os.Lstat(out)
		switch {
		case err == nil && st.IsDir():
			return fmt.Errorf("-o %s: is a directory", out)
		case err == nil && !force:
			return fmt.Errorf("-o %s: exists; --force replaces it", out)
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("-o %s: %v", out, err)
		}
	}
	return nil
}

// save writes the figure to each output in the format of its extension.
func (f *figure) save(outs []string, force bool) error {
	for _, out := range outs {
		ext, err := formatOf(out)
		if err != nil {
			return err
		}
		data, err := f.render(ext)
		if err != nil {
			return err
		}
		if err := writeFile(out, data, force); err != nil {
			return fmt.Errorf("-o %s: %v", out, err)
		}
	}
	return nil
}

// writeFile puts data at path whole or not at all: it is written to a temporary file in the same directory,
// then linked to path, which fails where anything exists there, a symbolic link included; with force it is
// renamed onto path instead, which replaces a link itself, never the file the link points to.
func writeFile(path string, data []byte, force bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if force {
		return os.Rename(tmp.Name(), path)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return errors.New("exists; --force replaces it")
		}
		// A file system without hard links: rename, still refusing what appeared since the check.
		if _, lerr := os.Lstat(path); lerr == nil {
			return errors.New("exists; --force replaces it")
		}
		return os.Rename(tmp.Name(), path)
	}
	return nil
}
