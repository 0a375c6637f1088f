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

.PHONY: demo test bench covid covid-quick clean venv

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
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/ppdinfer demo

test: $(STAMP)
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) benchmarks/rejection_throughput.py
	$(PY) benchmarks/county_pymc.py
	$(PY) benchmarks/wem_release.py

# The COVID-19 case study in full: 4 methods x 2 epsilons x 100 replicates of the 67 x 24 table,
# the coverage study, then figures and report in covid_results/report/. Resumes if interrupted.
COVID_DATA ?= ../shared/data/covid_pa
covid: $(STAMP)
	$(VENV)/bin/ppdinfer covid synthesize --data $(COVID_DATA) --results covid_results --replicates 100
	$(VENV)/bin/ppdinfer covid infer --data $(COVID_DATA) --results covid_results --replicates 50
	$(VENV)/bin/ppdinfer covid report --data $(COVID_DATA) --results covid_results

# A few counties, months and replicates: the whole pipeline in about a minute.
covid-quick: $(STAMP)
	$(VENV)/bin/ppdinfer covid synthesize --data $(COVID_DATA) --results covid_quick --replicates 3 --sweeps 200 \
		--counties Allegheny Erie Cameron Forest Potter Sullivan --months 2020-11 2020-12 2021-01
	$(VENV)/bin/ppdinfer covid infer --data $(COVID_DATA) --results covid_quick --replicates 3 \
		--counties Allegheny Erie Cameron Forest Potter Sullivan --month 2021-01
	$(VENV)/bin/ppdinfer covid report --data $(COVID_DATA) --results covid_quick \
		--counties Allegheny Erie Cameron Forest Potter Sullivan --months 2020-11 2020-12 2021-01

clean:
	rm -rf $(VENV) build *.egg-info
