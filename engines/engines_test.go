package engines

import (
	"slices"
	"testing"
)

func TestRegistry(t *testing.T) {
	names := Names()
	if names[0] != Auto || !slices.Contains(names, "host") {
		t.Fatalf("Names() = %v", names)
	}
	for _, name := range names[1:] {
		e, err := New(name)
		if err != nil || e.Name() != name {
			t.Errorf("New(%q) = %v, %v", name, e, err)
		}
	}
	// The host engine is always available, so auto finds an engine on any machine.
	if e, err := New(Auto); err != nil || !slices.Contains(names, e.Name()) {
		t.Errorf("New(auto) = %v, %v", e, err)
	}
	if _, err := New("nope"); err == nil {
		t.Error("New(nope) succeeded")
	}
}

func TestReaders(t *testing.T) {
	// auto reads what the engine it picks reads, as the run will (host where no GPU is found).
	picked, err := New(Auto)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{"auto": {picked.Name()}, "host": {"host"}, "gpu": {"gpu"}} {
		if got, ok := Readers(name); !ok || !slices.Equal(got, want) {
			t.Errorf("Readers(%s) = %v, %v; want %v", name, got, ok, want)
		}
	}
	for _, name := range []string{"vendor", "nope"} {
		if got, ok := Readers(name); ok {
			t.Errorf("Readers(%s) = %v, ok", name, got)
		}
	}
}
