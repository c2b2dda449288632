# mpicoll: set up, test, benchmark. Everything installs into $(VENV), MPI included
# (the mpich wheel). Every mpiexec runs under `timeout`: a stuck job fails, never hangs.

PYTHON  ?= python3
VENV    ?= .venv
PY      := $(VENV)/bin/python
MPIEXEC ?= $(VENV)/bin/mpiexec
TIMEOUT ?= 900
PYTEST  := $(PY) -m pytest -q -x --with-mpi -p no:cacheprovider
EXTRAS  ?= mpich,torch,paddle,jax,test

# tests that launch their own jobs (tests/_launch.py) use the same launcher
export MPIEXEC

.PHONY: venv example test test-1 test-2 test-4 test-mpich test-openmpi bench clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[$(EXTRAS)]'
	touch $@

## The main example, 4 ranks on the embedded MPICH.
example: venv
	timeout 300 $(MPIEXEC) -n 4 $(PY) examples/quickstart.py

## The whole suite: 1 rank (includes the tests that launch their own mpiexec jobs),
## then 2 and 4 ranks (4 ranks on 2 cores is oversubscribed, which must work).
test: venv
	timeout $(TIMEOUT) $(PYTEST) tests
	timeout $(TIMEOUT) $(MPIEXEC) -n 2 $(PYTEST) tests
	timeout $(TIMEOUT) $(MPIEXEC) -n 4 $(PYTEST) tests

## Both MPI implementations: MPICH (the default venv) and Open MPI (its own venv).
test-mpich: test

test-openmpi:
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	OMPI_MCA_rmaps_base_oversubscribe=1 \
	$(MAKE) test VENV=.venv-ompi EXTRAS=openmpi,torch,paddle,jax,test \
		MPIEXEC="$(CURDIR)/.venv-ompi/bin/mpiexec --oversubscribe"

test-%: venv
	timeout $(TIMEOUT) $(MPIEXEC) -n $* $(PYTEST) tests

## OSU-style benchmark: mpicoll vs raw mpi4py (JSON + table in bench-results/).
bench: venv
	mkdir -p bench-results
	timeout 1800 $(MPIEXEC) -n 2 $(PY) -m mpicoll.bench --out bench-results/np2.json
	timeout 1800 $(MPIEXEC) -n 4 $(PY) -m mpicoll.bench --out bench-results/np4.json

clean:
	rm -rf $(VENV) build *.egg-info bench-results
