package collectives

import (
	"encoding/json"
	"fmt"
)

// Exchange sends local to every process of w and returns every process's value, in rank order; what names the
// values in errors.
func Exchange[T any](w World, what string, local T) ([]T, error) {
	if w.Size() == 1 {
		return []T{local}, nil
	}
	data, err := json.Marshal(local)
	if err != nil {
		return nil, fmt.Errorf("gathering %s: %w", what, err)
	}
	all, err := w.AllGather(data)
	if err != nil {
		return nil, fmt.Errorf("gathering %s: %w", what, err)
	}
	out := make([]T, len(all))
	for i, d := range all {
		if err := json.Unmarshal(d, &out[i]); err != nil {
			return nil, fmt.Errorf("gathering %s from process %d: %w", what, i, err)
		}
	}
	return out, nil
}
