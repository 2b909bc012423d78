#!/usr/bin/env python3
"""Where a cold compile's C++ time goes: one model's generated module.cpp built by each compiler and option side by side.

Dumps the model's C++ (`kiln dump MODEL --stage cpp`), then times, in interleaved rounds, the
builds a cpu module could use: g++ and clang++ at -O3 and -O2 (module.so, as the cpu target links
it but without the BLAS: the link itself is timed apart), the same with the fixed text every
module starts with (prelude, thread pool, op layer, support functions: everything before the
first kernel) as a precompiled header (GCC's .gch through -include, Clang's through
-include-pch), clang's cc1 alone (no driver: what compiling inside the Kiln process would still
cost, plus its libraries' start-up, measured on an empty file), and each compiler's cost on an
empty file. Prints each variant's median wall and CPU time (the child processes' user + system).

  python3 bench/cxx_options_latency.py --kiln BUILD/tools/kiln MODEL [--rounds 7] [--dim s0=4]
      [--isa avx512|avx2|scalar] [--gxx g++] [--clangxx clang++]

Kernel speed is not measured here: build Kiln with the flags to compare and run
bench/compare_builds.py.
"""
import argparse
import os
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


ISA_FLAGS = {
    "scalar": [],
    "avx2": ["-mavx2", "-mfma"],
    "avx512": ["-mavx512f", "-mavx512dq", "-mavx512bw", "-mavx512vl", "-mavx2", "-mfma", "-mprefer-vector-width=512"],
}
# compiler/targets/cpu_toolchain.cpp's flags, without the optimization level.
COMMON_FLAGS = ["-std=c++17", "-fPIC", "-fopenmp", "-fno-math-errno", "-fno-trapping-math", "-fno-semantic-interposition"]


def fail(message):
    print(f"cxx_options_latency: {message}", file=sys.stderr)
    sys.exit(1)


def run_timed(command, directory):
    """(wall seconds, CPU seconds of the children) of one run of `command` (a shell line)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, shell=True, cwd=directory, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        fail(f"`{command}` failed (exit {done.returncode}): {done.stderr.strip()[:2000]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cc1_command(clangxx, flags, source, output, directory):
    """The clang -cc1 line the driver runs to compile `source` to `output` (an object)."""
    done = subprocess.run([clangxx] + flags + ["-c", source, "-o", output, "-###"], cwd=directory,
                          capture_output=True, text=True)
    for line in done.stderr.splitlines():
        if '"-cc1"' in line:
            return line.strip()
    fail(f"{clangxx} -### printed no -cc1 line: {done.stderr.strip()}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kiln", required=True)
    parser.add_argument("model")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--dim", action="append", default=[], help="SYMBOL=SIZE, passed to kiln dump")
    parser.add_argument("--isa", default="avx512", choices=sorted(ISA_FLAGS))
    parser.add_argument("--gxx", default="g++")
    parser.add_argument("--clangxx", default="clang++")
    args = parser.parse_args()
    if args.rounds < 1:
        fail("--rounds must be at least 1")
    for tool in (args.gxx, args.clangxx):
        if shutil.which(tool) is None:
            fail(f"'{tool}' was not found on PATH")

    with tempfile.TemporaryDirectory(prefix="kiln-cxx-options-") as work:
        dump = [args.kiln, "dump", args.model, "--stage", "cpp"] + [x for d in args.dim for x in ("--dim", d)]
        done = subprocess.run(dump, capture_output=True, text=True)
        if done.returncode != 0:
            fail(f"{' '.join(dump)} failed: {done.stderr.strip()}")
        source = done.stdout
        with open(os.path.join(work, "module.cpp"), "w") as f:
            f.write(source)
        first_kernel = re.search(r"^// kernel0_", source, re.MULTILINE)
        if first_kernel is None:
            fail(f"the generated C++ of {args.model} has no kernel0")
        prefix, body = source[:first_kernel.start()], source[first_kernel.start():]
        with open(os.path.join(work, "prefix.h"), "w") as f:
            f.write(prefix)
        with open(os.path.join(work, "body.cpp"), "w") as f:
            f.write(f'#line {prefix.count(chr(10)) + 1} "module.cpp"\n' + body)
        with open(os.path.join(work, "empty.cpp"), "w") as f:
            f.write("\n")

        isa = ISA_FLAGS[args.isa]
        variants = []
        for level in ("-O3", "-O2"):
            flags = [level] + COMMON_FLAGS + isa
            line = " ".join(shlex.quote(x) for x in flags)
            for name, cxx in (("g++", args.gxx), ("clang++", args.clangxx)):
                variants.append((f"{name} {level} module.so", f"{cxx} {line} -shared module.cpp -o m.so"))
            # The PCHs, made once per level (not timed: a cache would keep them).
            gch_dir = os.path.join(work, f"gch{level}")
            os.makedirs(gch_dir)
            shutil.copy(os.path.join(work, "prefix.h"), gch_dir)
            run_timed(f"{args.gxx} {line} -x c++-header prefix.h -o prefix.h.gch", gch_dir)
            run_timed(f"{args.clangxx} {line} -x c++-header prefix.h -o prefix{level}.pch", work)
            variants.append((f"g++ {level} module.so, PCH", f"{args.gxx} {line} -Winvalid-pch -Werror=invalid-pch "
                             f"-include {gch_dir}/prefix.h -shared body.cpp -o m.so"))
            variants.append((f"clang++ {level} module.so, PCH", f"{args.clangxx} {line} -include-pch prefix{level}.pch "
                             f"-shared body.cpp -o m.so"))
            variants.append((f"g++ {level} -c (no link)", f"{args.gxx} {line} -c module.cpp -o m.o"))
            variants.append((f"clang cc1 {level} (no driver)", cc1_command(args.clangxx, flags, "module.cpp", "m.o", work)))
        flags = ["-O2"] + COMMON_FLAGS + isa
        variants.append(("g++ -fsyntax-only", f"{args.gxx} {' '.join(flags)} -fsyntax-only module.cpp"))
        variants.append(("g++ -fsyntax-only, PCH", f"{args.gxx} {' '.join(flags)} -include {work}/gch-O2/prefix.h "
                         "-fsyntax-only body.cpp"))
        variants.append(("g++ empty file .so", f"{args.gxx} {' '.join(flags)} -shared empty.cpp -o e.so"))
        variants.append(("clang++ empty file .so", f"{args.clangxx} {' '.join(flags)} -shared empty.cpp -o e.so"))
        variants.append(("clang cc1 empty file", cc1_command(args.clangxx, flags, "empty.cpp", "e.o", work)))
        variants.append(("link module.o (g++ -shared)", f"{args.gxx} -shared -fopenmp m.o -o l.so"))

        run_timed(variants[0][1], work)  # warm the page cache
        times = {name: [] for name, _ in variants}
        for _ in range(args.rounds):
            for name, command in variants:
                times[name].append(run_timed(command, work))

    print(f"{args.model}: {source.count(chr(10))} lines of C++, {len(prefix.splitlines())} before the first kernel; "
          f"median of {args.rounds} rounds, ms")
    print(f"  {'variant':<36} {'wall':>8} {'cpu':>8}")
    for name, _ in variants:
        wall = 1000 * statistics.median(w for w, _ in times[name])
        cpu = 1000 * statistics.median(c for _, c in times[name])
        print(f"  {name:<36} {wall:>8.1f} {cpu:>8.1f}")


if __name__ == "__main__":
    main()
