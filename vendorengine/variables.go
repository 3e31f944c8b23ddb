package vendorengine

import (
	"os"
	"path/filepath"

	"github.com/rcclx-tests/rcclx-tests/collectives"
	"github.com/rcclx-tests/rcclx-tests/nccl"
)

// LibraryReads searches the library file that Open would load (--lib, the default names, pip's wheels) for the
// variable's name; it needs no GPU and loads nothing.
func (engine) LibraryReads(cfg collectives.Config, name string) (bool, string, error) {
	path, err := nccl.Resolve(cfg.Library, os.Getenv, filepath.Glob)
	if err != nil {
		return false, "", err
	}
	read, err := nccl.FileContains(path, name)
	return read, path, err
}
