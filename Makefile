# haste-compute: every command sets up what it needs (a .venv and the pinned npm packages).
SHELL := /bin/bash
.DEFAULT_GOAL := help
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PIP := $(PY) -m pip install --disable-pip-version-check --no-compile
# The installer (make install): a pinned uv, itself installed with pip.
UV ?= uv==0.13.8
NODE_STAMP := node_modules/.installed
PYTEST_ARGS ?=
# make test runs the suite in this many pytest-xdist workers; tests sharing a fixture stay on one (tests/workers.py).
# One more than two cores: a third fills the time the others wait on processes and polls (docs/adr/0033).
PYTEST_WORKERS ?= 3
# The suite, the demo and the benches start many interpreters (hosts, the CLI, workloads), each importing the app:
# they keep their bytecode (under the venv), also where PYTHONDONTWRITEBYTECODE is set, which made each compile it
# again (ADR 0033), and made a bench's workloads pay for it.
KEEP_BYTECODE := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/$(VENV)/pycache
BACKEND ?= local
JOBS ?= 200
LOAD_JOBS ?= 1000

.PHONY: help install browser test check lint typecheck demo dev bench bench-scale chaos soak mutation package clean

help: ## List the commands
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

PACKAGE_DIR ?= dist

# hastelib/dev (hastegeo-dev: development host, test doubles, package builder) is development only:
# never part of the deployment package (docs/adr/0013).
$(STAMP): requirements.txt requirements-dev.txt hastelib/pyproject.toml hastelib/dev/pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) is required"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	@# uv installs the same pins as pip in a fifth of the time (docs/adr/0034); pip where uv cannot be had.
	@# No bytecode either way (pip: --no-compile): it is written on first import, for what something imports
	@# (make test writes it under the venv even where PYTHONDONTWRITEBYTECODE is set: KEEP_BYTECODE).
	@# uv reads none of pip's settings: pip_options.py hands it the package sources pip is configured with.
	@if $(PIP) --quiet $(UV) 2>/dev/null && sources="$$($(PY) hastelib/dev/src/hastegeo_dev/pip_options.py)" && \
	  $(VENV)/bin/uv pip install --python $(PY) --quiet $$sources -r requirements-dev.txt; then \
	  $(VENV)/bin/uv pip install --python $(PY) --quiet --no-deps -e ./hastelib -e ./hastelib/dev; \
	else \
	  echo "uv ($(UV)) could not be installed or could not install the pins: installing with pip"; \
	  $(PIP) --quiet -r requirements-dev.txt && $(PIP) --quiet --no-deps -e ./hastelib -e ./hastelib/dev; \
	fi
	@touch $@

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --prefer-offline --loglevel=error
	@touch $@

install: ## Create .venv and install the pinned Python and npm packages (side by side)
	@$(MAKE) --no-print-directory -j2 --output-sync=target $(STAMP) $(NODE_STAMP)

# The browser tests drive Debian's chromium through Playwright (Playwright's own browser download cannot
# work here). Installed when missing and running as root (CI is); otherwise say what to run and fail.
browser: ## Make sure /usr/bin/chromium is there for the browser tests (tests/browser)
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing chromium for the browser tests"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null); \
	  else \
	    echo "chromium is missing: run 'sudo apt-get install -y chromium' (tests/browser drive /usr/bin/chromium)"; exit 1; \
	  fi; \
	fi
	@test -x /usr/bin/chromium || { echo "chromium could not be installed: /usr/bin/chromium is missing"; exit 1; }

lint: $(STAMP) $(NODE_STAMP) ## ruff, ESLint, shellcheck, hadolint, actionlint (shellcheck on run: blocks), azure.yaml and host.json against their schemas
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	node_modules/.bin/eslint --max-warnings 0 api/console_static hastelib/dev/src tests/integration/devhost
	git ls-files -z '*.sh' | xargs -0 $(VENV)/bin/shellcheck
	git ls-files -z '*Dockerfile*' | xargs -0 $(VENV)/bin/hadolint
	@# actionlint runs shellcheck over every `run:` block when it finds it on PATH (the venv's).
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/actionlint
	$(VENV)/bin/check-jsonschema --schemafile infra/schemas/azure.yaml.json azure.yaml
	$(VENV)/bin/check-jsonschema --schemafile infra/schemas/host.json host.json

typecheck: $(STAMP) ## mypy (strict)
	$(VENV)/bin/mypy

# Lint and types run beside the tests (their output follows the tests'): the tests leave a core idle at times.
# Any failure fails the run, pytest's "no tests collected" (5) included.
test: install browser ## Run the whole suite (lint, types, unit, integration against Azurite, end to end, browser)
	@checks_log=$$(mktemp); \
	$(MAKE) --no-print-directory -j2 --output-sync=target lint typecheck >"$$checks_log" 2>&1 & checks=$$!; \
	$(KEEP_BYTECODE) $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --no-loadscope-reorder $(PYTEST_ARGS); tests=$$?; \
	wait $$checks; checked=$$?; cat "$$checks_log"; rm -f "$$checks_log"; \
	[ $$checked -eq 0 ] || echo "lint or typecheck failed (above)"; \
	[ $$tests -eq 0 ] || echo "the tests failed (pytest exit status $$tests)"; \
	[ $$tests -eq 0 ] && [ $$checked -eq 0 ]

check: test ## Alias of test: what CI runs

demo: install ## Start the embedded stack and run a real job end to end through the HTTP API (KEEP=1: serve the console after, until Ctrl-C)
	$(KEEP_BYTECODE) $(PY) -m hastegeo_dev demo --backend $(BACKEND) $(if $(filter 1 true yes,$(KEEP)),--serve)

dev: install ## Start Azurite and the development Functions host (and the web console) until Ctrl-C; traces: haste trace <job-id>
	$(KEEP_BYTECODE) HASTE_OTEL_EXPORT=$${HASTE_OTEL_EXPORT:-file:$(CURDIR)/.haste/otel.jsonl} $(PY) -m hastegeo_dev dev

bench: install ## Bare subprocess vs untraced vs traced pipeline (JOBS=200, BENCH_ROUNDS=5 rotating rounds, then TOGETHER_ROUNDS=6 with both stacks at once for tracing's cost), a rate-limited burst (LOAD_JOBS=1000), per-workload runtime and memory, fair share (FAIR_JOBS=1000, and with a group of FAIR_GROUP_ITEMS), a group against single submits (GROUP_ITEMS=1000, GROUP_LARGE=10000)
	$(KEEP_BYTECODE) $(PY) -m tests.bench.pipeline_bench --jobs $(JOBS) --rounds $${BENCH_ROUNDS:-5} --together $${TOGETHER_ROUNDS:-6}
	$(KEEP_BYTECODE) $(PY) -m tests.bench.load_bench --jobs $(LOAD_JOBS)
	$(KEEP_BYTECODE) $(PY) -m tests.bench.workloads_bench --sizes 512 4096
	$(KEEP_BYTECODE) $(PY) -m tests.bench.fairness_bench --jobs $${FAIR_JOBS:-1000} --group-items $${FAIR_GROUP_ITEMS:-1000}
	$(KEEP_BYTECODE) $(PY) -m tests.bench.group_bench --items $${GROUP_ITEMS:-1000} --large $${GROUP_LARGE:-10000}

bench-scale: install ## Store costs with 1,000 / 10,000 / 100,000 finished jobs (SCALE_SIZES), then following 1,000 / 10,000 running ones (SCALE_RUNNING; a Batch and an Azure ML job followed for an hour), then how soon an end is seen per backend (NOTICE_JOBS)
	$(KEEP_BYTECODE) $(PY) -m tests.bench.scale_bench --sizes $${SCALE_SIZES:-1000 10000 100000} --running $${SCALE_RUNNING:-1000 10000}
	$(KEEP_BYTECODE) $(PY) -m tests.bench.notice_bench --jobs $${NOTICE_JOBS:-20}

chaos: install ## Faults while jobs run (CHAOS_JOBS=100): prints scenario, jobs, terminal, duplicates, lost events, leaks, ground truth
	$(KEEP_BYTECODE) HASTE_CHAOS_FULL=1 CHAOS_JOBS=$${CHAOS_JOBS:-100} $(PY) -m pytest tests/chaos -p no:cacheprovider -q

soak: install ## The stack for SOAK_MINUTES (30) at SOAK_RATE jobs/s with storage faults at random: memory, files, threads, queue depth over time, ground truth at the end (ADR 0027); not part of make test
	$(KEEP_BYTECODE) $(PY) -m tests.soak

mutation: install ## Mutation score of the pure core with cosmic-ray (MUTATION_MODULES=states,router,...); not part of make test
	$(PY) -m tests.mutation

package: ## Build the one deployment package: $(PACKAGE_DIR)/function-app.zip and its unpacked folder (docs/deploy.md)
	@# Standard library only (Python 3.11+): azd's prepackage hook and the deploy workflow need no .venv.
	PYTHONPATH=hastelib/dev/src $$(command -v $(PYTHON) || command -v python3) -m hastegeo_dev.package --out $(PACKAGE_DIR)

clean: ## Remove the virtualenv, npm packages, caches and the deployment package
	rm -rf $(VENV) node_modules .pytest_cache .mypy_cache .ruff_cache .haste dist
