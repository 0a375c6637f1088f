# ppdinfer: `make demo` runs the built-in example end to end, `make test` runs the tests.
# Both create .venv (Python >= 3.12) and install the package with its test extras on first use.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# First interpreter >= 3.12 that actually runs (pyenv shims may exist but refuse to run).
PYTHON_CANDIDATES := python3.13 python3.12 $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13) $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12)
BASE_PYTHON := $(shell for p in $(PYTHON_CANDIDATES); do \
	if $$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then echo $$p; break; fi; done)

.PHONY: demo test lint docs readme-figure bench notebooks reproduce covid covid-quick clean venv

venv: $(STAMP)

$(STAMP): pyproject.toml
	@if [ ! -x $(PY) ]; then \
		if [ -z "$(BASE_PYTHON)" ]; then \
			echo "ppdinfer needs Python >= 3.12 (PyMC 6 and ArviZ 1 require it): none of python3.13, python3.12 or ~/.pyenv/versions/3.1[23]*/bin/ runs here. Install Python 3.12 or 3.13 and retry." >&2; \
			exit 1; \
		fi; \
		echo "creating $(VENV) with $(BASE_PYTHON)"; \
		$(BASE_PYTHON) -m venv $(VENV); \
	fi
	@echo "installing ppdinfer with its test extras (PyMC, ArviZ, numba, matplotlib, ...) into $(VENV):"
	@echo "about 3 minutes on first use (pip lists each package as it goes); later runs skip this step"
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --progress-bar on -e '.[test]'
	@echo "compiling the PyMC layer's numba kernels into numba's cache (ppdinfer warmup: about 30 s, once), so"
	@echo "that the first ppdinfer.pymc.sample starts at once"
	-$(VENV)/bin/ppdinfer warmup
	@touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/ppdinfer demo

# The tests start with the lint and format check (ruff, configured in pyproject.toml).
test: lint
	@echo "running the tests, the docstring examples and the strict docs build on 2 worker processes (pytest-xdist,"
	@echo "a test file per worker): about 14 minutes on an idle 2-core machine (longer under load); the PyMC and"
	@echo "notebook files compile or execute for a minute or more, and the slowest tests are listed at the end"
	$(PY) -m pytest -n 2 --dist loadfile --durations=10

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# The documentation site in docs/_build/html, strictly: a warning (a broken reference, a public
# name without a docstring example) fails the build. The notebooks are shown executed and each
# case study's page shows a quick run's figures and claims; both are cached in
# docs/_build/ppd_cache while the code is unchanged (cold: about 5 minutes on 2 cores).
docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -n -b html docs docs/_build/html

# The README's figure, docs/_static/demo_posteriors.png: the figure of `make demo`, in 128 colours
# (about a third of the size).
readme-figure: $(STAMP)
	$(VENV)/bin/ppdinfer demo --no-progress --output build/readme_figure
	$(PY) -c 'from PIL import Image; Image.open("build/readme_figure/demo_posteriors.png").convert("RGB").quantize(128).save("docs/_static/demo_posteriors.png", optimize=True)'

# The teaching notebooks in JupyterLab (installs the `notebooks` extra on first use).
notebooks: $(STAMP)
	@$(VENV)/bin/python -c 'import jupyterlab' 2>/dev/null || { \
		echo "installing JupyterLab (the notebooks extra) into $(VENV): a minute or two on first use"; \
		$(PY) -m pip install --progress-bar on -e '.[notebooks]'; }
	$(VENV)/bin/jupyter lab notebooks/

bench: $(STAMP)
	$(PY) benchmarks/rejection_throughput.py
	$(PY) benchmarks/importance_scaling.py
	$(PY) benchmarks/county_pymc.py
	$(PY) benchmarks/wem_release.py
	$(PY) benchmarks/integer_release.py
	$(PY) benchmarks/congenial_release.py
	$(PY) benchmarks/knorm_release.py
	$(PY) benchmarks/kantorovich_plan.py
	$(PY) benchmarks/privacy_audit.py
	$(PY) benchmarks/memory_limits.py
	$(PY) benchmarks/national_pymc.py
	$(PY) benchmarks/covid_executors.py
	$(PY) benchmarks/epidemiologist_pymc.py

# The case studies (case_studies/<name>/, listed by `ppdinfer reproduce --list`): each writes
# its figures and report.md with the paper's claims checked in numbers. Resumes if interrupted.
reproduce: $(STAMP)
	$(VENV)/bin/ppdinfer reproduce --all

# The COVID-19 case study in full: 4 methods x 2 epsilons x 100 replicates of the 67 x 24 table,
# the coverage study, then figures and report in covid_results/report/.
covid: $(STAMP)
	$(VENV)/bin/ppdinfer reproduce covid_pa --results covid_results

# The same pipeline on 6 counties, 3 months and 3 replicates, in a few minutes.
covid-quick: $(STAMP)
	$(VENV)/bin/ppdinfer reproduce covid_pa --quick --results covid_quick

clean:
	rm -rf $(VENV) build *.egg-info
