#!/usr/bin/env python3
"""Whether the offline commands take their heap on transparent huge pages, and only they (TAP, suite unit).

src/app/main.cc (onHugePages): `analyze`, `report`, `compare` and `whatif` advise their heap MADV_HUGEPAGE where
the kernel is in its "madvise" mode; `run` and the small commands do not, nor does any command with
BURSTSCOPE_SMALL_PAGES set. The advice shows in /proc/PID/smaps as the VmFlag "hg". Each case starts the command
reading stdin from a pipe this script holds, waits (with a bound) until a thread of it is blocked reading stdin, by
when the command runs and its heap is set up, and reads its mappings. Then the bundled trace goes in, and the
output is that of the same command with small pages: the advice changes no figure.

A build with AddressSanitizer, ThreadSanitizer or MemorySanitizer (third argument, meson's b_sanitize) has the
sanitizer's allocator, which refuses glibc's settings (mallopt): whether its heap is advised is not judged there.
Where the kernel has no transparent huge pages, or is not in its madvise mode, nothing may be advised. Where this
script may not read a process's syscall (a hardened ptrace scope), it skips. `report`, `compare` and `whatif` take
no input on stdin and are not run here.

usage: check_huge_pages.py BURSTSCOPE SOURCE_ROOT [B_SANITIZE]
"""
import os
import platform
import subprocess
import sys
import time

BS, ROOT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
SANITIZED = len(sys.argv) > 3 and any(k in sys.argv[3] for k in ("address", "thread", "memory"))
TRACE = os.path.join(ROOT, "data", "ddp-gloo-w3-3steps.pcap")
WAIT_S = 30  # a sanitizer build on a busy 2-core machine starts slowly; three runs stay within meson's 300 s
READ = {"x86_64": 0, "aarch64": 63}.get(platform.machine())  # read(2)'s number

try:
    with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
        MADVISE_MODE = "[madvise]" in f.read()
except OSError:
    MADVISE_MODE = False

results = []


def ok(good, what):
    results.append((good, what))
    print(("ok" if good else "not ok") + f" {len(results)} - {what}", flush=True)


def skip(what):
    results.append((True, what))
    print(f"ok {len(results)} - {what} # SKIP", flush=True)


def reading_stdin(pid):
    """Whether a thread of `pid` is blocked in read(0, ...)."""
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/syscall") as f:
                fields = f.read().split()
            if len(fields) > 1 and fields[0] == str(READ) and int(fields[1], 16) == 0:
                return True
    except (FileNotFoundError, ProcessLookupError):
        pass
    return False


if READ is None:
    print(f"1..0 # SKIP read(2)'s number on {platform.machine()} not known here")
    sys.exit(0)
try:
    with open(f"/proc/{os.getpid()}/syscall") as f:
        f.read()
except PermissionError:
    print("1..0 # SKIP /proc/PID/syscall not readable (ptrace scope)")
    sys.exit(0)


def advised(pid):
    """The bytes of `pid`'s mappings advised MADV_HUGEPAGE (VmFlags "hg")."""
    total, size = 0, 0
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            if line.startswith("Size:"):
                size = int(line.split()[1]) * 1024
            elif line.startswith("VmFlags:") and "hg" in line.split()[1:]:
                total += size
    return total


def run(args, small, stdin_bytes):
    """Starts `args` reading a held pipe; returns (bytes advised once it reads stdin, exit code, stdout)."""
    env = dict(os.environ)
    env.pop("BURSTSCOPE_SMALL_PAGES", None)
    if small:
        env["BURSTSCOPE_SMALL_PAGES"] = "1"
    p = subprocess.Popen([BS] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, cwd=ROOT)
    deadline = time.monotonic() + WAIT_S
    while not reading_stdin(p.pid) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    hg = advised(p.pid) if p.poll() is None and reading_stdin(p.pid) else None
    try:
        out, err = p.communicate(stdin_bytes, timeout=WAIT_S * 2)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    if p.returncode != 0:
        sys.stderr.write(err.decode(errors="replace"))
    return hg, p.returncode, out


with open(TRACE, "rb") as f:
    trace = f.read()

hg, code, out = run(["analyze", "-"], False, trace)
ok(hg is not None, "analyze - was seen reading stdin")
if SANITIZED:
    skip(f"analyze: its heap's advice, with a sanitizer's allocator ({hg} bytes)")
elif MADVISE_MODE:
    ok(hg is not None and hg >= 128 << 20, f"analyze: its heap advised MADV_HUGEPAGE ({hg} bytes)")
else:
    ok(hg == 0, f"analyze: nothing advised where the kernel is not in its madvise mode ({hg} bytes)")
hg_small, code_small, out_small = run(["analyze", "-"], True, trace)
ok(hg_small == 0, f"analyze with BURSTSCOPE_SMALL_PAGES: nothing advised ({hg_small} bytes)")
ok(code == 0 and code_small == 0 and len(out) > 1000, "both analyses ran")
ok(out == out_small, "the same output with huge pages as with small ones")

# A command that is not an offline analysis keeps small pages: hash-password reads its password on stdin.
hg_hash, code_hash, _ = run(["hash-password"], False, b"secret\n")
ok(hg_hash == 0 and code_hash == 0, f"hash-password: nothing advised ({hg_hash} bytes)")

print(f"1..{len(results)}")
sys.exit(0 if all(g for g, _ in results) else 1)
