#!/usr/bin/env bash
# Makes the shell completion scripts from the binary's own option table (called by meson at build time, as
# man_page.sh makes the man page from its help): `burstscope completion bash|zsh`, each parsed by its shell
# (zsh only where it is installed) before it is written, so that a broken script fails the build.
# usage: completion.sh BURSTSCOPE BASH_OUT ZSH_OUT
set -euo pipefail
BS=$1 BASH_OUT=$2 ZSH_OUT=$3
"$BS" completion bash >"$BASH_OUT.new"
bash -n "$BASH_OUT.new"
"$BS" completion zsh >"$ZSH_OUT.new"
if command -v zsh >/dev/null; then zsh -n "$ZSH_OUT.new"; fi
mv "$BASH_OUT.new" "$BASH_OUT"
mv "$ZSH_OUT.new" "$ZSH_OUT"
