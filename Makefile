# rcclx-tests: `make` builds the perf binaries and the results tool into build/, `make test` runs the tests.
GO      ?= go
SHELL   := bash
export CGO_ENABLED := 0
BINS    := all_reduce_perf all_gather_perf alltoall_perf reduce_scatter_perf broadcast_perf reduce_perf \
           gather_perf scatter_perf sendrecv_perf alltoallv_perf hypercube_perf all_reduce_bias_perf rcclx-results \
           rcclx-doctor

.PHONY: all build test lint bench clean
all: build

build: $(addprefix build/,$(BINS))

# make RCCL=1 links RCCL as rccl-tests' binaries do (docs/REFERENCE.md, "Linked against RCCL"): every binary but
# rcclx-results lists librccl.so.1 as needed, found through the run path $(NCCL_HOME):$(NCCL_HOME)/lib where
# NCCL_HOME is set (RCCL's or RCCLX's own build), else $(ROCM_PATH)/lib.
ROCM_PATH ?= /opt/rocm
ifeq ($(RCCL),1)
$(addprefix build/,$(filter-out rcclx-results,$(BINS))): LINKFLAGS = -tags rccl \
	-ldflags=-r=$(if $(NCCL_HOME),$(NCCL_HOME):$(NCCL_HOME)/lib,$(ROCM_PATH)/lib)
endif

build/%: FORCE
	$(GO) build $(LINKFLAGS) -o $@ ./cmd/$*

# go test's lines as plain `go test` prints them, then one line naming the tests skipped for want of a GPU and
# why (internal/testsum reads go test -json); the exit status is go test's.
test: lint build/testsum
	set -o pipefail; $(GO) test -json -count=1 -timeout 30m ./... | build/testsum

build/testsum: FORCE
	$(GO) build -o $@ ./internal/testsum

# go vet, gofmt, then staticcheck and errcheck at the versions go.mod's tool directives pin (scripts/lint.sh).
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
