#!/usr/bin/env bash
# End-to-end checks of `burstscope analyze` on host captures (issue 22): several files merged by time into
# one capture, every host link type (Linux cooked v1/v2, raw IP, LINKTYPE_IPV4/IPV6, BSD NULL/LOOP),
# pcapng with mixed interfaces, gzip/zstd by content, standard input, the overlap warning, duplicate
# suppression and clear errors. TAP output for meson. Loopback only, no network; every run bounded in time.
# usage: hostcapture_test.sh BURSTSCOPE SOURCE_ROOT
set -u
BS=$1 ROOT=$2
TRACE=$ROOT/data/ddp-gloo-w3-3steps.pcap
GEN=$ROOT/tests/integration/make_host_captures.py
CORPUS=$ROOT/tests/corpus/hostlink
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() { local name=$1; shift; if "$@" >"$TMP/out" 2>&1; then ok "$name"; else notok "$name"; sed 's/^/# /' "$TMP/out"; fi; }

for tool in capinfos zstd gzip python3 timeout; do
  if ! command -v "$tool" >/dev/null; then
    echo "Bail out! $tool is not installed (capinfos: apt-get install wireshark-common; zstd: apt-get install zstd)"
    exit 1
  fi
done
# The interpreter itself, once: a version manager's shim (pyenv) can cost a second per start.
PY=$(python3 -c 'import sys; print(sys.executable)') || { echo "Bail out! python3 does not run"; exit 1; }
json() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# burstscope, bounded in time; stdout to $1, stderr to $1.err. Exit status: burstscope's (124: timed out).
bs_json() {
  local out=$1; shift
  timeout 120 "$BS" analyze --json "$@" >"$out" 2>"$out.err"
}
gen() { timeout 120 "$PY" "$GEN" "$@"; }

# Frames in a capture file per capinfos (gzip and zstd undone first: capinfos's own support varies).
capcount() {
  case $(head -c 4 "$1" | od -An -tx1 | tr -d ' \n') in
    28b52ffd) zstd -q -d -c "$1" >"$TMP/capcount" ;;
    1f8b*) gzip -d -c "$1" >"$TMP/capcount" ;;
    *) cat "$1" >"$TMP/capcount" ;;
  esac
  capinfos -M -T -r -c "$TMP/capcount" | cut -f2
}

# Comparisons of analyses (JSON) with each other and with the generator's manifests.
cat >"$TMP/check.py" <<'EOF'
import json, sys


def load(p):
    with open(p) as f:
        return json.load(f)


def core(d):
    """What must be identical when the same traffic is analysed from other files."""
    c = {k: d[k] for k in ("packets", "bytes", "first_ns", "last_ns")}
    for s in d["scales"]:
        c[f"scales[tau_us={s['tau_us']}] envelope_bytes, peak_bin_bytes, peak_bin_packets"] = (
            s["envelope_bytes"], s["peak_bin_bytes"], s.get("peak_bin_packets"))
    for i, b in enumerate(d["backlog"]):
        rate = b.get("rate_gbps", b.get("rate_bps", i))
        c[f"backlog[rate={rate}] max_backlog_bytes"] = b["max_backlog_bytes"]
    for name in ("pairs", "flows"):
        for e in d[name]["top"]:
            c[f"{name} {e['key']} packets, bytes"] = (e["packets"], e["bytes"])
        c[f"{name} other packets, bytes"] = (d[name].get("other_packets"), d[name].get("other_bytes"))
    c["microbursts count"] = d["microbursts"]["count"]
    dec = d["decode"]
    c["decode ok, errors, error_total, non_ip"] = (dec["ok"], sorted(dec["errors"].items()), dec["error_total"],
                                                   dec["non_ip"])
    c["timestamps clamped, bad_timestamps"] = (d["timestamps"].get("clamped"), d["timestamps"].get("bad_timestamps"))
    return c


def same(a, b):
    ca, cb = core(load(a)), core(load(b))
    bad = [k for k in sorted(set(ca) | set(cb)) if ca.get(k) != cb.get(k)]
    for k in bad[:25]:
        print(f"{k}: {ca.get(k)} vs {cb.get(k)}")
    return not bad


def manifest_files(p):
    m = load(p)
    return m["files"] if "files" in m else [m]


def inputs(result, manifest, *stdin_positions):
    """inputs.files of `result` against the generator's manifest, file by file, in command-line order."""
    got, want = load(result)["inputs"]["files"], manifest_files(manifest)
    good = len(got) == len(want)
    if not good:
        print(f"inputs.files has {len(got)} entries, {len(want)} files were given")
    stdin = {int(i) for i in stdin_positions}
    for i, (g, w) in enumerate(zip(got, want)):
        for k in ("format", "compression", "packets", "first_ns", "last_ns"):
            if g.get(k) != w[k]:
                good = False
                print(f"{w['path']}: {k} {g.get(k)} (expected {w[k]})")
        if sorted(set(g.get("link_types", []))) != sorted(set(w["link_types"])):
            good = False
            print(f"{w['path']}: link_types {g.get('link_types')} (expected {w['link_types']})")
        if i not in stdin and not str(g.get("path", "")).endswith(w["path"]):
            good = False
            print(f"entry {i}: path {g.get('path')} (expected {w['path']})")
    return good


def overlap(result, expect):
    inp = load(result)["inputs"]
    warned = any("do not overlap in time" in w for w in inp.get("warnings", []))
    want = expect == "yes"
    if inp.get("overlap") is not want or warned == want:
        print(f"inputs.overlap = {inp.get('overlap')}, warnings = {inp.get('warnings')}")
        return False
    return True


def ledger(result, received, removed):
    led = load(result)["ledger"]
    good = led.get("balanced") is True and led.get("duplicates_removed") == int(removed)
    if received != "-":
        good = good and led.get("received") == int(received)
    if not good:
        print(f"ledger {led} (expected received {received}, duplicates_removed {removed}, balanced)")
    return good


def dedup(result, removed, window_ns):
    inp = load(result)["inputs"]
    if inp.get("duplicates_removed") != int(removed) or inp.get("dedup_window_ns") != int(window_ns):
        print(f"inputs.duplicates_removed {inp.get('duplicates_removed')} (expected {removed}), "
              f"dedup_window_ns {inp.get('dedup_window_ns')} (expected {window_ns})")
        return False
    return True


def totals(result, packets, nbytes):
    d = load(result)
    if d["packets"] != int(packets) or d["bytes"] != int(nbytes):
        print(f"packets {d['packets']}, bytes {d['bytes']} (expected {packets}, {nbytes})")
        return False
    return True


def errors_named(result, expect_errors):
    """Decode errors counted by name, summing to error_total; every frame ok or in error; the count of
    errors the independent reader predicts."""
    d = load(result)
    dec = d["decode"]
    errs = dec["errors"]
    good = all(isinstance(k, str) and k and k.replace("_", "").isalnum() and k == k.lower() and
               isinstance(v, int) and v > 0 for k, v in errs.items())
    good = good and sum(errs.values()) == dec["error_total"] == int(expect_errors)
    good = good and dec["ok"] + dec["error_total"] == d["packets"]
    if not good:
        print(f"decode {dec}, packets {d['packets']} (expected {expect_errors} errors, each under a name)")
    return good


def corpus(result, info, capinfos_count):
    """One host-link corpus file: counts against capinfos, the rest against the independent reader."""
    d, i = load(result), load(info)[0]
    f = d["inputs"]["files"][0]
    good = True
    for what, got, want in (("packets", d["packets"], int(capinfos_count)),
                            ("ledger.received", d["ledger"].get("received"), int(capinfos_count)),
                            ("inputs.files[0].packets", f.get("packets"), int(capinfos_count)),
                            ("format", f.get("format"), i["format"]),
                            ("link_types", sorted(set(f.get("link_types", []))), sorted(set(i["link_types"]))),
                            ("first_ns", d["first_ns"], i["first_ns"]), ("last_ns", d["last_ns"], i["last_ns"]),
                            ("inputs first_ns", f.get("first_ns"), i["first_ns"]),
                            ("inputs last_ns", f.get("last_ns"), i["last_ns"])):
        if got != want:
            good = False
            print(f"{what}: {got} (expected {want})")
    if d["decode"]["error_total"] == 0 and d["bytes"] != i["bytes"]:
        good = False
        print(f"bytes: {d['bytes']} (expected {i['bytes']} by the wire-length rule)")
    if d["ledger"].get("balanced") is not True:
        good = False
        print(f"ledger {d['ledger']}")
    return good


def malformed(result, manifest, name, capinfos_count):
    d = load(result)
    w = next(e for e in load(manifest)["files"] if e["path"] == name)
    dec = d["decode"]
    good = d["packets"] == w["packets"] == int(capinfos_count) and dec["ok"] == w["ok"] and \
        dec["errors"] == w["errors"] and dec["error_total"] == sum(w["errors"].values()) and \
        d["ledger"].get("balanced") is True
    if not good:
        print(f"packets {d['packets']}, decode {d['decode']}, ledger {d['ledger']} "
              f"(expected {w['packets']} packets (capinfos {capinfos_count}), {w['ok']} ok, errors {w['errors']})")
    return good


def manifest_counts(manifest, *counts):
    """The generator's per-file packet counts against capinfos's."""
    files = manifest_files(manifest)
    got = [int(c) for c in counts]
    want = [e["packets"] for e in files]
    if got != want:
        print(f"capinfos {got}, manifest {want}")
    return got == want


sys.exit(0 if globals()[sys.argv[1]](*sys.argv[2:]) else 1)
EOF
pycheck() { timeout 60 "$PY" "$TMP/check.py" "$@"; }

# The original, analysed whole: the reference for everything below.
if ! bs_json "$TMP/orig.json" "$TRACE"; then
  echo "Bail out! burstscope analyze failed on the bundled trace: $(head -c 500 "$TMP/orig.json.err")"
  exit 1
fi
orig_packets=$(json "$TMP/orig.json" "d['packets']")
orig_bytes=$(json "$TMP/orig.json" "d['bytes']")
check "capinfos counts the bundled trace as the analysis does" test "$(capcount "$TRACE")" = "$orig_packets"

# a. Per-host captures (Ethernet+gzip, cooked v2+zstd, pcapng raw IP + cooked v1 with if_tsresol 9/10 and
#    if_tsoffset, raw IP pcap) analysed together equal the original, exactly.
H=$TMP/hosts
gen split "$TRACE" "$H" 2>"$TMP/gen.err" || { echo "Bail out! make_host_captures.py split failed"; sed 's/^/# /' "$TMP/gen.err"; exit 1; }
mapfile -t HF < <(json "$H/manifest.json" "'\n'.join(f['path'] for f in d['files'])")
HP=("${HF[@]/#/$H/}")
counts=()
for f in "${HP[@]}"; do counts+=("$(capcount "$f")"); done
check "host files: capinfos counts what the generator wrote (${#HP[@]} files: ${HF[*]})" \
  pycheck manifest_counts "$H/manifest.json" "${counts[@]}"
check "host files hold every frame of the original, by the wire-length rule" test \
  "$(json "$H/manifest.json" "(d['packets'], d['bytes'])")" = "($orig_packets, $orig_bytes)"
bs_json "$TMP/hosts.json" "${HP[@]}"
check "host files analysed as one capture equal the original (totals, times, every scale, backlog, pairs, flows, decode)" \
  pycheck same "$TMP/hosts.json" "$TMP/orig.json"
check "host files: ledger balanced, received = every frame, no duplicates removed" \
  pycheck ledger "$TMP/hosts.json" "$orig_packets" 0
check "host files: inputs.files gives each file's format, compression, link types, packets, first/last ns" \
  pycheck inputs "$TMP/hosts.json" "$H/manifest.json"
check "host files of one capture: inputs.overlap true, no overlap warning" pycheck overlap "$TMP/hosts.json" yes

# The other host link types, split the same way: NULL, LOOP, pcapng of LINKTYPE_IPV4 + LINKTYPE_IPV6 (gzip),
# cooked v1 (zstd).
H2=$TMP/hosts2
if gen split "$TRACE" "$H2" --forms null,loop,pcapng-ipv46:gzip,sll:zstd 2>"$TMP/gen.err"; then
  mapfile -t HF2 < <(json "$H2/manifest.json" "'\n'.join(f['path'] for f in d['files'])")
  HP2=("${HF2[@]/#/$H2/}")
  bs_json "$TMP/hosts2.json" "${HP2[@]}"
  check "NULL, LOOP, IPv4/IPv6 pcapng (gzip), cooked v1 (zstd) host files equal the original" \
    pycheck same "$TMP/hosts2.json" "$TMP/orig.json"
  check "NULL, LOOP, IPv4/IPv6 pcapng, cooked v1: inputs.files right" pycheck inputs "$TMP/hosts2.json" "$H2/manifest.json"
else
  notok "split into NULL, LOOP, IPv4/IPv6 pcapng, cooked v1"; sed 's/^/# /' "$TMP/gen.err"
fi

# The whole capture in each host form, one file each.
for form in sll sll2 raw:zstd null loop:gzip pcapng-ipv46; do
  out=$TMP/whole-${form/:/-}
  if gen convert "$TRACE" "$out" --form "$form" >"$out.manifest" 2>"$TMP/gen.err"; then
    bs_json "$out.json" "$out"
    check "whole capture as $form equals the original" pycheck same "$out.json" "$TMP/orig.json"
    check "whole capture as $form: inputs.files right" pycheck inputs "$out.json" "$out.manifest"
  else
    notok "convert to $form"; sed 's/^/# /' "$TMP/gen.err"
  fi
done

# Binary if_tsresol (2^-9 s units) in a big-endian pcapng: timestamps read exactly.
out=$TMP/binres.pcapng
if gen convert "$TRACE" "$out" --form pcapng-binres >"$out.manifest" 2>"$TMP/gen.err"; then
  bs_json "$out.json" "$out"
  check "big-endian pcapng with binary if_tsresol: packets, bytes, exact first/last ns" \
    pycheck inputs "$out.json" "$out.manifest"
  check "big-endian pcapng with binary if_tsresol: totals equal the original" \
    pycheck totals "$out.json" "$orig_packets" "$orig_bytes"
  check "big-endian pcapng with binary if_tsresol: first_ns/last_ns" test \
    "$(json "$out.json" "(d['first_ns'], d['last_ns'])")" = "$(json "$out.manifest" "(d['first_ns'], d['last_ns'])")"
else
  notok "convert to pcapng-binres"; sed 's/^/# /' "$TMP/gen.err"
fi

# b. Standard input ("-"): the same as the file, whatever its compression.
for i in "${!HP[@]}"; do
  f=${HP[$i]}
  bs_json "$TMP/file$i.json" "$f"
  timeout 120 "$BS" analyze --json - <"$f" >"$TMP/stdin$i.json" 2>"$TMP/stdin$i.err"
  check "${HF[$i]} on standard input equals ${HF[$i]} by path" pycheck same "$TMP/stdin$i.json" "$TMP/file$i.json"
  check "${HF[$i]} on standard input: format, compression, link types, packets" \
    "$PY" -c "
import json, sys
a, b = (json.load(open(p))['inputs']['files'] for p in sys.argv[1:3])
keys = ('format', 'compression', 'link_types', 'packets', 'first_ns', 'last_ns')
ok = len(a) == len(b) == 1 and all(a[0].get(k) == b[0].get(k) for k in keys)
print(a, b) if not ok else None
sys.exit(0 if ok else 1)" "$TMP/stdin$i.json" "$TMP/file$i.json"
done
# One of several files on standard input, in the middle of the list.
if [ "${#HP[@]}" -ge 3 ]; then
  args=("${HP[@]}")
  args[1]=-
  timeout 120 "$BS" analyze --json "${args[@]}" <"${HP[1]}" >"$TMP/mixed.json" 2>"$TMP/mixed.err"
  check "host files with ${HF[1]} on standard input equal the host files by path" \
    pycheck same "$TMP/mixed.json" "$TMP/hosts.json"
  check "host files with ${HF[1]} on standard input: inputs.files right" pycheck inputs "$TMP/mixed.json" "$H/manifest.json" 1
fi
gzip -c "$TRACE" >"$TMP/orig.gz"
timeout 120 "$BS" analyze --json - <"$TMP/orig.gz" >"$TMP/orig-gz-stdin.json" 2>"$TMP/orig-gz-stdin.err"
check "gzip of the original on standard input equals the original" pycheck same "$TMP/orig-gz-stdin.json" "$TMP/orig.json"
check "gzip on standard input is detected as gzip" test "$(json "$TMP/orig-gz-stdin.json" "d['inputs']['files'][0]['compression']")" = gzip
if gen convert "$TRACE" "$TMP/whole.pcapng.zst" --form pcapng:zstd >"$TMP/whole.pcapng.manifest" 2>"$TMP/gen.err"; then
  timeout 120 "$BS" analyze --json - <"$TMP/whole.pcapng.zst" >"$TMP/whole-ng-stdin.json" 2>"$TMP/whole-ng-stdin.err"
  check "whole capture as a two-interface pcapng (raw IP + cooked v1, if_tsoffset), zstd, on standard input, equals the original" \
    pycheck same "$TMP/whole-ng-stdin.json" "$TMP/orig.json"
  check "two-interface pcapng on standard input: inputs.files right" \
    pycheck inputs "$TMP/whole-ng-stdin.json" "$TMP/whole.pcapng.manifest" 0
else
  notok "convert to pcapng:zstd"; sed 's/^/# /' "$TMP/gen.err"
fi

# c. Real host captures from public corpora (tests/corpus/hostlink/README.md): counts per capinfos, decode
#    errors by name, the ledger balanced; link types, times and bytes per the generator's independent reader.
shopt -s nullglob
corpus_files=("$CORPUS"/*.pcap "$CORPUS"/*.pcapng)
shopt -u nullglob
if [ "${#corpus_files[@]}" -eq 0 ]; then
  notok "host-link corpus present in $CORPUS"
fi
for f in "${corpus_files[@]}"; do
  name=$(basename "$f")
  count=$(capcount "$f")
  if bs_json "$TMP/c-$name.json" "$f" && gen info "$f" >"$TMP/c-$name.info" 2>"$TMP/gen.err"; then
    check "corpus $name: $count frames per capinfos = packets = ledger received; link types, times, bytes" \
      pycheck corpus "$TMP/c-$name.json" "$TMP/c-$name.info" "$count"
    check "corpus $name: decode errors by name ($(json "$TMP/c-$name.info" "d[0]['link_errors']") expected)" \
      pycheck errors_named "$TMP/c-$name.json" "$(json "$TMP/c-$name.info" "d[0]['link_errors']")"
  else
    notok "corpus $name: analyze (exit status non-zero) or info failed"; sed 's/^/# /' "$TMP/c-$name.json.err" "$TMP/gen.err"
  fi
done

# Host captures with known link-layer decode errors: counted by the contract's names, nothing lost.
M=$TMP/malformed
gen malformed "$M" 2>"$TMP/gen.err" || { notok "make_host_captures.py malformed"; sed 's/^/# /' "$TMP/gen.err"; }
for name in $(json "$M/manifest.json" "' '.join(f['path'] for f in d['files'])" 2>/dev/null); do
  if bs_json "$TMP/m-$name.json" "$M/$name"; then
    check "$name: decode errors $(json "$M/manifest.json" "[f['errors'] for f in d['files'] if f['path'] == '$name'][0]"), the rest ok, packets = capinfos count" \
      pycheck malformed "$TMP/m-$name.json" "$M/manifest.json" "$name" "$(capcount "$M/$name")"
  else
    notok "$name: analyze exit status non-zero"; sed 's/^/# /' "$TMP/m-$name.json.err"
  fi
done

# d. Files far apart in time: warned (JSON and text), inputs.overlap false. Files of one capture: not.
S=$TMP/shifted
if gen split "$TRACE" "$S" --shift 2=100 2>"$TMP/gen.err"; then
  mapfile -t SF < <(json "$S/manifest.json" "'\n'.join(f['path'] for f in d['files'])")
  bs_json "$TMP/shifted.json" "$S/${SF[0]}" "$S/${SF[1]}"
  check "two files 100 s apart: 'do not overlap in time' in inputs.warnings, inputs.overlap false" \
    pycheck overlap "$TMP/shifted.json" no
  check "two files 100 s apart: still one analysis of both" pycheck totals "$TMP/shifted.json" \
    "$(json "$S/manifest.json" "d['files'][0]['packets'] + d['files'][1]['packets']")" \
    "$(json "$S/manifest.json" "d['files'][0]['bytes'] + d['files'][1]['bytes']")"
  timeout 120 "$BS" analyze "$S/${SF[0]}" "$S/${SF[1]}" >"$TMP/shifted.txt" 2>&1
  check "two files 100 s apart: the text report says they do not overlap in time" grep -q "do not overlap in time" "$TMP/shifted.txt"
else
  notok "split with --shift"; sed 's/^/# /' "$TMP/gen.err"
fi
bs_json "$TMP/pair.json" "${HP[0]}" "${HP[1]}"
check "two host files of one capture: no overlap warning, inputs.overlap true" pycheck overlap "$TMP/pair.json" yes

# e. Duplicate suppression. Planted copies (TTL/hop limit one lower, checksum redone, 5 us later, in another
#    host's file) are removed exactly with --dedup-window; without it they are counted.
D=$TMP/dups
if gen split "$TRACE" "$D" --plant-duplicates 25 2>"$TMP/gen.err"; then
  planted=$(json "$D/manifest.json" "d['planted']")
  planted_bytes=$(json "$D/manifest.json" "d['planted_bytes']")
  delay_ns=$(json "$D/manifest.json" "d['dup_delay_ns']")
  mapfile -t DF < <(json "$D/manifest.json" "'\n'.join(f['path'] for f in d['files'])")
  DP=("${DF[@]/#/$D/}")
  bs_json "$TMP/dedup.json" --dedup-window 1ms "${DP[@]}"
  check "--dedup-window 1ms removes the $planted planted duplicates exactly (inputs)" \
    pycheck dedup "$TMP/dedup.json" "$planted" 1000000
  check "--dedup-window 1ms: ledger.duplicates_removed = $planted, balanced" pycheck ledger "$TMP/dedup.json" - "$planted"
  check "--dedup-window 1ms: the analysis equals the original's" pycheck same "$TMP/dedup.json" "$TMP/orig.json"
  check "--dedup-window 1ms: inputs.files counts every frame read, copies included" pycheck inputs "$TMP/dedup.json" "$D/manifest.json"
  bs_json "$TMP/nodedup.json" "${DP[@]}"
  check "no --dedup-window: the duplicates are counted (packets = original + $planted, bytes + $planted_bytes)" \
    pycheck totals "$TMP/nodedup.json" $((orig_packets + planted)) $((orig_bytes + planted_bytes))
  check "no --dedup-window: nothing removed, dedup_window_ns 0" pycheck dedup "$TMP/nodedup.json" 0 0
  check "no --dedup-window: ledger balanced, received = every frame" pycheck ledger "$TMP/nodedup.json" $((orig_packets + planted)) 0
  short_us=$((delay_ns / 2000))
  if [ "$short_us" -ge 1 ]; then
    bs_json "$TMP/shortdedup.json" --dedup-window "${short_us}us" "${DP[@]}"
    check "--dedup-window ${short_us}us, shorter than the copies' delay: nothing removed" \
      pycheck dedup "$TMP/shortdedup.json" 0 $((short_us * 1000))
    check "--dedup-window ${short_us}us: packets = original + $planted" \
      pycheck totals "$TMP/shortdedup.json" $((orig_packets + planted)) $((orig_bytes + planted_bytes))
  fi
else
  notok "split with --plant-duplicates"; sed 's/^/# /' "$TMP/gen.err"
fi
bs_json "$TMP/clean-dedup.json" --dedup-window 500us "${HP[@]}"
check "--dedup-window 500us on the clean host files: nothing removed" pycheck dedup "$TMP/clean-dedup.json" 0 500000
check "--dedup-window 500us on the clean host files: the analysis equals the original's" \
  pycheck same "$TMP/clean-dedup.json" "$TMP/orig.json"
# The mirror capture and host 1's own capture of the same frames: host 1's frames are all seen twice.
h1_packets=$(json "$H/manifest.json" "d['files'][0]['packets']")
bs_json "$TMP/mirror-and-host.json" --dedup-window 1ms "$TRACE" "${HP[0]}"
check "the original plus ${HF[0]} with --dedup-window 1ms: $h1_packets duplicates removed" \
  pycheck dedup "$TMP/mirror-and-host.json" "$h1_packets" 1000000
check "the original plus ${HF[0]} with --dedup-window 1ms: the analysis equals the original's" \
  pycheck same "$TMP/mirror-and-host.json" "$TMP/orig.json"

# f. Not a capture: a clear error naming the file, non-zero exit, no core dump.
expect_error() {  # name, file named in the error, command...
  local name=$1 file=$2; shift 2
  timeout 60 "$@" >"$TMP/stdout" 2>"$TMP/stderr"
  local rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -lt 124 ] && grep -q -F -- "$(basename "$file")" "$TMP/stderr"; then
    ok "$name (exit $rc)"
  else
    notok "$name (exit $rc)"; sed 's/^/# /' "$TMP/stderr"
  fi
}
printf 'not a capture file at all, just some text\n%.0s' {1..20} >"$TMP/notes.cap"
expect_error "a text file: error naming it" "$TMP/notes.cap" "$BS" analyze --json "$TMP/notes.cap"
expect_error "a text file among host files: error naming it" "$TMP/notes.cap" "$BS" analyze --json "${HP[0]}" "$TMP/notes.cap"
gzip -c "$TMP/notes.cap" >"$TMP/notes-gz.cap"
expect_error "gzip of a text file: error naming it" "$TMP/notes-gz.cap" "$BS" analyze --json "$TMP/notes-gz.cap"
zstd -q -c "$TMP/notes.cap" >"$TMP/notes-zst.cap"
expect_error "zstd of a text file: error naming it" "$TMP/notes-zst.cap" "$BS" analyze --json "$TMP/notes-zst.cap"
printf '\x1f\x8b\x08\x00garbage that is not deflate data' >"$TMP/broken-gz.cap"
expect_error "a corrupt gzip stream: error naming it" "$TMP/broken-gz.cap" "$BS" analyze --json "$TMP/broken-gz.cap"

echo "1..$n"
[ "$failed" -eq 0 ]
