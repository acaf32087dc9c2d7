// The web configuration file of Prometheus exporters (the exporter-toolkit's `--web.config.file` format), read
// for burstscope's metrics endpoint: TLS with a certificate and key (and optionally client certificates checked
// against a CA), basic-auth users with bcrypt hashes, and extra response headers. Relative paths are taken from
// the file's own directory, as the exporter-toolkit does. Loading reads and checks every file it names (the key
// must match the certificate, the CA must hold a certificate), so that a bad file is refused at start and on
// SIGHUP before anything is swapped in.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace burstscope {

enum class ClientAuth {
  kNone,              // NoClientCert
  kVerifyIfGiven,     // VerifyClientCertIfGiven: a certificate, when sent, must chain to the CA
  kRequireAndVerify,  // RequireAndVerifyClientCert
};

struct TlsServerConfig {
  std::string cert_pem, key_pem, client_ca_pem;  // the contents, read at load
  std::string cert_source, key_source;           // file names (or "inline"), for messages
  ClientAuth client_auth = ClientAuth::kNone;
  std::string priorities;  // GnuTLS priority string made from min_version / max_version
};

struct WebConfig {
  std::string path;
  bool tls = false;
  TlsServerConfig tls_config;
  std::map<std::string, std::string> users;  // user name -> crypt(3) hash (bcrypt, yescrypt, sha512crypt)
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::string> warnings;  // accepted keys that do nothing here, said once at load
};

absl::StatusOr<WebConfig> loadWebConfig(const std::string& path);

// Whether `hash` is a crypt(3) hash burstscope accepts (bcrypt, yescrypt, sha512crypt), and what to say when not.
bool acceptedPasswordHash(const std::string& hash);
extern const char kPasswordHashHelp[];

}  // namespace burstscope
