# Development tasks for xuanwu.cluster. See docs/development.md.
#
#   make setup        create .venv (ansible-core 2.19) and .venv-2.16, link the collection
#   make test         unit, lint, sanity, integration and molecule, side by side; prints "suites: N passed, N failed"
#   make unit | lint | sanity | integration | molecule | bench | demo
#   make fuzz         every parser's fuzz tests with 10,000 examples each (make unit runs 150)
#   make docs         regenerate every generated page: docs/checks.md, profiles.md, facts.md, fault-corpus.md, the probe table
#   make wheel        the controller package (the xuanwu command and service, xuanwu-run-diff): dist/xuanwu-<version>-py3-none-any.whl
#   make molecule     the roles in podman containers (root; docs/molecule.md); MOLECULE_SCENARIOS=chrony

SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
.DEFAULT_GOAL := help

VENV      := .venv
VENV_216  := .venv-2.16
CONTROLLER_VENVS := $(VENV) $(VENV_216)
STAMP     := $(VENV)/.requirements.sha256
PYTEST_ARGS ?= -q
SUITES    := unit lint sanity integration molecule

.PHONY: help setup test unit fuzz docs wheel lint sanity integration molecule bench demo demo-bundles clean

help:
	@sed -n 's/^#   //p' Makefile

setup:
	bash scripts/setup.sh

# Suites need the venvs; setup.sh is idempotent and quick when nothing changed.
$(STAMP): scripts/setup.sh $(wildcard requirements/*.txt)
	bash scripts/setup.sh

unit: $(STAMP)
	$(VENV)/bin/python -m pytest $(PYTEST_ARGS) tests/unit

# The fuzz tests of tests/unit with the "fuzz" hypothesis profile (tests/conftest.py): 10,000
# examples per test, i.e. per parser; the statistics show the examples each test ran.
FUZZ_TESTS := $(wildcard tests/unit/plugins/module_utils/test_fuzz_*.py)

fuzz: $(STAMP)
	XUANWU_HYPOTHESIS_PROFILE=fuzz $(VENV)/bin/python -m pytest $(PYTEST_ARGS) --hypothesis-show-statistics $(FUZZ_TESTS)

# The generated pages (scripts/docs.py, one function per page): docs/checks.md, docs/profiles.md, the probe table of
# docs/capture-format.md, docs/fault-corpus.md and docs/facts.md. The unit tests compare each page with what the same
# functions return, and fail until this has run.
docs: $(STAMP)
	$(VENV)/bin/python scripts/docs.py

# The package of src/xuanwu for users of the collection, whose tarball leaves it out (pip install the wheel): built
# from a copy of src/ and pyproject.toml with .venv's setuptools, offline (scripts/build-wheel.sh).
wheel: $(STAMP)
	bash scripts/build-wheel.sh dist

lint: $(STAMP)
	bash scripts/lint.sh

sanity: $(STAMP)
	bash scripts/sanity.sh

# The integration tests call ansible-playbook from PATH: run them once per controller venv, both at once
# (each with its own fact cache and log; the logs are printed when both are done); with .venv-2.16 only the tests
# marked both_controllers run (tests/conftest.py). pytest exits 5 when it
# collects nothing; while tests/integration holds no test file the suite is reported as skipped.
INTEGRATION_TESTS := $(shell find tests/integration -name 'test_*.py' 2>/dev/null)

integration: $(STAMP)
	@if [ -z "$(INTEGRATION_TESTS)" ]; then echo "integration: no test_*.py under tests/integration; skipped"; exit 0; fi; \
	mkdir -p .cache; pids=""; \
	for venv in $(CONTROLLER_VENVS); do \
		log=".cache/integration$$venv.log"; \
		echo "== integration with $$($$venv/bin/ansible --version | sed -n 1p) ($$venv): log $$log"; \
		( PATH="$(CURDIR)/$$venv/bin:$$PATH" ANSIBLE_CACHE_PLUGIN_CONNECTION="$(CURDIR)/.cache/facts$$venv" \
		  $$venv/bin/python -m pytest $(PYTEST_ARGS) tests/integration > "$$log" 2>&1 ) & pids="$$pids $$!"; \
	done; \
	rc=0; for pid in $$pids; do wait $$pid || rc=1; done; \
	for venv in $(CONTROLLER_VENVS); do echo; echo "== integration ($$venv)"; cat ".cache/integration$$venv.log"; done; \
	exit $$rc

# The roles in real containers: the image (built when missing or outdated), then every scenario
# under molecule/ (or MOLECULE_SCENARIOS), MOLECULE_JOBS (default 2) at once. Needs root (podman, apt).
molecule: $(STAMP)
	bash scripts/build-test-image.sh
	bash scripts/molecule.sh $(MOLECULE_SCENARIOS)

# Pass options with BENCH_ARGS, e.g. make bench BENCH_ARGS="--hosts 50 --rounds 3".
bench: $(STAMP) demo-bundles
	@if [ ! -f bench/run.py ]; then echo "bench: bench/run.py does not exist yet" >&2; exit 2; fi
	$(VENV)/bin/python bench/run.py $(BENCH_ARGS)

# The demo replays capture bundles; they are built from the fixture corpus when missing. Three of
# the four demo nodes carry a fault on purpose, so the playbook exits 2 when the checks work.
demo-bundles: $(STAMP)
	@if [ ! -d inventories/demo-bundles ] && [ -f scripts/make_bundles.py ]; then \
		echo "$(VENV)/bin/python scripts/make_bundles.py demo"; $(VENV)/bin/python scripts/make_bundles.py demo; fi

demo: $(STAMP) demo-bundles
	@echo "$(VENV)/bin/ansible-playbook -i inventories/demo playbooks/validate.yml"; \
	rc=0; $(VENV)/bin/ansible-playbook -i inventories/demo playbooks/validate.yml || rc=$$?; \
	if [ $$rc -eq 2 ]; then echo "demo: exit 2 = some hosts failed validation (expected: gpu-node02..04 carry faults); report under reports/"; fi; \
	exit $$rc

# Every suite runs even when an earlier one fails; the exit status is non-zero if any failed. The suites run
# as jobs on TEST_LANES lanes at once (default: the CPUs), the longest first: scripts/test.py.
test: $(STAMP)
	$(VENV)/bin/python scripts/test.py $(SUITES)

clean:
	rm -rf .cache tests/output .pytest_cache .hypothesis reports
