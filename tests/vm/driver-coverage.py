#!/usr/bin/env python3
"""Which functions of our kernel modules each VM test reaches, and whether
the debug-kernel twins reach all of them.

The debug kernel (KASAN, lockdep, kmemleak) only checks the code a test
runs, and a twin costs two to four times its test. A twin is worth its time
when it reaches driver code no other twin reaches. Run the VM tests under
Debian's kernel with RHINET_DRIVER_FUNCS=1 (each node then prints the
functions of rhinet.ko and xpu.ko it reached, guest/init.sh), then:

  tests/vm/driver-coverage.py BUILD_DIR            report
  tests/vm/driver-coverage.py BUILD_DIR --check    also fail (status 1) when
                                                   a function is reached
                                                   only by tests without a
                                                   twin

The report lists each test's functions and time, the functions no twin
reaches (and which tests reach them), and a cheapest set of twins, chosen
greedily by new functions per second, that reaches every function any test
reaches. A twin runs its test's script, so it reaches what its test reaches.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys

FUNCS_LINE = re.compile(r"RHINET-DRIVER-FUNCS: lost=(\d+) ?(.*)")


def test_list(build):
    out = subprocess.run(
        ["ctest", "--test-dir", str(build), "--show-only=json-v1"],
        check=True, capture_output=True, text=True).stdout
    return [t["name"] for t in json.loads(out)["tests"]]


def costs(build):
    """CTest's own record of each test's average time, in seconds."""
    path = build / "Testing" / "Temporary" / "CTestCostData.txt"
    result = {}
    if not path.exists():
        return result
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3:
            try:
                result[parts[0]] = float(parts[2])
            except ValueError:
                pass
    return result


TIME_LINE = re.compile(r"Test +#\d+: (\S+) \.*\s+(?:\*+)?\w+\s+([0-9.]+) sec")


def logged_times(path):
    """Test times as CTest printed them (the last run of each test)."""
    result = {}
    for line in path.read_text(errors="replace").splitlines():
        m = TIME_LINE.search(line)
        if m:
            result[m.group(1)] = float(m.group(2))
    return result


def reached(run_dir):
    """Union over the nodes of the functions reached; None without a report."""
    funcs, seen, lost = set(), False, 0
    for log in sorted(run_dir.glob("node*.log")):
        for line in log.read_text(errors="replace").splitlines():
            m = FUNCS_LINE.search(line)
            if m:
                seen = True
                lost += int(m.group(1))
                funcs.update(m.group(2).split())
    return (funcs, lost) if seen else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--times", type=pathlib.Path, action="append", default=[],
                    help="a CTest log (or `make test` output) whose test "
                         "times replace CTest's record, e.g. CI's")
    args = ap.parse_args()
    names = test_list(args.build)
    twins = {n[: -len("_debugkernel")] for n in names if n.endswith("_debugkernel")}
    cost = costs(args.build)
    for log in args.times:
        cost.update(logged_times(log))
    runs = args.build / "tests" / "vm" / "runs"
    per_test = {}
    for name in names:
        if name.endswith("_debugkernel"):
            continue
        result = reached(runs / name) if (runs / name).is_dir() else None
        if result is None:
            continue
        funcs, lost = result
        if lost:
            print(f"{name}: {lost} trace events lost: its list may be short")
        per_test[name] = funcs
    if not per_test:
        print("no run reported its functions: run the VM tests with "
              "RHINET_DRIVER_FUNCS=1 first", file=sys.stderr)
        return 2

    everything = set().union(*per_test.values())
    by_twins = set().union(*(per_test[n] for n in per_test if n in twins))
    print(f"{len(per_test)} tests reported; {len(everything)} functions "
          f"reached; {len(by_twins)} of them by tests with a twin")
    print(f"{'test':40} {'funcs':>5} {'only it':>7} {'time s':>7}  twin")
    for name in sorted(per_test, key=lambda n: -len(per_test[n])):
        others = set().union(*(f for n, f in per_test.items() if n != name))
        only = per_test[name] - others
        print(f"{name:40} {len(per_test[name]):5} {len(only):7} "
              f"{cost.get(name, 0):7.0f}  {'yes' if name in twins else '-'}")

    missing = everything - by_twins
    for func in sorted(missing):
        where = sorted(n for n, f in per_test.items() if func in f)
        print(f"no twin reaches {func} (reached by {', '.join(where)})")

    # Cheapest cover: a twin's time is its own where CTest has it, else
    # three times its test's (the twins' slowdown, tests/vm/CMakeLists.txt).
    def twin_cost(name):
        return cost.get(name + "_debugkernel") or 3 * cost.get(name, 60) or 60

    left, chosen = set(by_twins), []
    candidates = [n for n in per_test if n in twins]
    while left:
        best = max(candidates,
                   key=lambda n: len(per_test[n] & left) / twin_cost(n))
        gain = per_test[best] & left
        if not gain:
            break
        chosen.append(best)
        left -= gain
    total = sum(twin_cost(n) for n in chosen)
    print(f"a cheapest set of twins reaching all {len(by_twins)} functions "
          f"twins can reach ({total:.0f} s of twins):")
    for name in chosen:
        print(f"  {name} ({twin_cost(name):.0f} s)")
    if args.check and missing:
        print(f"{len(missing)} functions are reached by no test with a "
              "debug-kernel twin", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
