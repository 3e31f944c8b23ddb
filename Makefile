# rcclx-tests: `make` builds the perf binaries and the results tool into build/, `make test` runs the tests.
GO      ?= go
export CGO_ENABLED := 0
BINS    := all_reduce_perf all_gather_perf alltoall_perf reduce_scatter_perf broadcast_perf reduce_perf \
           gather_perf scatter_perf sendrecv_perf alltoallv_perf hypercube_perf all_reduce_bias_perf rcclx-results \
           rcclx-doctor

.PHONY: all build test lint bench clean
all: build

build: $(addprefix build/,$(BINS))

build/%: FORCE
	$(GO) build -o $@ ./cmd/$*

test: lint
	$(GO) test -count=1 -timeout 30m ./...

# go vet, gofmt, then staticcheck and errcheck where they are installed or installable (scripts/lint.sh).
lint:
	$(GO) vet ./...
	GO=$(GO) scripts/lint.sh

# Speed targets live here, not in unit tests (see docs/PERFORMANCE.md).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./hostengine/ ./numeric/

clean:
	rm -rf build

.PHONY: FORCE
FORCE:
