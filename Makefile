# shortener: see README.md.
GO      ?= go
PKGS    ?= ./...
# The integration tests start real MariaDB, Redis and Sentinel processes;
# SHORTENER_INTEGRATION=1 makes a missing server a failure, not a skip.
TESTENV ?= SHORTENER_INTEGRATION=1

.PHONY: all build test unit vet fmt clean up down status

all: build

build:
	$(GO) build -o bin/ ./cmd/...

## test: every test, unit and integration, against real servers.
test: vet
	$(TESTENV) $(GO) test -race -count=1 -timeout 20m $(PKGS)

## unit: the tests that need no server (integration tests skip).
unit:
	$(GO) test -count=1 $(PKGS)

vet:
	$(GO) vet $(PKGS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1; }

clean:
	rm -rf bin
