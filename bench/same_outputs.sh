#!/bin/bash
# Whether two builds give the same outputs, byte for byte: `analyze` (text and --json) of every recording under
# data/ (and of further pcaps given), each run twice by each binary. The only field left out is the JSON's
# "analysis_ms" (the analysis' own run time). A change that claims to change no figure (bench/README.md, issue
# 41) is checked with it; run with one binary twice (OLD = NEW) it checks that outputs do not vary between runs.
# usage: bench/same_outputs.sh OLD_BINARY NEW_BINARY [PCAP...]
set -u
old=$1 new=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
files=("$root"/data/*.pcap "$root"/data/*.pcapng "$root"/data/testbed/*.pcap "$root"/data/roce/*.pcap "$@")
differ=0 count=0
for f in "${files[@]}"; do
  [ -e "$f" ] || continue
  count=$((count + 1))
  for run in 1 2; do
    for b in old new; do
      bin=$old
      [ $b = new ] && bin=$new
      if ! "$bin" analyze --json "$f" >"$tmp/raw.json" 2>"$tmp/err" || ! "$bin" analyze "$f" >"$tmp/$b-$run.txt" 2>>"$tmp/err"; then
        echo "FAILED: $bin analyze $f: $(head -c 300 "$tmp/err")"
        exit 1
      fi
      grep -v '"analysis_ms":' "$tmp/raw.json" >"$tmp/$b-$run.json"
    done
  done
  for x in json txt; do
    if ! cmp -s "$tmp/old-1.$x" "$tmp/new-1.$x" || ! cmp -s "$tmp/old-1.$x" "$tmp/old-2.$x" ||
      ! cmp -s "$tmp/new-1.$x" "$tmp/new-2.$x"; then
      differ=$((differ + 1))
      echo "DIFFERS: $f ($x)"
      diff "$tmp/old-1.$x" "$tmp/new-1.$x" | head -6
    fi
  done
done
echo "$count files, $differ outputs differ"
[ "$count" -gt 0 ] && [ "$differ" -eq 0 ]
