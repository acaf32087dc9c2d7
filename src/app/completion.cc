// `burstscope completion bash|zsh` (hidden from --help): a completion script for the shell, made from the
// command line's own option table (CLI11's: each command, its flags, which of them take a value or repeat,
// its positional arguments), so that it never disagrees with the binary. The build makes both scripts with
// it and installs them (meson.build, scripts/completion.sh); tests/cli/check_completion.sh tests them in bash
// and zsh.
#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "src/app/cli.h"

namespace burstscope::cli {
namespace {

// A flag as the completion needs it.
struct Flag {
  std::vector<std::string> names;  // "-o", "--out"
  std::string description;
  std::string type;  // the value's kind as --help shows it ("TEXT", "UINT", ...); empty for a flag without value
  bool repeatable = false;
};

struct CommandTable {
  std::string name;
  std::string description;
  std::vector<Flag> flags;
  // The positional arguments (each command has at most one, files or jobs): what they are, empty if none.
  std::string positional;
  bool positional_repeats = false;
};

// Options hidden from --help (an empty group) are left out here too.
std::vector<Flag> flagsOf(const CLI::App& app) {
  std::vector<Flag> out;
  for (const CLI::Option* opt : app.get_options()) {
    if (!opt->nonpositional() || opt->get_group().empty()) continue;
    Flag f;
    for (const std::string& s : opt->get_snames()) f.names.push_back("-" + s);
    for (const std::string& l : opt->get_lnames()) f.names.push_back("--" + l);
    f.description = opt->get_description();
    if (opt->get_items_expected_max() > 0) {
      const std::string type = opt->get_type_name();
      f.type = type.substr(0, type.find(':'));  // "TEXT:FILE": the type before its checks
      f.repeatable = opt->get_items_expected_max() > 1;
    }
    out.push_back(f);
  }
  return out;
}

// The top level (name empty) and every command --help lists, in its order.
std::vector<CommandTable> tableOf(const CLI::App& top) {
  std::vector<CommandTable> out;
  out.push_back(CommandTable{"", top.get_description(), flagsOf(top), "", false});
  for (const CLI::App* sub : top.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); })) {
    CommandTable c{sub->get_name(), sub->get_description(), flagsOf(*sub), "", false};
    for (const CLI::Option* opt : sub->get_options()) {
      if (!opt->get_positional() || opt->nonpositional()) continue;
      c.positional = opt->get_description();
      c.positional_repeats = opt->get_items_expected_max() > 1;
    }
    out.push_back(c);
  }
  return out;
}

std::vector<std::string> allNames(const std::vector<Flag>& flags) {
  std::vector<std::string> out;
  for (const Flag& f : flags) out.insert(out.end(), f.names.begin(), f.names.end());
  return out;
}

// A shell word in single quotes.
std::string shellWord(const std::string& s) { return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'"); }

// bash: the command at the first word that is not a flag (the top level's flags take no value); after it,
// a word that begins with '-' completes to the command's flags, and so does an empty word when the command has
// no positional arguments. Everything else (a flag's value, a file, what follows "--") is left to bash's
// default completion, file names (complete -o default).
std::string bashScript(const std::vector<CommandTable>& table) {
  std::string s =
      "# bash completion for burstscope, made by `burstscope completion bash` from the command line's own option\n"
      "# table (src/app/completion.cc). Do not edit: the build makes it again.\n"
      "_burstscope() {\n"
      "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} cmd='' words='' i\n"
      "  COMPREPLY=()\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    case ${COMP_WORDS[i]} in\n"
      "      --) return 0 ;;\n"
      "      -*) ;;\n"
      "      *) if [ -z \"$cmd\" ]; then cmd=${COMP_WORDS[i]}; fi ;;\n"
      "    esac\n"
      "  done\n"
      "  # --flag=value: bash splits the word at '='; the value is a file name or free text.\n"
      "  if [ \"$cur\" = = ] || [ \"$prev\" = = ]; then return 0; fi\n"
      "  if [ -z \"$cmd\" ]; then\n"
      "    compopt +o default 2>/dev/null\n"
      "    case $cur in\n";
  std::vector<std::string> commands;
  for (size_t i = 1; i < table.size(); ++i) commands.push_back(table[i].name);
  absl::StrAppend(&s, "      -*) words=", shellWord(absl::StrJoin(allNames(table[0].flags), " ")), " ;;\n",
                  "      *) words=", shellWord(absl::StrJoin(commands, " ")), " ;;\n", "    esac\n",
                  "    mapfile -t COMPREPLY < <(compgen -W \"$words\" -- \"$cur\")\n", "    return 0\n", "  fi\n",
                  "  local positional=1\n", "  case $cmd in\n");
  for (size_t i = 1; i < table.size(); ++i) {
    const CommandTable& c = table[i];
    std::vector<std::string> valued;
    for (const Flag& f : c.flags) {
      if (!f.type.empty()) valued.insert(valued.end(), f.names.begin(), f.names.end());
    }
    absl::StrAppend(&s, "    ", c.name, ")\n");
    if (!valued.empty()) {
      absl::StrAppend(&s, "      case $prev in ", absl::StrJoin(valued, "|"), ") return 0 ;; esac\n");
    }
    absl::StrAppend(&s, "      words=", shellWord(absl::StrJoin(allNames(c.flags), " ")),
                    c.positional.empty() ? "\n      positional=0\n" : "\n", "      ;;\n");
  }
  absl::StrAppend(&s,
                  "    *) return 0 ;;\n"
                  "  esac\n"
                  "  if [[ $cur == -* ]] || [ \"$positional\" = 0 ]; then\n"
                  "    compopt +o default 2>/dev/null\n"
                  "    mapfile -t COMPREPLY < <(compgen -W \"$words\" -- \"$cur\")\n"
                  "  fi\n"
                  "  return 0\n"
                  "}\n"
                  "complete -o default -F _burstscope burstscope\n");
  return s;
}

// Text inside an _arguments spec's [explanation] or :message: (a backslash before what would end it).
std::string zshSpecText(const std::string& s) {
  return absl::StrReplaceAll(s, {{"\\", "\\\\"}, {"[", "\\["}, {"]", "\\]"}, {":", "\\:"}});
}

// One _arguments spec per flag (short and long names together): the value's kind as the message, file names
// for text values, nothing to offer for numbers. One name excludes the others unless the flag repeats; the
// help and version flags exclude everything.
std::string zshFlag(const Flag& f) {
  std::vector<std::string> names;
  for (const std::string& n : f.names) names.push_back(n + (f.type.empty() ? "" : n.size() == 2 ? "+" : "="));
  std::string prefix;
  if (absl::c_linear_search(f.names, "--help") || absl::c_linear_search(f.names, "--version")) {
    prefix = "(- *)";
  } else if (f.repeatable) {
    prefix = "*";
  } else if (f.names.size() > 1) {
    prefix = absl::StrCat("(", absl::StrJoin(f.names, " "), ")");
  }
  std::string spec = absl::StrCat("[", zshSpecText(f.description), "]");
  if (!f.type.empty()) absl::StrAppend(&spec, ":", zshSpecText(f.type), ":", f.type == "TEXT" ? "_files" : " ");
  if (names.size() == 1) return shellWord(prefix + names[0] + spec);
  return absl::StrCat(prefix.empty() ? "" : shellWord(prefix), "{", absl::StrJoin(names, ","), "}", shellWord(spec));
}

// zsh: _arguments for the top level, then for the command named by the first argument, with _describe
// listing the commands and their descriptions.
std::string zshScript(const std::vector<CommandTable>& table) {
  std::string s =
      "#compdef burstscope\n"
      "# zsh completion for burstscope, made by `burstscope completion zsh` from the command line's own option\n"
      "# table (src/app/completion.cc). Do not edit: the build makes it again.\n"
      "\n"
      "_burstscope() {\n"
      "  local curcontext=$curcontext state line ret=1\n"
      "  typeset -A opt_args\n"
      "  _arguments -C";
  for (const Flag& f : table[0].flags) absl::StrAppend(&s, " \\\n    ", zshFlag(f));
  absl::StrAppend(&s,
                  " \\\n    '1: :->command' \\\n    '*:: :->argument' && ret=0\n"
                  "  case $state in\n"
                  "    command)\n"
                  "      local -a commands=(\n");
  for (size_t i = 1; i < table.size(); ++i) {
    absl::StrAppend(&s, "        ", shellWord(absl::StrCat(table[i].name, ":", table[i].description)), "\n");
  }
  absl::StrAppend(&s,
                  "      )\n"
                  "      _describe -t commands 'burstscope command' commands && ret=0\n"
                  "      ;;\n"
                  "    argument)\n"
                  "      curcontext=${curcontext%:*:*}:burstscope-$words[1]:\n"
                  "      case $words[1] in\n");
  for (size_t i = 1; i < table.size(); ++i) {
    const CommandTable& c = table[i];
    absl::StrAppend(&s, "        ", c.name, ")\n          _arguments -s -S");
    for (const Flag& f : c.flags) absl::StrAppend(&s, " \\\n            ", zshFlag(f));
    if (!c.positional.empty()) {
      absl::StrAppend(
          &s, " \\\n            ",
          shellWord(absl::StrCat(c.positional_repeats ? "*" : "1", ":", zshSpecText(c.positional), ":_files")));
    }
    absl::StrAppend(&s, " && ret=0\n          ;;\n");
  }
  absl::StrAppend(&s,
                  "      esac\n"
                  "      ;;\n"
                  "  esac\n"
                  "  return ret\n"
                  "}\n"
                  "\n"
                  "_burstscope \"$@\"\n");
  return s;
}

class CompletionSubcommand final : public Command {
 public:
  explicit CompletionSubcommand(const CLI::App& top) : top_(top) {}

  std::string shell;

  int run() override {
    const std::vector<CommandTable> table = tableOf(top_);
    std::cout << (shell == "zsh" ? zshScript(table) : bashScript(table));
    return 0;
  }

 private:
  const CLI::App& top_;
};

}  // namespace

std::unique_ptr<Command> addCompletionCommand(CLI::App& top) {
  auto c = std::make_unique<CompletionSubcommand>(top);
  // An empty group: not in --help's list of commands, nor in the completions it makes.
  c->app = top.add_subcommand("completion", "Print a completion script for bash or zsh")->group("");
  c->app->add_option("shell", c->shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));
  return c;
}

}  // namespace burstscope::cli
