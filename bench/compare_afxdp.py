#!/usr/bin/env python3
"""burstscope over AF_XDP against `tcpdump -w /dev/null` (AF_PACKET, TPACKET_V3) on the same veth load: tcpdump as
run by default, with a 64 MiB buffer (-B 65536, which loses nothing at full speed where the default can), and
with -s 256.

A veth pair across two network namespaces made here; tcpreplay in one sends the same 64-flow file at each
offered rate (packets/s; 0 = --topspeed), and in the other either capture runs for the same wall time
(start, 0.5 s, replay, 1 s, SIGTERM). For each: CPU seconds (user + system, from wait4's rusage, so every
thread counts: burstscope's RX thread and its analysing worker) per million packets sent, and loss = sent -
captured (burstscope: frames its engine analysed; tcpdump: its "packets captured"). Both measure only the
capturing process: the softirq work before it (the XDP program, AF_PACKET's copy) runs in the sender's
context on a veth and is charged to tcpreplay for both alike. Prints a table, then the ratios.

With a fourth argument WARMUP,SPAN (seconds; "65,20") it measures the steady state instead: each capture's CPU per
thread over SPAN seconds that begin WARMUP seconds into a replay at a fixed rate (every rate above 0; PACKETS is
then unused: the replay lasts WARMUP + SPAN + 2 s), packets = the rate tcpreplay reached x SPAN.
Start-up, the exit (final analysis, JSON) and the first minute's growth of the windows (the training window holds
60 s of bins, a tracked flow's windows 10 s: their memory is touched for the first time then) stay outside it; a
per-second cost (the control thread's training analysis of its window, once a second) stays inside, and is
reported apart from the per-packet threads.
Needs root. Standard library only. BURSTSCOPE_ARGS (environment) adds arguments to burstscope's command line, such
as a configuration file: BURSTSCOPE_ARGS="-c budget1.yaml".
usage: compare_afxdp.py BUILD_DIR [RATES=50000,200000,0] [PACKETS=500000] [WARMUP,SPAN]
"""
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time

BUILD = sys.argv[1]
RATES = [int(r) for r in (sys.argv[2] if len(sys.argv) > 2 else "50000,200000,0").split(",")]
PACKETS = int(sys.argv[3]) if len(sys.argv) > 3 else 500_000
STEADY = tuple(float(x) for x in sys.argv[4].split(",")) if len(sys.argv) > 4 else None
if STEADY and (len(STEADY) != 2 or 0 in RATES):
    sys.exit("the fourth argument is WARMUP,SPAN in seconds (\"65,20\"), with fixed rates (no 0)")
EXTRA = shlex.split(os.environ.get("BURSTSCOPE_ARGS", ""))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NS_RX, NS_TX = f"bsb_rx_{os.getpid()}", f"bsb_tx_{os.getpid()}"
V0, V1 = f"bsb0_{os.getpid()}", f"bsb1_{os.getpid()}"


def sh(*args, **kw):
    return subprocess.run(args, check=True, **kw)


def setup():
    sh("ip", "netns", "add", NS_RX)
    sh("ip", "netns", "add", NS_TX)
    sh("ip", "link", "add", V0, "type", "veth", "peer", "name", V1)
    sh("ip", "link", "set", V0, "netns", NS_TX)
    sh("ip", "link", "set", V1, "netns", NS_RX)
    for ns in (NS_RX, NS_TX):
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
    sh("ip", "-n", NS_TX, "link", "set", V0, "up")
    sh("ip", "-n", NS_RX, "link", "set", V1, "up")


def teardown():
    for ns in (NS_RX, NS_TX):
        subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)


def replay_cmd(pcap, rate, loops):
    speed = ["--topspeed"] if rate == 0 else ["--pps", str(rate)]
    return ["ip", "netns", "exec", NS_TX, "tcpreplay", "-i", V0, *speed, "--loop", str(loops), pcap]


def replay(pcap, rate, loops):
    out = subprocess.run(replay_cmd(pcap, rate, loops), capture_output=True, text=True).stdout
    return int(re.search(r"Actual: (\d+) packets", out).group(1))


def thread_cpu(pid):
    """CPU seconds so far of each thread of pid, by thread name (schedstat: nanoseconds, not clock ticks)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
            ns = int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue
        out[name] = out.get(name, 0) + ns / 1e9
    return out


def measure(cmd, pcap, rate, loops):
    """Runs cmd in the RX namespace around one replay; returns (sent, cpu_s, stdout, stderr, per-thread CPU).
    With STEADY, cpu_s and the per-thread CPU are those of the steady span, sent is the rate tcpreplay reached x the
    span, and the last value is what the whole replay sent (for the losses); else it is sent again."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(["ip", "netns", "exec", NS_RX, *cmd], stdout=out, stderr=err)
        time.sleep(0.5)
        if STEADY:
            tx = subprocess.Popen(replay_cmd(pcap, rate, loops), stdout=subprocess.PIPE, text=True)
            time.sleep(STEADY[0])
            before, t0 = thread_cpu(p.pid), time.monotonic()
            time.sleep(STEADY[1])
            after, t1 = thread_cpu(p.pid), time.monotonic()
            out_tx = tx.communicate()[0]
            m = re.search(r"Actual: (\d+) packets \(\d+ bytes\) sent in ([\d.]+) seconds", out_tx)
            total, secs = int(m.group(1)), float(m.group(2))
            if total / secs < 0.98 * rate:
                print(f"note: tcpreplay reached {total / secs:.0f} of {rate} frames/s", file=sys.stderr)
            threads = {k: v - before.get(k, 0.0) for k, v in after.items()}
            steady_sent = round(total / secs * (t1 - t0))
        else:
            sent = replay(pcap, rate, loops)
        time.sleep(1.0)
        if not STEADY:
            threads = thread_cpu(p.pid)
        os.kill(p.pid, signal.SIGTERM)
        _, _, ru = os.wait4(p.pid, 0)
        p.returncode = 0
        out.seek(0)
        err.seek(0)
        if STEADY:  # the whole run's losses still come from its end (total sent against captured)
            return (steady_sent, sum(threads.values()), out.read().decode(), err.read().decode(), threads,
                    total)
        return sent, ru.ru_utime + ru.ru_stime, out.read().decode(), err.read().decode(), threads, sent


TCPDUMP_VARIANTS = ([], ["-B", "65536"], ["-s", "256"])


def tcpdumpName(extra):
    return " ".join(["tcpdump -w /dev/null", *extra])


def main():
    tmp = tempfile.mkdtemp()
    pcap = os.path.join(tmp, "flows.pcap")
    sh(sys.executable, os.path.join(ROOT, "tests/integration/make_flows.py"), pcap, "64", "40")
    # The file is 2,560 frames: PACKETS of them, or with STEADY a replay that outlasts warm-up and span by 2 s.
    loops_of = (lambda rate: int(rate * (STEADY[0] + STEADY[1] + 2) / 2560) + 1) if STEADY else \
        (lambda rate: max(1, PACKETS // 2560))
    bs = os.path.join(BUILD, "burstscope")
    rows, losses = [], []
    setup()
    try:
        for rate in RATES:
            n = loops_of(rate)
            sent, cpu, out, _, threads, total = measure(
                [bs, "run", "--xdp", V1, "--listen", "none", "-q", "--json", *EXTRA], pcap, rate, n)
            port = json.loads(out)["ports"][0]
            got = port["ledger"]["analysed"]
            rows.append(("burstscope af_xdp", rate, sent, cpu, total - got))
            # The capture path alone (the AF_XDP RX threads: ring, decode, timestamp, record ring) is the
            # like-for-like comparison with tcpdump, which analyses nothing.
            rx = sum(v for k, v in threads.items() if k.startswith("bs-xsk-"))
            rows.append(("  of which RX threads", rate, sent, rx, total - port["ledger"]["received"]))
            # The analysis: the port's worker (and its part workers), and the rest — the control thread's
            # per-interval training analysis of its 60 s window (a cost per second, not per packet), start-up.
            workers = sum(v for k, v in threads.items() if k.startswith("bs-port-"))
            rows.append(("  of which port workers", rate, sent, workers, 0))
            rows.append(("  of which the rest", rate, sent, max(0.0, cpu - rx - workers), 0))
            stages = {k: v for k, v in port["device"]["drop_stages"].items() if v}
            if port["ledger"]["dropped"]["ring_full"]:
                stages["ring_full"] = port["ledger"]["dropped"]["ring_full"]
            losses.append(f"offered {rate or 'topspeed'}: burstscope losses by stage {stages or 'none'}")
            # tcpdump as run by default (a 2 MiB kernel buffer: at full speed it can lose frames, and a frame the
            # kernel drops costs tcpdump nothing), with a 64 MiB buffer (-B: it loses none, so it pays for every
            # frame as burstscope does), and copying 256 bytes of each.
            for extra in TCPDUMP_VARIANTS:
                cmd = ["tcpdump", "-i", V1, "-n", "-w", "/dev/null", *extra]
                sent, cpu, _, err, _, total = measure(cmd, pcap, rate, n)
                got = int(re.search(r"(\d+) packets? captured", err).group(1))
                rows.append((tcpdumpName(extra), rate, sent, cpu, total - got))
    finally:
        teardown()
    if STEADY:
        print(f"steady state: CPU over {STEADY[1]:g} s from {STEADY[0]:g} s into each replay; 'sent' = the rate"
              " reached x span; 'lost' over the whole run")
    print(f"{'capture':28} {'offered':>10} {'sent':>9} {'CPU s':>7} {'CPU s/Mpkt':>11} {'lost':>8}")
    for name, rate, sent, cpu, lost in rows:
        print(f"{name:28} {rate or 'topspeed':>10} {sent:>9} {cpu:7.3f} {cpu / sent * 1e6:11.3f} {lost:>8}")
    print()
    print(*losses, sep="\n")
    for rate in RATES:
        r = {name: (cpu / sent, lost) for name, rr, sent, cpu, lost in rows if rr == rate}
        for ours in ("burstscope af_xdp", "  of which RX threads"):
            for other in map(tcpdumpName, TCPDUMP_VARIANTS):
                print(f"offered {rate or 'topspeed'}: CPU per packet {ours.strip()} / {other} = "
                      f"{r[ours][0] / r[other][0]:.2f}  (lost: burstscope {r[ours][1]}, tcpdump {r[other][1]})")


if __name__ == "__main__":
    main()
