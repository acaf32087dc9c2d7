#!/usr/bin/env python3
"""Hostile and busy clients against burstscope's metrics endpoint (tests/integration/http_test.sh).

Loopback only, bounded in count and time; standard library only. Each subcommand prints what it saw and
exits 0 when the endpoint behaved as docs/operations.md ("The metrics endpoint") says, 1 otherwise.

  slowloris PORT --conns 64 --seconds 20   64 connections that send half a request line and then a header
                                           line every 2 s (reconnecting when the server cuts them); meanwhile
                                           a normal scrape every 0.5 s must answer 200 within 1 s, every time.
  concurrent PORT --clients 200 --seconds 10
                                           200 clients scraping at once, again and again: every request gets
                                           200 or the documented 503 (with Retry-After), none is left unanswered.
  tls PORT --ca CA --user U --password P   a scrape over TLS with basic auth succeeds; wrong credentials get
                                           401; a plain-HTTP request to the TLS port gets no metrics.
  mtls PORT --ca CA --cert C --key K --other-cert C2 --other-key K2
                                           client certificates: one from the client CA is let in (200); none,
                                           or one from another CA, gets no metrics.
  cert PORT --ca CA                        prints the SHA-256 of the certificate the server presents.
"""
import argparse
import base64
import hashlib
import socket
import ssl
import sys
import threading
import time

REQUEST = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


def read_response(sock, limit=64 << 20):
    """Status code and body of one HTTP/1.x response, read to the end of the connection."""
    data = b""
    while len(data) < limit:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    if not data.startswith(b"HTTP/1."):
        return None, data
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), head + b"\r\n\r\n" + body


def scrape(port, timeout, request=REQUEST, wrap=None):
    """(status, seconds, raw response) of one scrape on a fresh connection; status None on failure."""
    start = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.settimeout(max(0.05, timeout - (time.monotonic() - start)))
            if wrap is not None:
                s = wrap(s)
            s.sendall(request)
            code, raw = read_response(s)
    except (OSError, ssl.SSLError) as e:
        return None, time.monotonic() - start, repr(e).encode()
    return code, time.monotonic() - start, raw


def slowloris(args):
    stop = threading.Event()
    held = [0]
    cut = [0]
    lock = threading.Lock()

    def attacker(i):
        while not stop.is_set():
            try:
                s = socket.create_connection(("127.0.0.1", args.port), timeout=5)
                s.sendall(b"GET /metrics HTTP/1.1\r\nHo")  # half a request line and header
                with lock:
                    held[0] += 1
                n = 0
                while not stop.wait(2.0):
                    s.sendall(b"X-a%d: %d\r\n" % (i, n))
                    n += 1
            except OSError:
                with lock:
                    cut[0] += 1
                stop.wait(0.1)
            finally:
                try:
                    s.close()
                except (OSError, UnboundLocalError):
                    pass

    threads = [threading.Thread(target=attacker, args=(i,), daemon=True) for i in range(args.conns)]
    for t in threads:
        t.start()
    time.sleep(1.0)  # all of them connected and trickling before the first scrape
    worst, failures, n = 0.0, [], 0
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        code, secs, raw = scrape(args.port, timeout=1.0)
        n += 1
        worst = max(worst, secs)
        if code != 200 or secs > 1.0 or b"burstscope_http_connections" not in raw:
            failures.append((round(time.monotonic() - deadline + args.seconds, 2), code, round(secs, 3)))
        time.sleep(0.5)
    stop.set()
    print(f"slowloris: {args.conns} slow connections ({held[0]} opened, {cut[0]} cut by the server); "
          f"{n} scrapes, slowest {worst * 1000:.1f} ms, {len(failures)} failed {failures[:5]}")
    return 0 if not failures and n >= args.seconds and held[0] >= args.conns else 1


def concurrent(args):
    codes = {}
    bad = []
    lock = threading.Lock()
    deadline = time.monotonic() + args.seconds
    start = threading.Barrier(args.clients)

    def client():
        start.wait()
        while time.monotonic() < deadline:
            code, secs, raw = scrape(args.port, timeout=30.0)
            ok = code == 200 or (code == 503 and b"Retry-After: 1" in raw)
            with lock:
                codes[code] = codes.get(code, 0) + 1
                if not ok:
                    bad.append((code, raw[:200]))
            if code == 503:
                time.sleep(0.05)

    threads = [threading.Thread(target=client) for _ in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = sum(codes.values())
    print(f"concurrent: {args.clients} clients for {args.seconds} s: {total} requests, by status {codes}; "
          f"{len(bad)} unanswered or wrong {bad[:3]}")
    return 0 if not bad and codes.get(200, 0) >= args.clients else 1


def tls_context(ca):
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False  # the test's certificate names 127.0.0.1 only as an IP; the CA is what counts
    return ctx


def tls(args):
    ctx = tls_context(args.ca)
    wrap = lambda s: ctx.wrap_socket(s)  # noqa: E731

    def req(user, password):
        auth = base64.b64encode(f"{user}:{password}".encode()).decode()
        return (f"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic {auth}\r\n"
                "Connection: close\r\n\r\n").encode()

    results = []
    code, _, raw = scrape(args.port, 5.0, req(args.user, args.password), wrap)
    results.append(("right credentials over TLS: 200 with metrics", code == 200 and b"burstscope_bytes_total" in raw))
    code, _, raw = scrape(args.port, 5.0, req(args.user, args.password + "x"), wrap)
    results.append(("wrong password over TLS: 401", code == 401 and b"burstscope_bytes_total" not in raw))
    code, _, raw = scrape(args.port, 5.0, req("nobody", args.password), wrap)
    results.append(("unknown user over TLS: 401", code == 401 and b"burstscope_bytes_total" not in raw))
    code, _, raw = scrape(args.port, 5.0, REQUEST, wrap)
    results.append(("no credentials over TLS: 401", code == 401 and b"WWW-Authenticate" in raw))
    code, _, raw = scrape(args.port, 5.0, req(args.user, args.password))
    results.append(("plain HTTP to the TLS port: no metrics", code != 200 and b"burstscope_bytes_total" not in raw))
    for what, ok in results:
        print(("ok: " if ok else "FAILED: ") + what)
    return 0 if all(ok for _, ok in results) else 1


def mtls(args):
    """RequireAndVerifyClientCert: a certificate from the client CA is let in, none or another CA's is not."""
    def wrap_with(cert_key):
        ctx = tls_context(args.ca)
        if cert_key:
            ctx.load_cert_chain(*cert_key)
        return lambda s: ctx.wrap_socket(s)

    results = []
    code, _, raw = scrape(args.port, 5.0, REQUEST, wrap_with((args.cert, args.key)))
    results.append(("client certificate from the client CA: 200", code == 200 and b"burstscope_bytes_total" in raw))
    code, _, raw = scrape(args.port, 5.0, REQUEST, wrap_with(None))
    results.append((f"no client certificate: refused (got {code})", code != 200 and b"burstscope_bytes_total" not in raw))
    code, _, raw = scrape(args.port, 5.0, REQUEST, wrap_with((args.other_cert, args.other_key)))
    results.append((f"another CA's client certificate: refused (got {code})",
                    code != 200 and b"burstscope_bytes_total" not in raw))
    for what, ok in results:
        print(("ok: " if ok else "FAILED: ") + what)
    return 0 if all(ok for _, ok in results) else 1


def cert(args):
    ctx = tls_context(args.ca)
    with socket.create_connection(("127.0.0.1", args.port), timeout=5) as s:
        with ctx.wrap_socket(s) as t:
            print(hashlib.sha256(t.getpeercert(binary_form=True)).hexdigest())
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("slowloris")
    s.add_argument("port", type=int)
    s.add_argument("--conns", type=int, default=64)
    s.add_argument("--seconds", type=int, default=20)
    c = sub.add_parser("concurrent")
    c.add_argument("port", type=int)
    c.add_argument("--clients", type=int, default=200)
    c.add_argument("--seconds", type=int, default=10)
    t = sub.add_parser("tls")
    t.add_argument("port", type=int)
    t.add_argument("--ca", required=True)
    t.add_argument("--user", required=True)
    t.add_argument("--password", required=True)
    m = sub.add_parser("mtls")
    m.add_argument("port", type=int)
    for a in ("--ca", "--cert", "--key", "--other-cert", "--other-key"):
        m.add_argument(a, required=True)
    k = sub.add_parser("cert")
    k.add_argument("port", type=int)
    k.add_argument("--ca", required=True)
    args = p.parse_args()
    return {"slowloris": slowloris, "concurrent": concurrent, "tls": tls, "mtls": mtls, "cert": cert}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
