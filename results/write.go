package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxSuffix bounds the search for a free name.
const maxSuffix = 10000

// Write stores rec as indented JSON at path without ever replacing an existing
// file: if path exists it tries path.0, path.1, ... like nccl-tests. The file
// appears complete or not at all (Aside). It returns the name used.
func Write(path string, rec *Record) (string, error) {
	data, err := Marshal(rec)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	a, err := CreateAside(path)
	if err != nil {
		return "", err
	}
	return a.Commit(data)
}

// Marshal is rec as Write stores it: indented JSON and a newline.
func Marshal(rec *Record) ([]byte, error) {
	data, err := json.MarshalIndent(withEmptyLists(rec), "", " ")
	return append(data, '\n'), err
}

// RCCLSchemaVersion is the version rccl-tests' -J writer puts in its files.
const RCCLSchemaVersion = 1

// MarshalRCCL is rec as rccl-tests' -J writer lays it out: version 1, one line without a newline, "/" escaped as
// "\/", the library's version under rccl_version, no per-iteration keys in config (rccl-tests has no -I), and
// in each row only the halves that ran (no null for the other). This suite's own keys stay.
func MarshalRCCL(rec *Record) ([]byte, error) {
	c := *withEmptyLists(rec)
	c.Version = RCCLSchemaVersion
	var in, out bytes.Buffer
	enc := json.NewEncoder(&in)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&c); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(&in)
	dec.UseNumber()
	type frame struct {
		obj  bool
		name string // the key whose value the container is (an array's elements keep it; "" at the top)
		n    int    // members written
	}
	var stack []*frame
	scalar := func(tok json.Token) ([]byte, error) {
		if s, ok := tok.(string); ok {
			var b bytes.Buffer
			e := json.NewEncoder(&b)
			e.SetEscapeHTML(false)
			err := e.Encode(s)
			return bytes.ReplaceAll(bytes.TrimSuffix(b.Bytes(), []byte("\n")), []byte("/"), []byte(`\/`)), err
		}
		return json.Marshal(tok)
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out.Bytes(), nil
		} else if err != nil {
			return nil, err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			out.WriteByte(byte(d))
			continue
		}
		var top *frame
		name := ""
		if len(stack) > 0 {
			top = stack[len(stack)-1]
			name = top.name
		}
		if top != nil && top.obj { // tok is a key: read its value too, and rename or drop the pair
			key := tok.(string)
			if tok, err = dec.Token(); err != nil {
				return nil, err
			}
			switch {
			case name == "" && key == "nccl_version":
				key = "rccl_version"
			case name == "config" && (key == "per_iter_timing" || key == "per_iter_skip"),
				name == "results" && tok == nil && (key == "out_of_place" || key == "in_place"):
				continue
			}
			if top.n++; top.n > 1 {
				out.WriteByte(',')
			}
			k, _ := scalar(key)
			out.Write(append(k, ':'))
			name = key
		} else if top != nil {
			if top.n++; top.n > 1 {
				out.WriteByte(',')
			}
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, &frame{obj: d == '{', name: name})
			out.WriteByte(byte(d))
			continue
		}
		b, err := scalar(tok)
		if err != nil {
			return nil, err
		}
		out.Write(b)
	}
}

// Aside is a result file written beside its final name and moved there only once complete, so that a reader
// never finds a truncated or empty file under that name (a full disk, a signal or a kill while writing leave
// nothing there). The part file (".NAME.part" in the same directory) is open, and locked, from the claim to the
// commit.
type Aside struct {
	part    *os.File
	name    string // the final name
	path    string // the name asked for
	index   int    // name is path (-1) or path.index
	replace bool   // the final name is replaced (rccl-tests' -X); else never (nccl-tests' -J)
}

// CreateAside claims, before a program runs, the first free name among path, path.0, path.1, ...
// (nccl-tests' naming) for a file written when it ends. A name is free when no file has it and no other live
// program claimed it (a part file whose lock is free was left by a program that died: it is taken over). A
// directory, a path ending in a separator and a directory where nothing can be created are errors naming path.
func CreateAside(path string) (*Aside, error) {
	if st, err := os.Stat(path); (err == nil && st.IsDir()) || strings.HasSuffix(path, string(filepath.Separator)) {
		return nil, fmt.Errorf("%s is a directory", path)
	}
	for i := -1; i < maxSuffix; i++ {
		name := suffixed(path, i)
		if _, err := os.Lstat(name); err == nil {
			continue
		}
		f, err := os.OpenFile(partName(name), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("cannot create %s: %v", name, pathErr(err))
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close() // another run's claim
			continue
		}
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, fmt.Errorf("cannot create %s: %v", name, pathErr(err))
		}
		if _, err := os.Lstat(name); err == nil { // taken between the look and the claim
			f.Close()
			_ = os.Remove(f.Name())
			continue
		}
		return &Aside{part: f, name: name, path: path, index: i}, nil
	}
	return nil, fmt.Errorf("no free name up to %s.%d", path, maxSuffix-1)
}

// ReplaceAside prepares to replace the regular file path (or to create it), as a program that truncates its
// output file would, but only once the new content is complete. A symbolic link is followed: the file it
// names is replaced. The new file keeps the old one's permissions.
func ReplaceAside(path string) (*Aside, error) {
	name := path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		name = resolved
	}
	// The pid tells the part files of live programs apart; one left by a dead one of that pid is reused.
	part := filepath.Join(filepath.Dir(name), fmt.Sprintf(".%s.%d.part", filepath.Base(name), os.Getpid()))
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, pathErr(err)
	}
	if st, err := os.Stat(name); err == nil {
		if err := f.Chmod(st.Mode().Perm()); err != nil {
			f.Close()
			_ = os.Remove(part)
			return nil, pathErr(err)
		}
	}
	return &Aside{part: f, name: name, path: path, replace: true}, nil
}

// Name is the name the file will have.
func (a *Aside) Name() string { return a.name }

// Commit writes data and moves it to its final name, which it returns. For a claimed name another program
// took meanwhile (one that does not claim names), the next free name is used. On an error nothing is left:
// not the part file, and nothing under the final name; a full disk says so.
func (a *Aside) Commit(data []byte) (string, error) {
	f := a.part
	if f == nil {
		return "", fmt.Errorf("writing %s: given up", a.name)
	}
	a.part = nil
	defer os.Remove(f.Name())
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		err = pathErr(err)
		if errors.Is(err, syscall.ENOSPC) {
			return "", fmt.Errorf("writing %s: the file system is full (%v); nothing was written under that name", a.name, err)
		}
		return "", fmt.Errorf("writing %s: %v; nothing was written under that name", a.name, err)
	}
	if a.replace {
		if err := os.Rename(f.Name(), a.name); err != nil {
			return "", fmt.Errorf("writing %s: %v", a.name, pathErr(err))
		}
		return a.name, nil
	}
	for i := a.index; i < maxSuffix; i++ {
		name := suffixed(a.path, i)
		err := os.Link(f.Name(), name)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return name, placeWithoutLink(f.Name(), name, err)
		}
	}
	return "", fmt.Errorf("%s: no free name up to %s.%d", a.path, a.path, maxSuffix-1)
}

// Discard gives the claim up, writing nothing. It may be called after Commit (it then does nothing).
func (a *Aside) Discard() {
	if a == nil || a.part == nil {
		return
	}
	_ = os.Remove(a.part.Name())
	_ = a.part.Close()
	a.part = nil
}

func suffixed(path string, i int) string {
	if i < 0 {
		return path
	}
	return fmt.Sprintf("%s.%d", path, i)
}

func partName(name string) string {
	return filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".part")
}

// pathErr is the cause of a file error without the path, which the callers name as the user gave it.
func pathErr(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
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

// placeWithoutLink renames tmp to name on file systems without hard links,
// still refusing to replace an existing file.
func placeWithoutLink(tmp, name string, linkErr error) error {
	if _, err := os.Lstat(name); err == nil {
		return fmt.Errorf("%s: exists (hard link failed: %v)", name, linkErr)
	}
	return os.Rename(tmp, name)
}
