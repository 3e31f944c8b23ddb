package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// Load reads a record written by this suite or by nccl-tests (-J, schema 3).
func Load(path string) (*Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseJSON(path, data)
}

func parseJSON(name string, data []byte) (*Record, error) {
	var rec Record
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&rec); err != nil {
		return nil, fmt.Errorf("%s: %s", name, jsonErrorWhere(data, err))
	}
	return &rec, nil
}

// jsonErrorWhere adds the line of a JSON syntax or type error.
func jsonErrorWhere(data []byte, err error) string {
	var off int64 = -1
	switch e := err.(type) {
	case *json.SyntaxError:
		off = e.Offset
	case *json.UnmarshalTypeError:
		off = e.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return "invalid JSON: " + err.Error()
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	return fmt.Sprintf("line %d (offset %d): invalid JSON: %v", line, off, err)
}
