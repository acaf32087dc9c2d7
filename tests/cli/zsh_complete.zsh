# What zsh's completion offers for a command line, as a user gets it: an interactive zsh in a pseudo-terminal
# (zpty) with compinit and the completion function's directory first in fpath types the line and TAB. Every
# word the completion functions add is written to OUT, one per line (compadd wrapped: what `builtin compadd -A`
# says its arguments match); the calls that only ask (-O, -A, -D) are passed through.
# usage: zsh -f zsh_complete.zsh FUNCTION_DIR 'burstscope analyze --sc' OUT
zmodload zsh/zpty || exit 2
dir=$1 typed=$2 out=$3
rm -f "$out" "$out.done"
: >"$out"
zpty -b bs_zsh zsh -f -i
zpty -w bs_zsh "PS1='READY> '; setopt nobeep; fpath=(${(q)dir} \$fpath); autoload -Uz compinit; compinit -u -D;" \
  "compadd() { if (( \${@[(I)-[OAD]*]} )); then builtin compadd \"\$@\"; return; fi;" \
  "local -a hits; builtin compadd -A hits \"\$@\"; print -rl -- \$hits >>${(q)out}; builtin compadd \"\$@\"; };" \
  "bs_done() { : >${(q)out}.done }; zle -N bs_done; bindkey '^Xd' bs_done"
screen=''
wait_for() {  # up to 10 s
  local chunk i
  for i in {1..100}; do
    zpty -rt bs_zsh chunk && screen+=$chunk
    eval "$1" && return 0
    sleep 0.1
  done
  return 1
}
wait_for '[[ $screen == *READY\>* ]]' || { print -u2 "zsh did not start: $screen"; zpty -d bs_zsh; exit 1; }
# The line, TAB, then a widget that says the completion is over (keys are read in order).
zpty -w -n bs_zsh "$typed"$'\t\x18d'
wait_for '[[ -f $out.done ]]' || { print -u2 "no completion within 10 s: $screen"; zpty -d bs_zsh; exit 1; }
zpty -d bs_zsh
rm -f "$out.done"
