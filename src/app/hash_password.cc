// `burstscope hash-password`: a password read on stdin, its bcrypt hash printed for export.basic-auth.
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "src/app/cli.h"
#include "src/export/http_server.h"

namespace burstscope::cli {
namespace {

int hashPasswordCommand() {
  std::string password;
  std::getline(std::cin, password);
  if (password.empty()) {
    std::cerr << "burstscope: hash-password: no password on stdin\n";
    return 2;
  }
  auto h = hashPassword(password);
  if (!h.ok()) return fail(h.status(), 1);
  std::cout << *h << "\n";
  return 0;
}

class HashPasswordSubcommand final : public Command {
 public:
  int run() override { return hashPasswordCommand(); }
};

}  // namespace

std::unique_ptr<Command> addHashPasswordCommand(CLI::App& top) {
  auto c = std::make_unique<HashPasswordSubcommand>();
  c->app = top.add_subcommand("hash-password", "Read a password on stdin, print its bcrypt hash for export.basic-auth");
  return c;
}

}  // namespace burstscope::cli
