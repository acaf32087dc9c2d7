// The metrics endpoint's HTTP server (src/export/http_server.h) and its web configuration file
// (src/export/web_config.h): bounds, timeouts, methods, compression, reloads and every refusal of a bad file.
// Loopback only; every wait is for a state, with a bound. The hostile-load and TLS runs against a live sensor are
// tests/integration/http_test.sh.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/export/http_server.h"
#include "src/export/metrics.h"
#include "src/export/web_config.h"

namespace burstscope {
namespace {

using testing::HasSubstr;

std::string dataDir() { return std::string(BURSTSCOPE_SOURCE_ROOT) + "/tests/export/testdata"; }

// Waits for `cond` for at most `seconds`.
bool waitFor(const std::function<bool()>& cond, double seconds = 10) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

int connectTo(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Reads until the peer closes (or `seconds` pass); returns what came.
std::string readAll(int fd, double seconds = 10) {
  std::string out;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char buf[8192];
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// One request on a fresh connection; the whole response.
std::string request(int port, const std::string& text) {
  const int fd = connectTo(port);
  if (fd < 0) return "";
  if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    close(fd);
    return "";
  }
  std::string r = readAll(fd);
  close(fd);
  return r;
}

int statusOf(const std::string& response) {
  int code = -1;
  if (response.size() > 12 && absl::SimpleAtoi(response.substr(9, 3), &code)) return code;
  return -1;
}

std::string get(const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + extra + "\r\n";
}

std::string basic(const std::string& user_password) {
  return "Authorization: Basic " + absl::Base64Escape(user_password) + "\r\n";
}

// A series' value in a plain scrape, or -1.
double metric(int port, const std::string& series, const std::string& auth = "") {
  const std::string body = request(port, get("/metrics", auth));
  const size_t at = body.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  double v = -1;
  const size_t start = at + series.size() + 2;
  (void)absl::SimpleAtod(body.substr(start, body.find('\n', start) - start), &v);
  return v;
}

struct Server {
  std::shared_ptr<LiveMetrics> metrics;
  std::unique_ptr<MetricsServer> server;
  explicit Server(ExportConfig xc) {
    xc.listen = "127.0.0.1:0";
    xc.sensor = "t";
    metrics = std::make_shared<LiveMetrics>(xc, std::vector<ExportPortInfo>{{"p0", 1e10, {}, {}}}, "test");
    auto s = MetricsServer::start(xc, metrics);
    EXPECT_TRUE(s.ok()) << s.status();
    if (s.ok()) server = std::move(*s);
  }
  int port() const { return server ? server->port() : -1; }
};

std::string writeFile(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(HttpServerTest, MethodsPathsHeadAndGzip) {
  Server s{ExportConfig{}};
  ASSERT_GT(s.port(), 0);
  const std::string ok = request(s.port(), get("/metrics"));
  EXPECT_EQ(statusOf(ok), 200);
  EXPECT_THAT(ok, HasSubstr("text/plain; version=0.0.4"));
  EXPECT_THAT(ok, HasSubstr("burstscope_http_requests_total{sensor=\"t\",code=\"200\"}"));
  for (const char* path : {"/", "/metrics/../etc/passwd", "/favicon.ico", "/metrics/"}) {
    EXPECT_EQ(statusOf(request(s.port(), get(path))), 404) << path;
  }
  const std::string del = request(s.port(), "DELETE /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(statusOf(del), 405);
  EXPECT_THAT(del, HasSubstr("Allow: GET, HEAD"));
  const std::string head = request(s.port(), "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(statusOf(head), 200);
  EXPECT_EQ(head.substr(head.find("\r\n\r\n") + 4), "");
  // gzip when asked: the body inflates to the same exposition.
  const std::string zipped = request(s.port(), get("/metrics", "Accept-Encoding: gzip\r\n"));
  ASSERT_EQ(statusOf(zipped), 200);
  EXPECT_THAT(zipped, HasSubstr("Content-Encoding: gzip"));
  const std::string z = zipped.substr(zipped.find("\r\n\r\n") + 4);
  std::string plain(1 << 20, '\0');
  z_stream zs{};
  ASSERT_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(z.data()));
  zs.avail_in = static_cast<uInt>(z.size());
  zs.next_out = reinterpret_cast<Bytef*>(plain.data());
  zs.avail_out = static_cast<uInt>(plain.size());
  EXPECT_EQ(inflate(&zs, Z_FINISH), Z_STREAM_END);
  plain.resize(zs.total_out);
  inflateEnd(&zs);
  EXPECT_THAT(plain, HasSubstr("# TYPE burstscope_http_request_duration_seconds histogram"));
  // Every answered request is counted by its code.
  EXPECT_TRUE(waitFor([&] {
    return metric(s.port(), "burstscope_http_requests_total{sensor=\"t\",code=\"405\"}") == 1 &&
           metric(s.port(), "burstscope_http_requests_total{sensor=\"t\",code=\"404\"}") == 4;
  }));
}

TEST(HttpServerTest, BasicAuthFromTheRunFileAdmitsOnlyTheRightCredentials) {
  ExportConfig xc;
  xc.basic_auth_user = "prometheus";
  xc.basic_auth_hash = *hashPassword("s3cret");
  Server s{xc};
  ASSERT_GT(s.port(), 0);
  const std::string denied = request(s.port(), get("/metrics"));
  EXPECT_EQ(statusOf(denied), 401);
  EXPECT_THAT(denied, HasSubstr("WWW-Authenticate: Basic realm=\"burstscope\""));
  EXPECT_EQ(statusOf(request(s.port(), get("/metrics", basic("prometheus:wrong")))), 401);
  EXPECT_EQ(statusOf(request(s.port(), get("/metrics", basic("someone:s3cret")))), 401);
  EXPECT_EQ(statusOf(request(s.port(), get("/metrics", basic("prometheus:s3cret")))), 200);
  EXPECT_EQ(statusOf(request(s.port(), get("/metrics", basic("prometheus:s3cret")))), 200);  // from the cache
  EXPECT_EQ(statusOf(request(s.port(), get("/metrics", basic("prometheus:wrong")))), 401);   // also cached
}

TEST(HttpServerTest, APortInUseIsAClearError) {
  Server first{ExportConfig{}};
  ASSERT_GT(first.port(), 0);
  ExportConfig xc;
  xc.listen = "127.0.0.1:" + std::to_string(first.port());
  auto second = MetricsServer::start(xc, first.metrics);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("cannot serve metrics on 127.0.0.1:"));
}

TEST(HttpServerTest, BeyondMaxConnectionsAnswers503AndBeyondTheHardBoundCloses) {
  ExportConfig xc;
  xc.http.max_connections = 4;  // hard bound 4 + 4/4 + 1 = 6
  Server s{xc};
  ASSERT_GT(s.port(), 0);
  std::vector<int> idle;
  idle.reserve(6);
  for (int i = 0; i < 4; ++i) idle.push_back(connectTo(s.port()));
  // Once the server holds the four, a scrape's own connection makes five: over the bound.
  std::string r;
  EXPECT_TRUE(waitFor([&] {
    r = request(s.port(), get("/metrics"));
    return statusOf(r) == 503;
  }));
  EXPECT_THAT(r, HasSubstr("Retry-After: 1"));
  EXPECT_THAT(r, HasSubstr("export.http.max-connections"));
  // Six idle connections: once the server holds them, a seventh is closed unanswered, and counted. (Until then a
  // probe is answered 503: the count is taken when the library has the connection.)
  idle.push_back(connectTo(s.port()));
  idle.push_back(connectTo(s.port()));
  EXPECT_TRUE(waitFor([&] {
    const std::string probe = request(s.port(), get("/metrics"));
    EXPECT_TRUE(probe.empty() || statusOf(probe) == 503) << probe;
    return probe.empty();
  }));
  for (int fd : idle) close(fd);
  EXPECT_TRUE(waitFor([&] {
    return metric(s.port(), "burstscope_http_rejected_connections_total{sensor=\"t\",reason=\"hard_limit\"}") >= 1 &&
           metric(s.port(), "burstscope_http_rejected_connections_total{sensor=\"t\",reason=\"over_limit\"}") >= 1;
  }));
}

TEST(HttpServerTest, ARequestTrickledInIsCutAtTheReadTimeout) {
  ExportConfig xc;
  xc.http.read_timeout_ns = 300'000'000;
  Server s{xc};
  ASSERT_GT(s.port(), 0);
  const int fd = connectTo(s.port());
  ASSERT_GE(fd, 0);
  // A byte every 50 ms: never idle, never complete. The server must close it, long before 10 s.
  const std::string slow =
      "GET /metrics HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  bool closed = false;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < slow.size() * 4 && !closed; ++i) {
    if (send(fd, &slow[i % slow.size()], 1, MSG_NOSIGNAL) != 1) closed = true;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) > 0) {
      char c;
      if (read(fd, &c, 1) <= 0) closed = true;
    }
  }
  close(fd);
  EXPECT_TRUE(closed);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 9.0);
  EXPECT_TRUE(waitFor([&] {
    return metric(s.port(), "burstscope_http_rejected_connections_total{sensor=\"t\",reason=\"read_timeout\"}") == 1;
  }));
}

TEST(HttpServerTest, ReloadSwapsUsersAndABrokenFileKeepsTheRunningOnes) {
  const std::string h1 = *hashPassword("one"), h2 = *hashPassword("two");
  const std::string path = writeFile("web-reload.yml", "basic_auth_users:\n  alice: " + h1 + "\n");
  ExportConfig xc;
  xc.web_config_file = path;
  Server s{xc};
  ASSERT_GT(s.port(), 0);
  EXPECT_EQ(statusOf(request(s.port(), get("/metrics"))), 401);
  EXPECT_EQ(statusOf(request(s.port(), get("/metrics", basic("alice:one")))), 200);
  writeFile("web-reload.yml", "basic_auth_users:\n  bob: " + h2 + "\n");
  ASSERT_TRUE(s.server->reload().ok());
  EXPECT_EQ(statusOf(request(s.port(), get("/metrics", basic("alice:one")))), 401);
  EXPECT_EQ(statusOf(request(s.port(), get("/metrics", basic("bob:two")))), 200);
  writeFile("web-reload.yml", "basic_auth_users:\n  bob: plaintext\n");
  const absl::Status bad = s.server->reload();
  EXPECT_THAT(std::string(bad.message()), HasSubstr("basic_auth_users.bob: not a bcrypt"));
  EXPECT_EQ(statusOf(request(s.port(), get("/metrics", basic("bob:two")))), 200);
  const std::string auth = basic("bob:two");
  EXPECT_EQ(metric(s.port(), "burstscope_http_config_reloads_total{sensor=\"t\",result=\"success\"}", auth), 1);
  EXPECT_EQ(metric(s.port(), "burstscope_http_config_reloads_total{sensor=\"t\",result=\"failure\"}", auth), 1);
  EXPECT_EQ(metric(s.port(), "burstscope_http_config_last_reload_successful{sensor=\"t\"}", auth), 0);
}

TEST(WebConfigTest, ReadsTheExporterToolkitFormat) {
  const std::string path =
      writeFile("web-ok.yml",
                "tls_server_config:\n"
                "  cert_file: " +
                    dataDir() +
                    "/server.crt\n"
                    "  key_file: " +
                    dataDir() +
                    "/server.key\n"
                    "  client_auth_type: RequireAndVerifyClientCert\n"
                    "  client_ca_file: " +
                    dataDir() +
                    "/server.crt\n"
                    "  min_version: TLS13\n"
                    "http_server_config:\n"
                    "  headers:\n"
                    "    X-Frame-Options: deny\n"
                    "basic_auth_users:\n"
                    "  prometheus: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n");
  auto w = loadWebConfig(path);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(w->tls);
  EXPECT_EQ(w->tls_config.client_auth, ClientAuth::kRequireAndVerify);
  EXPECT_EQ(w->tls_config.priorities, "NORMAL:-VERS-ALL:+VERS-TLS1.3");
  EXPECT_THAT(w->tls_config.cert_pem, HasSubstr("BEGIN CERTIFICATE"));
  ASSERT_EQ(w->headers.size(), 1u);
  EXPECT_EQ(w->users.count("prometheus"), 1u);
  // Relative file names are taken from the web config's own directory.
  const std::string rel = dataDir() + "/../testdata/web-relative.yml";
  std::ofstream(dataDir() + "/web-relative.yml")
      << "tls_server_config: {cert_file: server.crt, key_file: server.key}\n";
  auto r = loadWebConfig(rel);
  std::remove((dataDir() + "/web-relative.yml").c_str());
  EXPECT_TRUE(r.ok()) << r.status();
}

TEST(WebConfigTest, EveryBadFileNamesItsKey) {
  const std::string crt = dataDir() + "/server.crt", key = dataDir() + "/server.key";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"tls_server_config:\n  cert_file: " + crt + "\n  key_file: " + key + "\n  cipher_suites: [x]\n",
       "tls_server_config.cipher_suites: is not supported"},
      {"tls_server_config:\n  cert_file: " + crt + "\n  key_file: " + key + "\n  colour: blue\n",
       "tls_server_config.colour: unknown key"},
      {"tls_server_config:\n  cert_file: " + crt + "\n", "needs key_file"},
      {"tls_server_config:\n  cert_file: /nonexistent.crt\n  key_file: " + key + "\n",
       "tls_server_config.cert_file: cannot read '/nonexistent.crt'"},
      {"tls_server_config:\n  cert_file: " + crt + "\n  key_file: " + dataDir() + "/other.key\n",
       "certificate " + crt + " with key " + dataDir() + "/other.key"},
      {"tls_server_config:\n  cert_file: " + crt + "\n  key_file: " + key +
           "\n  client_auth_type: RequireAndVerifyClientCert\n",
       "needs client_ca_file"},
      {"tls_server_config:\n  cert_file: " + crt + "\n  key_file: " + key + "\n  client_auth_type: RequestClientCert\n",
       "RequestClientCert is not supported"},
      {"tls_server_config:\n  cert_file: " + crt + "\n  key_file: " + key + "\n  min_version: TLS14\n",
       "tls_server_config.min_version: 'TLS14' is not one of"},
      {"tls_server_config:\n  cert_file: " + crt + "\n  key_file: " + key +
           "\n  min_version: TLS13\n  max_version: TLS12\n",
       "min_version TLS13 is above max_version TLS12"},
      {"basic_auth_users:\n  alice: hunter2\n", "basic_auth_users.alice: not a bcrypt"},
      {"basic_auth_user:\n  alice: x\n", "basic_auth_user: unknown key"},
      {"http_server_config:\n  headers:\n    \"Bad: name\": x\n", "not a valid header name"},
      {"tls_server_config: [\n", "web config"},
  };
  for (const auto& [text, want] : cases) {
    const std::string path = writeFile("web-bad.yml", text);
    auto w = loadWebConfig(path);
    ASSERT_FALSE(w.ok()) << text;
    EXPECT_THAT(std::string(w.status().message()), HasSubstr(want)) << text;
  }
  EXPECT_THAT(std::string(loadWebConfig("/nonexistent/web.yml").status().message()), HasSubstr("cannot read"));
  EXPECT_THAT(std::string(loadWebConfig("/dev/zero").status().message()), HasSubstr("not a regular file"));
  const std::string dev = writeFile("web-dev.yml", "tls_server_config: {cert_file: /dev/zero, key_file: /dev/null}\n");
  EXPECT_THAT(std::string(loadWebConfig(dev).status().message()),
              HasSubstr("tls_server_config.cert_file: '/dev/zero' is not a regular file"));
}

}  // namespace
}  // namespace burstscope
