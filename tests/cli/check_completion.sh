#!/usr/bin/env bash
# The shell completions (TAP, meson suite unit), in a real bash and, if installed, a real zsh: completing
# `burstscope ana` offers analyze, `burstscope analyze --sc` the --sc... flags, the command's position every
# command, and `burstscope COMMAND -` every flag of that command. What is expected comes from the binary's own
# --help, not from a list here. The scripts tested are the build's (meson.build makes them with the binary's
# hidden `completion` command), which must equal what the binary prints; a build without them (a sanitizer
# build) tests what the binary prints.
# usage: check_completion.sh BURSTSCOPE SOURCE_ROOT [BASH_SCRIPT ZSH_SCRIPT]
set -u
BS=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
ROOT=$(cd "$2" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export LC_ALL=C
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
# same WHAT EXPECTED_FILE GOT_FILE: equal as sets of lines (empty lines left out).
same() {
  grep -v '^$' "$2" | sort -u >"$TMP/same.want"
  grep -v '^$' "$3" | sort -u >"$TMP/same.got"
  if cmp -s "$TMP/same.want" "$TMP/same.got"; then
    ok "$1: $(tr '\n' ' ' <"$TMP/same.got")"
  else
    notok "$1"
    diff "$TMP/same.want" "$TMP/same.got" | sed 's/^/# /'
  fi
}

# What --help says: the commands, and each command's flags (every name of each, e.g. -o and --out).
"$BS" --help | sed -n '/^Subcommands:/,/^$/p' | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p' >"$TMP/commands"
flags_of() { "$BS" "$1" --help | sed -n '/^Options:/,/^$/p' | sed -n 's/^  \(-[^ ]*\).*/\1/p' | tr ',' '\n'; }
if [ "$(wc -l <"$TMP/commands")" -ge 6 ] && grep -qx analyze "$TMP/commands"; then
  ok "burstscope --help lists $(wc -l <"$TMP/commands") commands"
else
  notok "burstscope --help lists the commands (got: $(tr '\n' ' ' <"$TMP/commands"))"
fi

for shell in bash zsh; do
  if ! "$BS" completion "$shell" >"$TMP/printed.$shell" 2>"$TMP/err" || [ ! -s "$TMP/printed.$shell" ]; then
    notok "burstscope completion $shell prints a script"
    sed 's/^/# /' "$TMP/err"
  fi
done
BASH_SCRIPT=${3:-$TMP/printed.bash}
ZSH_SCRIPT=${4:-$TMP/printed.zsh}
if [ $# -ge 4 ]; then
  for pair in "bash:$BASH_SCRIPT" "zsh:$ZSH_SCRIPT"; do
    shell=${pair%%:*} file=${pair#*:}
    if cmp -s "$file" "$TMP/printed.$shell"; then
      ok "the build's $(basename "$file") is what burstscope completion $shell prints"
    else
      notok "the build's $file is what burstscope completion $shell prints"
    fi
  done
else
  echo "# no completion scripts from the build (a sanitizer build): testing what the binary prints"
fi

# ---- bash: the script sourced in a bash without start-up files, its function called as bash's completion
# calls it (COMP_WORDS, COMP_CWORD, and the command, current and previous word as arguments).
bash_complete() {
  bash --norc --noprofile -c '
    source "$1" || exit 1
    shift
    COMP_WORDS=("$@") COMP_CWORD=$(($# - 1)) COMP_LINE="$*" COMP_POINT=${#COMP_LINE}
    fn=$(complete -p burstscope | sed -n "s/.*-F \([^ ]*\) burstscope$/\1/p")
    "$fn" burstscope "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
    printf "%s\n" "${COMPREPLY[@]}"' bash "$BASH_SCRIPT" "$@"
}
if bash --norc --noprofile -c 'source "$1" && complete -p burstscope' bash "$BASH_SCRIPT" >"$TMP/out" 2>&1 &&
  grep -q -- '-F _burstscope' "$TMP/out"; then
  ok "bash: sourcing the script registers a completion for burstscope ($(cat "$TMP/out"))"
else
  notok "bash: sourcing the script registers a completion for burstscope"
  sed 's/^/# /' "$TMP/out"
fi
# As installed: bash-completion loads it on the first TAB from share/bash-completion/completions/burstscope
# in XDG_DATA_DIRS (meson install puts it there under the prefix).
if [ -f /usr/share/bash-completion/bash_completion ]; then
  mkdir -p "$TMP/share/bash-completion/completions"
  cp "$BASH_SCRIPT" "$TMP/share/bash-completion/completions/burstscope"
  if XDG_DATA_DIRS=$TMP/share BASH_COMPLETION_USER_DIR=$TMP/none bash --norc --noprofile -c \
    'source /usr/share/bash-completion/bash_completion && __load_completion burstscope && complete -p burstscope' \
    >"$TMP/out" 2>&1 && grep -q -- '-F _burstscope' "$TMP/out"; then
    ok "bash-completion loads it from share/bash-completion/completions/burstscope"
  else
    notok "bash-completion loads it from share/bash-completion/completions/burstscope"
    sed 's/^/# /' "$TMP/out"
  fi
else
  n=$((n + 1))
  echo "ok $n # SKIP bash-completion is not installed: its loader not tested (apt-get install bash-completion)"
fi
echo analyze >"$TMP/want.ana"
bash_complete burstscope ana >"$TMP/got" 2>&1
same "bash: burstscope ana<TAB> offers analyze" "$TMP/want.ana" "$TMP/got"
flags_of analyze | grep -- '^--sc' >"$TMP/want.sc"
[ -s "$TMP/want.sc" ] || notok "analyze --help has a flag that begins with --sc"
bash_complete burstscope analyze --sc >"$TMP/got" 2>&1
same "bash: burstscope analyze --sc<TAB> offers analyze --help's --sc flags" "$TMP/want.sc" "$TMP/got"
bash_complete burstscope '' >"$TMP/got" 2>&1
same "bash: burstscope <TAB> offers the commands of --help" "$TMP/commands" "$TMP/got"
while read -r cmd; do
  flags_of "$cmd" >"$TMP/want"
  bash_complete burstscope "$cmd" - >"$TMP/got" 2>&1
  same "bash: burstscope $cmd -<TAB> offers every flag of $cmd --help" "$TMP/want" "$TMP/got"
done <"$TMP/commands"
: >"$TMP/empty"
bash_complete burstscope analyze --workers '' >"$TMP/got" 2>&1
same "bash: a flag's value (analyze --workers <TAB>) is left to bash's default completion" "$TMP/empty" "$TMP/got"
bash_complete burstscope run --port 0 -- - >"$TMP/got" 2>&1
same "bash: after -- (EAL arguments) nothing of burstscope's is offered" "$TMP/empty" "$TMP/got"

# ---- zsh: an interactive zsh in a pseudo-terminal types the line and TAB (zsh_complete.zsh).
if ! command -v zsh >/dev/null; then
  n=$((n + 1))
  echo "ok $n # SKIP zsh is not installed (apt-get install zsh; scripts/setup.sh installs it)"
else
  mkdir -p "$TMP/zfunc"
  cp "$ZSH_SCRIPT" "$TMP/zfunc/_burstscope"
  zsh_complete() { zsh -f "$ROOT/tests/cli/zsh_complete.zsh" "$TMP/zfunc" "$1" "$TMP/got" 2>"$TMP/zerr" || cat "$TMP/zerr"; }
  if zsh -n "$ZSH_SCRIPT" 2>"$TMP/zerr"; then
    ok "zsh: the script parses (zsh -n)"
  else
    notok "zsh: the script parses"
    sed 's/^/# /' "$TMP/zerr"
  fi
  zsh_complete "burstscope ana"
  same "zsh: burstscope ana<TAB> offers analyze" "$TMP/want.ana" "$TMP/got"
  zsh_complete "burstscope analyze --sc"
  same "zsh: burstscope analyze --sc<TAB> offers analyze --help's --sc flags" "$TMP/want.sc" "$TMP/got"
  zsh_complete "burstscope "
  same "zsh: burstscope <TAB> offers the commands of --help" "$TMP/commands" "$TMP/got"
  while read -r cmd; do
    flags_of "$cmd" >"$TMP/want"
    zsh_complete "burstscope $cmd -"
    same "zsh: burstscope $cmd -<TAB> offers every flag of $cmd --help" "$TMP/want" "$TMP/got"
  done <"$TMP/commands"
fi

echo "1..$n"
[ "$failed" -eq 0 ]
