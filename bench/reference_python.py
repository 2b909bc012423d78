"""Runs a bench script under the reference Python environment (scripts/python-env: torch,
onnxruntime, ...) whichever Python started it. Standard library only: it is imported first."""
import os
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def reexecute_under_reference_python(script):
    """Replaces this process with `script` (a path) under scripts/python-env's Python, once;
    KILN_BENCH_PYENV marks the re-execution (compare_torch checks it on import too)."""
    python = subprocess.run([os.path.join(REPO, "scripts", "python-env")], check=True, capture_output=True, text=True,
                            cwd=REPO).stdout.strip().splitlines()[-1]
    python = python if os.path.isabs(python) else os.path.join(REPO, python)
    env_dir = os.path.abspath(os.path.dirname(os.path.dirname(python)))
    if os.path.abspath(sys.prefix) != env_dir:
        if os.environ.get("KILN_BENCH_PYENV") == env_dir:
            name = os.path.splitext(os.path.basename(script))[0]
            sys.exit(f"{name}: re-executed under {python}, but sys.prefix is {sys.prefix}")
        os.environ["KILN_BENCH_PYENV"] = env_dir
        os.execv(python, [python, os.path.abspath(script)] + sys.argv[1:])
    os.environ["KILN_BENCH_PYENV"] = env_dir
