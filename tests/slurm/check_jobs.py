"""Checks on the output files of the Slurm lane's jobs (tests/slurm/run.sh).

Usage: python check_jobs.py KIND OUT [ARGS]
  example OUT EXIT TEST N   the job ran an example under a labelling launcher; the test
                            function TEST of tests/test_examples.py (or MODULE.TEST of
                            tests/MODULE.py) checks the output of each of its N ranks,
                            exactly as it checks an mpiexec job
  ended OUT N               a deadlock.py job that Slurm ended (scancel, time limit):
                            every rank that could says it received SIGTERM while waiting
  raised OUT                raise_on_one_rank.py: the traceback is in the output
  probe OUT                 pmi_probe.sh: which launcher starts which MPI correctly
Prints one line that says what was checked; exit status 1 when a check fails.

OUT.log is the job's output file (sbatch --output). Ranks' outputs are told apart by the
launchers' line labels, ``srun --label`` ("3: ") and Open MPI's ``mpiexec --output tag``
("[1,3]<stdout>: "), or come in files of their own, OUT.out.<rank> and OUT.err.<rank>
(Hydra's ``mpiexec -outfile-pattern/-errfile-pattern``: its ``-prepend-rank`` labels the
chunks it forwards, not lines, and ranks' lines run into each other).
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from types import SimpleNamespace

TESTS = Path(__file__).resolve().parent.parent
LABEL = re.compile(r"^(?:\s*(\d+): |\[\d+,(\d+)\]<std(?:out|err)>: )(.*)$")


def read(base: str) -> tuple[str, dict[int, str]]:
    """The job's whole output, and each rank's (its stdout, then its stderr)."""
    log = Path(base + ".log")
    ranks: dict[int, list[str]] = {}
    text = log.read_text(errors="replace") if log.exists() else ""
    for line in text.splitlines():
        m = LABEL.match(line)
        if m:
            ranks.setdefault(int(m.group(1) or m.group(2)), []).append(m.group(3))
    files = []
    for path in log.parent.iterdir():
        m = re.fullmatch(re.escape(log.stem) + r"\.(out|err)\.(\d+)", path.name)
        if m:
            files.append((int(m.group(2)), m.group(1) == "err", path))
    for rank, _, path in sorted(files):
        part = path.read_text(errors="replace")
        text += f"\n--- {path.name} ---\n{part}"
        ranks.setdefault(rank, []).extend(part.splitlines())
    return text, {r: "\n".join(lines) + "\n" for r, lines in ranks.items()}


def check_example(path: str, exit_code: str, test: str, n: str) -> str:
    sys.path.insert(0, str(TESTS))
    name, _, test = test.rpartition(".")
    module = importlib.import_module(name or "test_examples")

    text, out = read(path)
    want = int(n)
    func = getattr(module, test)
    script = {"test_seed_000_all_to_all": "examples/seed_000_all_to_all.py",
              "test_seed_001_reduce_scatter": "examples/seed_001_reduce_scatter.py",
              "test_seed_002_alltoall_single_verbatim_under_v2":
                  "examples/seed_002_alltoall_single.py",
              "test_seed_003_all_gather_into_tensor":
                  "examples/seed_003_all_gather_into_tensor.py",
              "test_ddp_train_example": "examples/ddp_train.py"}[test]

    def job_result(ranks: int, args: list[str], timeout: float = 120, **env: str):
        # what the test would have started with mpiexec is what the Slurm job ran
        assert args == [script], f"{test} runs {args}, the job ran {script}"
        assert ranks == want, f"{test} expects {ranks} ranks, the job had {want}"
        assert sorted(out) == list(range(ranks)), (
            f"output labelled for ranks {sorted(out)}, expected 0..{ranks - 1}:\n{text}")
        returncode = int(exit_code.split(":")[0]) or int(exit_code.split(":")[1])
        return SimpleNamespace(returncode=returncode, stderr=text), out

    module.run_per_rank = job_result
    func()
    return f"{test} of tests/{module.__name__}.py passed on the {want} ranks' output"


def check_ended(path: str, n: str) -> str:
    text, _ = read(path)
    assert "unreachable" not in text, f"a rank left its wait:\n{text}"
    said, repeats = [], {}
    for r in range(int(n)):
        mine = re.findall(rf"mpicoll(?: watchdog)?: rank {r} received SIGTERM[^\n]*", text)
        if mine:
            said.append(r)
            repeats[r] = text.count(f"mpicoll watchdog: rank {r} aborting the job")
    assert said, f"no rank printed mpicoll's SIGTERM report:\n{text}"
    where = re.search(r"received SIGTERM (while waiting [\d.]+ s in [a-z_]+ #\d+)", text)
    note = ""
    if any(k > 1 for k in repeats.values()):
        note = (f"; NOTE: the report repeated "
                f"({', '.join(f'rank {r}: {k}x' for r, k in repeats.items())}): "
                "MPI_Abort returned to mpicoll, which then reported again")
    return (f"SIGTERM report from ranks {said} of {n} "
            f"(e.g. \"received SIGTERM {where.group(1) if where else '...'}\"){note}")


def check_raised(path: str) -> str:
    text, _ = read(path)
    assert "RuntimeError: boom on rank 1" in text, f"no traceback of rank 1:\n{text}"
    assert "Traceback (most recent call last)" in text, text
    assert "unreachable" not in text, text
    return "rank 1's traceback (RuntimeError: boom on rank 1) is in the job's output"


# what each MPI wheel does with each launcher, as measured; a change fails the lane
EXPECTED = {
    ("mpich", "srun --mpi=none"): "singletons",
    ("mpich", "srun --mpi=pmi2"): "ok",
    ("mpich", "srun --mpi=pmix"): "failed",
    ("mpich", "mpiexec"): "ok",
    ("openmpi", "srun --mpi=none"): "singletons",
    ("openmpi", "srun --mpi=pmi2"): "singletons",
    ("openmpi", "srun --mpi=pmix"): "ok",
    ("openmpi", "mpiexec"): "ok",
}
NO_PMIX_PLUGIN = "can not load PMIx library"


def classify(body: str, rc: int, n: int) -> tuple[str, str]:
    sizes = re.findall(r"^rank (\d+) size (\d+) host (\S+)$", body, re.M)
    errors = [line for line in body.splitlines() if not re.match(r"^rank \d+ size", line)
              and line.strip() and not set(line.strip()) <= {"-"}]
    # the first line and the last ones: MPICH's error stack names the cause at its end
    detail = " / ".join(errors if len(errors) <= 6 else [errors[0], "...", *errors[-3:]])
    if rc == 0 and sorted(int(r) for r, s, _ in sizes) == list(range(n)) and all(
            int(s) == n for _, s, _ in sizes):
        hosts = sorted({h for _, _, h in sizes})
        return "ok", f"{n} ranks, one world, on {','.join(hosts)}"
    if sizes and all(int(s) == 1 for _, s, _ in sizes):
        return "singletons", (f"{len(sizes)} separate jobs of size 1, exit {rc}"
                              + (f"; it printed: {detail}" if detail else ""))
    if NO_PMIX_PLUGIN in body:
        return "unavailable", detail
    return "failed", f"exit {rc}: {detail}"


def check_probe(path: str) -> str:
    text, _ = read(path)
    sections = re.split(r"^=== PROBE ", text, flags=re.M)[1:]
    n = max((int(s) for s in re.findall(r"^rank \d+ size (\d+)", text, re.M)), default=0)
    assert sections and n > 1, f"no probe ran:\n{text}"
    bad, lines = [], []
    for sec in sections:
        head, _, body = sec.partition("\n")
        mpi, launch, rc = (x.strip() for x in head.split("|"))
        got, detail = classify(body, int(rc.removeprefix("rc=")), n)
        want = EXPECTED.get((mpi, launch))
        mark = "as expected" if got == want else (
            "SKIPPED: Slurm's pmix plugin is not usable here" if got == "unavailable"
            else f"UNEXPECTED (expected {want})")
        if got != want and got != "unavailable":
            bad.append(f"{mpi} / {launch}")
        lines.append(f"  {mpi:8} {launch:16} {got:11} {mark}: {detail}")
    print("PMI matrix (what each MPI wheel does under each launcher):")
    print("\n".join(lines))
    assert not bad, f"launcher results changed: {bad}"
    return f"{len(sections)} launcher x MPI probes as expected"


def main() -> int:
    kind, *args = sys.argv[1:]
    func = {"example": check_example, "ended": check_ended, "raised": check_raised,
            "probe": check_probe}[kind]
    try:
        print(func(*args))
    except AssertionError as e:
        print(f"CHECK FAILED ({kind}): {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
