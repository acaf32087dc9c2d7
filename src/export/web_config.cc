#include "src/export/web_config.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <sys/stat.h>

#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "burstscope/status.h"
#include "yaml-cpp/yaml.h"

namespace burstscope {
namespace {

// Only a regular file of reasonable size is read (not a FIFO, a device or /dev/zero that would never end).
absl::Status regularFile(const std::string& file) {
  struct stat st {};
  if (stat(file.c_str(), &st) != 0) return absl::InvalidArgumentError(absl::StrCat("cannot read '", file, "'"));
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(absl::StrCat("'", file, "' is not a regular file"));
  if (st.st_size > (1 << 20)) return absl::InvalidArgumentError(absl::StrCat("'", file, "' is over 1 MiB"));
  return absl::OkStatus();
}

// Errors name the file, the line and the dotted key, like the run file's.
class WebReader {
 public:
  explicit WebReader(std::string path) : path_(std::move(path)) {}
  absl::Status error(const YAML::Node& n, const std::string& key, const std::string& what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("web config ", path_, ":", n.Mark().line + 1, ": ", key, ": ", what));
  }
  absl::Status keys(const YAML::Node& n, const std::string& path, const std::set<std::string>& allowed,
                    const std::set<std::string>& unsupported = {}) const {
    if (!n.IsMap()) return error(n, path.empty() ? "(top level)" : path, "must be a mapping");
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string k = it->first.Scalar();
      const std::string full = path.empty() ? k : absl::StrCat(path, ".", k);
      if (unsupported.count(k)) {
        return error(it->first, full, "is not supported by burstscope (docs/operations.md, \"TLS and basic auth\")");
      }
      if (!allowed.count(k)) {
        return error(it->first, full,
                     absl::StrCat("unknown key (expected one of: ", absl::StrJoin(allowed, ", "), ")"));
      }
    }
    return absl::OkStatus();
  }
  absl::Status scalar(const YAML::Node& n, const std::string& key, std::string* out) const {
    if (!n.IsScalar()) return error(n, key, "must be a single value");
    *out = n.Scalar();
    return absl::OkStatus();
  }
  // A file named relative to the web config's own directory.
  absl::StatusOr<std::string> readFile(const YAML::Node& n, const std::string& key, std::string* name) const {
    BS_RETURN_IF_ERROR(scalar(n, key, name));
    std::string file = *name;
    const size_t slash = path_.rfind('/');
    if (!file.empty() && file[0] != '/' && slash != std::string::npos) file = path_.substr(0, slash + 1) + file;
    if (absl::Status st = regularFile(file); !st.ok()) return error(n, key, std::string(st.message()));
    std::ifstream in(file, std::ios::binary);
    if (!in) return error(n, key, absl::StrCat("cannot read '", file, "'"));
    std::ostringstream s;
    s << in.rdbuf();
    *name = file;
    return s.str();
  }

 private:
  std::string path_;
};

absl::Status gnutlsError(const std::string& what, int rc) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", gnutls_strerror(rc)));
}

// The key must belong to the certificate, and the CA file must hold at least one certificate.
absl::Status checkCredentials(const WebConfig& w) {
  gnutls_certificate_credentials_t cred = nullptr;
  if (int rc = gnutls_certificate_allocate_credentials(&cred); rc < 0) return gnutlsError("gnutls", rc);
  const TlsServerConfig& t = w.tls_config;
  gnutls_datum_t cert{reinterpret_cast<unsigned char*>(const_cast<char*>(t.cert_pem.data())),
                      static_cast<unsigned>(t.cert_pem.size())};
  gnutls_datum_t key{reinterpret_cast<unsigned char*>(const_cast<char*>(t.key_pem.data())),
                     static_cast<unsigned>(t.key_pem.size())};
  absl::Status status;
  if (int rc = gnutls_certificate_set_x509_key_mem2(cred, &cert, &key, GNUTLS_X509_FMT_PEM, nullptr, 0); rc < 0) {
    status = gnutlsError(absl::StrCat("web config ", w.path, ": tls_server_config: certificate ", t.cert_source,
                                      " with key ", t.key_source),
                         rc);
  } else if (!t.client_ca_pem.empty()) {
    gnutls_datum_t ca{reinterpret_cast<unsigned char*>(const_cast<char*>(t.client_ca_pem.data())),
                      static_cast<unsigned>(t.client_ca_pem.size())};
    const int n = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM);
    if (n <= 0) {
      status = n < 0 ? gnutlsError(absl::StrCat("web config ", w.path, ": tls_server_config.client_ca_file"), n)
                     : absl::InvalidArgumentError(absl::StrCat(
                           "web config ", w.path, ": tls_server_config.client_ca_file: no certificate in it"));
    }
  }
  gnutls_certificate_free_credentials(cred);
  return status;
}

absl::StatusOr<std::string> versionName(const WebReader& rd, const YAML::Node& n, const std::string& key) {
  static const std::map<std::string, std::string> kVersions = {
      {"TLS10", "VERS-TLS1.0"}, {"TLS11", "VERS-TLS1.1"}, {"TLS12", "VERS-TLS1.2"}, {"TLS13", "VERS-TLS1.3"}};
  std::string v;
  BS_RETURN_IF_ERROR(rd.scalar(n, key, &v));
  auto it = kVersions.find(v);
  if (it == kVersions.end())
    return rd.error(n, key, absl::StrCat("'", v, "' is not one of TLS10, TLS11, TLS12, TLS13"));
  return it->first;
}

}  // namespace

const char kPasswordHashHelp[] =
    "not a bcrypt ($2b$, $2y$, $2a$), yescrypt ($y$) or sha512crypt ($6$) hash; make one with `burstscope "
    "hash-password`";

bool acceptedPasswordHash(const std::string& h) {
  for (const char* prefix : {"$2b$", "$2y$", "$2a$", "$y$", "$6$"}) {
    if (h.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

absl::StatusOr<WebConfig> loadWebConfig(const std::string& path) {
  WebConfig w;
  w.path = path;
  if (absl::Status st = regularFile(path); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("web config ", path, ": ", st.message()));
  }
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return absl::InvalidArgumentError(absl::StrCat("web config ", path, ": cannot read the file"));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("web config ", path, ":", e.mark.line + 1, ": ", e.msg));
  }
  const WebReader rd(path);
  if (root.IsNull()) return w;  // an empty file: plain HTTP, no users
  BS_RETURN_IF_ERROR(
      rd.keys(root, "", {"tls_server_config", "http_server_config", "basic_auth_users"}, {"rate_limit"}));
  if (const YAML::Node t = root["tls_server_config"]) {
    const std::string p = "tls_server_config";
    BS_RETURN_IF_ERROR(
        rd.keys(t, p,
                {"cert_file", "key_file", "cert", "key", "client_auth_type", "client_ca_file", "client_ca",
                 "min_version", "max_version"},
                {"cipher_suites", "prefer_server_cipher_suites", "curve_preferences", "client_allowed_sans"}));
    TlsServerConfig& c = w.tls_config;
    w.tls = true;
    if (t["cert_file"] && t["cert"]) return rd.error(t, p, "give cert_file or cert, not both");
    if (t["key_file"] && t["key"]) return rd.error(t, p, "give key_file or key, not both");
    if (t["cert_file"]) {
      BS_ASSIGN_OR_RETURN(c.cert_pem, rd.readFile(t["cert_file"], p + ".cert_file", &c.cert_source));
    } else if (t["cert"]) {
      BS_RETURN_IF_ERROR(rd.scalar(t["cert"], p + ".cert", &c.cert_pem));
      c.cert_source = "(inline)";
    } else {
      return rd.error(t, p, "needs cert_file (or cert)");
    }
    if (t["key_file"]) {
      BS_ASSIGN_OR_RETURN(c.key_pem, rd.readFile(t["key_file"], p + ".key_file", &c.key_source));
    } else if (t["key"]) {
      BS_RETURN_IF_ERROR(rd.scalar(t["key"], p + ".key", &c.key_pem));
      c.key_source = "(inline)";
    } else {
      return rd.error(t, p, "needs key_file (or key)");
    }
    std::string ca_source;
    if (t["client_ca_file"]) {
      BS_ASSIGN_OR_RETURN(c.client_ca_pem, rd.readFile(t["client_ca_file"], p + ".client_ca_file", &ca_source));
    } else if (t["client_ca"]) {
      BS_RETURN_IF_ERROR(rd.scalar(t["client_ca"], p + ".client_ca", &c.client_ca_pem));
    }
    std::string auth = "NoClientCert";
    if (t["client_auth_type"]) BS_RETURN_IF_ERROR(rd.scalar(t["client_auth_type"], p + ".client_auth_type", &auth));
    if (auth == "NoClientCert") {
      c.client_auth = ClientAuth::kNone;
    } else if (auth == "VerifyClientCertIfGiven") {
      c.client_auth = ClientAuth::kVerifyIfGiven;
    } else if (auth == "RequireAndVerifyClientCert") {
      c.client_auth = ClientAuth::kRequireAndVerify;
    } else if (auth == "RequestClientCert" || auth == "RequireAnyClientCert") {
      return rd.error(t["client_auth_type"], p + ".client_auth_type",
                      absl::StrCat(auth,
                                   " is not supported: a client certificate that is not verified proves "
                                   "nothing; use VerifyClientCertIfGiven or RequireAndVerifyClientCert"));
    } else {
      return rd.error(
          t["client_auth_type"], p + ".client_auth_type",
          absl::StrCat("'", auth, "' is not one of NoClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert"));
    }
    if (c.client_auth != ClientAuth::kNone && c.client_ca_pem.empty()) {
      return rd.error(t, p, absl::StrCat("client_auth_type ", auth, " needs client_ca_file"));
    }
    if (c.client_auth == ClientAuth::kNone && !c.client_ca_pem.empty()) {
      return rd.error(t, p,
                      "client_ca_file is given but client_auth_type is NoClientCert (set it to "
                      "RequireAndVerifyClientCert or VerifyClientCertIfGiven)");
    }
    std::string min = "TLS12", max = "TLS13";
    if (t["min_version"]) {
      BS_ASSIGN_OR_RETURN(min, versionName(rd, t["min_version"], p + ".min_version"));
    }
    if (t["max_version"]) {
      BS_ASSIGN_OR_RETURN(max, versionName(rd, t["max_version"], p + ".max_version"));
    }
    if (min > max) return rd.error(t, p, absl::StrCat("min_version ", min, " is above max_version ", max));
    std::vector<std::string> parts = {"NORMAL", "-VERS-ALL"};
    for (const char* v : {"TLS13", "TLS12", "TLS11", "TLS10"}) {
      if (v >= min && v <= max) parts.push_back(absl::StrCat("+VERS-TLS1.", std::string(v).substr(4)));
    }
    c.priorities = absl::StrJoin(parts, ":");
    BS_RETURN_IF_ERROR(checkCredentials(w));
  }
  if (const YAML::Node h = root["http_server_config"]) {
    BS_RETURN_IF_ERROR(rd.keys(h, "http_server_config", {"http2", "headers"}));
    if (const YAML::Node v = h["http2"]; v && v.IsScalar() && v.Scalar() == "true") {
      w.warnings.push_back("http_server_config.http2: burstscope serves HTTP/1.1 only; the setting has no effect");
    }
    if (const YAML::Node hs = h["headers"]) {
      if (!hs.IsMap()) return rd.error(hs, "http_server_config.headers", "must be a mapping of header to value");
      for (auto it = hs.begin(); it != hs.end(); ++it) {
        const std::string name = it->first.Scalar();
        const std::string key = absl::StrCat("http_server_config.headers.", name);
        if (!it->second.IsScalar()) return rd.error(it->second, key, "must be a single value");
        const std::string value = it->second.Scalar();
        if (name.empty() || name.find_first_of(" :\r\n\t") != std::string::npos ||
            value.find_first_of("\r\n") != std::string::npos) {
          return rd.error(it->first, key, "not a valid header name or value");
        }
        w.headers.emplace_back(name, value);
      }
    }
  }
  if (const YAML::Node u = root["basic_auth_users"]) {
    if (!u.IsMap()) return rd.error(u, "basic_auth_users", "must be a mapping of user name to password hash");
    for (auto it = u.begin(); it != u.end(); ++it) {
      const std::string user = it->first.Scalar();
      const std::string key = absl::StrCat("basic_auth_users.", user);
      if (!it->second.IsScalar()) return rd.error(it->second, key, "must be a password hash");
      if (user.empty() || user.find(':') != std::string::npos) return rd.error(it->first, key, "not a valid user name");
      if (!acceptedPasswordHash(it->second.Scalar())) return rd.error(it->second, key, kPasswordHashHelp);
      w.users[user] = it->second.Scalar();
    }
  }
  return w;
}

}  // namespace burstscope
