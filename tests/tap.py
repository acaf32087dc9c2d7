"""TAP output for the Python test scripts that meson runs with protocol 'tap'.

    sys.path.insert(0, <the tests directory>); from tap import check, done
    check(ok, "what was checked")   # one TAP line; returns ok
    done()                          # the plan line, and exit 1 if any check failed
"""
import sys

n = 0
failed = 0


def check(ok, what):
    global n, failed
    n += 1
    print(("ok" if ok else "not ok"), n, "-", what, flush=True)
    failed += 0 if ok else 1
    return ok


def done():
    print(f"1..{n}")
    sys.exit(1 if failed else 0)
