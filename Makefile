# agentsky: the two commands are `make dev` and `make test`. Everything else is a piece of them.
# Each target installs what it needs and is missing (scripts/setup.sh), so a fresh clone works.
SHELL := /bin/bash
PORT ?= 8787
export PORT

.PHONY: dev test bench bench-ceiling bench-memory profile setup build e2e lint clean help deploy-check

help:
	@echo "make dev    install what is missing, build, migrate local D1, serve on http://127.0.0.1:$(PORT)"
	@echo "make test   host tests, the sandbox image, clippy (host + wasm32), fmt, build, end-to-end + conformance against wrangler dev"
	@echo "make bench  latency/throughput, D1 queries per call and wasm size, against a private wrangler dev"
	@echo "make bench-ceiling  a hello-world Worker bare, after one D1 query, and after a read tool's batch: the ceilings"
	@echo "make bench-memory  the Worker's JS heap, wasm memory and workerd RSS across a long fuzz and a long session"
	@echo "make profile  CPU profile of tools/call list_agents and tools/list in the Worker (names kept)"
	@echo "make deploy-check   lint wrangler.toml's production env and dry-run its deploy (offline)"
	@echo "make setup | build | e2e | lint | clean"

dev:
	@bash scripts/dev.sh

test:
	@bash scripts/test.sh

bench: setup build
	@bash bench/run.sh

# req/s of a hello-world Worker bare, after one D1 query, and after a batch shaped like a read tool's.
bench-ceiling: setup
	@bash bench/d1_ceiling.sh

# JS heap, wasm memory and workerd RSS before, during and after a long fuzz and a long session.
bench-memory: setup
	@bash bench/memory.sh

profile: setup
	@bash bench/profile.sh

setup:
	@bash scripts/setup.sh

build: setup
	@bash scripts/build.sh

# The end-to-end suites alone (assumes a current build).
e2e: build
	@bash tests/e2e/run.sh

lint: setup
	@bash scripts/lint.sh

# Before a production deploy: lints [env.production] (bindings, migrations, cron, queue and its DLQ,
# compatibility date, observability, PUBLIC_BASE_URL, secrets) and runs `wrangler deploy --dry-run
# --env production` offline.
deploy-check: setup
	@bash scripts/deploy-check.sh

clean:
	rm -rf build tests/e2e/.state bench/.state
