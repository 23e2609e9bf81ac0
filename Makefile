# Set-up and entry points. `make demo` runs the main job on the real data and ends with the README's first command
# (the advisor on a shipped example launch file); `make test` runs the tests.
# Both create .venv/ (the package and its CLI, .venv/bin/rlvrambench) when it is missing or stale. `make test-fast`
# runs the unit layer alone (pytest -m unit: a generated mini release, no real data, no server).
#
# The release copy: RLVRAMBENCH_SOURCE, the one name the package, the CLI, the metric and the docs read (a folder, or
# a Hub repo id for `make demo`; the tests need a folder). Default: ../shared/rlvrambench/hub beside the checkout.
# RLVRAMBENCH_SNAPSHOT and SNAPSHOT, its older names, are still honoured when RLVRAMBENCH_SOURCE is not set.
PYTHON ?= python3
VENV := .venv
OLAH_VENV := .venv-olah
RLVRAMBENCH_SOURCE ?= $(or $(RLVRAMBENCH_SNAPSHOT),$(SNAPSHOT),$(abspath ../shared/rlvrambench/hub))
export RLVRAMBENCH_SOURCE

.PHONY: install browser demo lint package-check test test-fast bench clean

$(VENV)/.installed: pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e '.[test,plots,release]'
	touch $@

$(OLAH_VENV)/.installed:
	test -x $(OLAH_VENV)/bin/python || $(PYTHON) -m venv $(OLAH_VENV)
	$(OLAH_VENV)/bin/python -m pip install --quiet 'olah>=0.5.4'
	touch $@

install: $(VENV)/.installed

# Headless Chromium for the report test (Debian package; needs root). Without it that one test skips.
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq chromium >/dev/null) || echo "chromium not installed: the report rendering test will skip"

# The README's first command (will my run fit?): `make demo` ends with its answer.
FIRST_COMMAND := advise --verl example:qwen2.5-3b-grpo-lora --gpu H100

demo: $(VENV)/.installed
	$(VENV)/bin/rlvrambench --source "$(RLVRAMBENCH_SOURCE)" demo
	@printf '\n$$ rlvrambench %s\n' '$(FIRST_COMMAND)'
	$(VENV)/bin/rlvrambench --source "$(RLVRAMBENCH_SOURCE)" $(FIRST_COMMAND)

# Lint and types: ruff (rules and formatting) and mypy --strict, configured in pyproject.toml.
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# Packaging: sdist and wheel built with `build` and checked (twine, check-wheel-contents); the wheel installed alone
# into a fresh virtualenv outside the repository and used from a folder outside it (tests/test_packaging.py).
package-check: $(VENV)/.installed $(OLAH_VENV)/.installed
	OLAH_CLI=$(abspath $(OLAH_VENV))/bin/olah-cli $(VENV)/bin/python -m pytest -q tests/test_packaging.py

# The whole suite, packaging included, on two pytest-xdist workers (each with its own Hub server, HF_HOME and
# temporary folders; work stealing evens out the long tests). WORKERS=1 runs it in one process. The temporary
# folders live in a folder of this run alone (pytest keeps only the last three of its own numbered folders, so a
# long run on a machine where others run pytest could lose its module fixtures' folders); removed when all pass.
WORKERS ?= 2
# The set-up runs two jobs at a time (the two virtualenvs are installed side by side, then lint beside the browser).
# The package is byte-compiled before the tests: where PYTHONDONTWRITEBYTECODE is set, every interpreter the tests
# start would otherwise compile it again.
test:
	$(MAKE) --no-print-directory -j2 lint $(OLAH_VENV)/.installed browser
	$(VENV)/bin/python -m compileall -q -j 0 rlvrambench_hf
	basetemp=$$(mktemp -d /tmp/rlvrambench-pytest.XXXXXX) && \
	OLAH_CLI=$(abspath $(OLAH_VENV))/bin/olah-cli $(VENV)/bin/python -m pytest -q -n $(WORKERS) --dist worksteal \
		--basetemp=$$basetemp && rm -rf $$basetemp

# The unit layer: every core on a mini release the tests write (tests/minirelease.py); under a minute.
test-fast: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -q -m unit

bench: $(VENV)/.installed $(OLAH_VENV)/.installed
	for b in bench/bench_*.py; do OLAH_CLI=$(abspath $(OLAH_VENV))/bin/olah-cli $(VENV)/bin/python $$b || exit 1; done

clean:
	rm -rf $(VENV) $(OLAH_VENV) build dist *.egg-info
