# linkfabric — the two commands a newcomer runs are `make demo` and `make test`.
SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin:$(HOME)/go/bin
GO ?= go
BIN := bin/linkfabric
PKGS := ./...
FUZZTIME ?= 60s

.PHONY: all build deps test race integration soak unit vet generate demo bench stress fct goodput fuzz clean image

all: build

deps:
	@bash scripts/deps.sh

build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/linkfabric

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	@GO=$(GO) bash scripts/check-package-map.sh

# Unit tests once, under the race detector where goroutines meet (-short skips
# the root integration tests and the long simulations), then the packages with
# integration tests.
# Integration tests need root (namespaces, XDP); they skip themselves when not
# root. Packages run one at a time: the integration tests carry traffic and
# the machine has two cores. Long runs are reduced; `make soak` runs every
# test at full size (LINKFABRIC_FULL=1), the long simulations included.
test: deps vet build race integration

# The packages without root tests carry no traffic (simulations on a virtual
# clock, decoders, fuzz seeds): two at a time, one core each. The race
# detector runs where goroutines can meet (scripts/goroutine-pkgs.sh); the
# single-goroutine packages run without it, which it would only slow
# (linkguardian's simulations took 128 s under it). The packages with root
# tests run under the race detector with the others, two at a time too:
# -short skips their root tests, so what runs here is their unit tests
# (the integration pass runs the rest, one package at a time).
race:
	@kinds=$$(GO=$(GO) bash scripts/goroutine-pkgs.sh $(UNIT_PKGS)) && \
	  race=$$(awk '$$1 == "race" {print $$2}' <<<"$$kinds") && single=$$(awk '$$1 == "single" {print $$2}' <<<"$$kinds") && \
	  set -x && \
	  $(GO) test -race -short -p 2 -count=1 -timeout 20m $$race $(ROOT_PKGS) && \
	  $(GO) test -short -p 2 -count=1 -timeout 20m $$single

# The packages whose tests need root, and the others.
ROOT_PKGS = $(shell { git ls-files '*_test.go' 2>/dev/null || find . -name '*_test.go'; } | xargs grep -l -e RequireRoot -e netns.TestUp -e Geteuid | xargs -n1 dirname | sort -u | sed 's|^\./||; s|^|./|')
UNIT_PKGS = $(filter-out $(ROOT_PKGS),$(shell $(GO) list -f '{{.Dir}}' $(PKGS) | sed 's|^$(CURDIR)|.|'))

integration:
	$(GO) test -p 1 -count=1 -timeout 40m $(ROOT_PKGS)

soak: deps build
	LINKFABRIC_FULL=1 $(GO) test -p 1 -count=1 -timeout 90m $(PKGS)

unit:
	$(GO) test -count=1 -short $(PKGS)

# Rebuild the eBPF objects and their Go bindings (needs clang; the results are committed).
generate: deps
	$(GO) generate ./bpf/...

demo: deps build
	./$(BIN) demo

bench: deps build
	./$(BIN) bench

fuzz:
	@for p in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list 'Fuzz.*' $$p 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$p $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$p || exit 1; \
	  done; \
	done

# The container image (deploy/Containerfile, docs/container.md): a static
# binary (no cgo; the eBPF objects are embedded) in an image FROM scratch,
# built with podman, or docker when its daemon answers. Without either the
# binary is still built and the command to run elsewhere is printed.
IMAGE ?= linkfabric:latest
IMAGE_BIN := bin/image/linkfabric
image:
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -trimpath -o $(IMAGE_BIN) ./cmd/linkfabric
	@build="build -f deploy/Containerfile -t $(IMAGE) $(dir $(IMAGE_BIN))"; \
	  if command -v podman >/dev/null; then set -x; podman $$build; \
	  elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then set -x; docker $$build; \
	  else \
	    if command -v docker >/dev/null; then why="docker is installed but its daemon does not answer (docker info fails)"; \
	    else why="neither podman nor docker is installed"; fi; \
	    echo "make image: $$why: built $(IMAGE_BIN) only. Build the image where one is, from this checkout:"; \
	    echo "  podman $$build    # or: docker $$build"; \
	  fi

clean:
	rm -rf bin out
