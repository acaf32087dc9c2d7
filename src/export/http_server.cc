#include "src/export/http_server.h"

#include <crypt.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "burstscope/status.h"
#include "prometheus/text_serializer.h"
#include "src/export/web_config.h"

namespace burstscope {
// The server's own types, named (not anonymous) since MetricsServer::Impl holds them.
namespace httpd {

std::atomic<bool> g_reload_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "requestReload must be async-signal-safe");

int64_t monoNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Equal strings, in a time that depends only on the expected one's length.
bool constantTimeEqual(const std::string& got, const std::string& expected) {
  unsigned diff = got.size() != expected.size() ? 1 : 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned char>(i < got.size() ? got[i] : 0) ^ static_cast<unsigned char>(expected[i]);
  }
  return diff == 0;
}

// The endpoint's own figures: atomics written by the HTTP threads, read by a scrape.
constexpr std::array<unsigned, 9> kCodes = {200, 400, 401, 403, 404, 405, 500, 503, 0};  // 0: any other
constexpr std::array<double, 12> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
struct Stats {
  std::array<std::atomic<uint64_t>, kCodes.size()> requests{};
  std::array<std::atomic<uint64_t>, kBuckets.size() + 1> duration{};  // per bucket, not cumulative; last: +Inf
  std::atomic<uint64_t> duration_sum_ns{0};
  std::atomic<int64_t> open{0};
  std::atomic<uint64_t> accepted{0}, over_limit{0}, hard_limit{0}, read_timeout{0};
  std::atomic<uint64_t> reloads_ok{0}, reloads_failed{0};
  std::atomic<bool> last_reload_ok{true};

  void request(unsigned code, int64_t ns) {
    size_t i = 0;
    while (kCodes[i] != 0 && kCodes[i] != code) ++i;
    requests[i].fetch_add(1, std::memory_order_relaxed);
    const double s = static_cast<double>(ns) * 1e-9;
    size_t b = 0;
    while (b < kBuckets.size() && s > kBuckets[b]) ++b;
    duration[b].fetch_add(1, std::memory_order_relaxed);
    duration_sum_ns.fetch_add(static_cast<uint64_t>(std::max<int64_t>(ns, 0)), std::memory_order_relaxed);
  }
};

struct Generation;

// One accepted connection, from the library's start notice to its close notice.
struct Conn {
  int fd = -1;
  std::atomic<int64_t> deadline_ns{0};  // the request header must be complete by then; 0: reading none
  bool reaped = false;                  // shut down by the housekeeping thread (under conns_mu)
};

struct Request {
  int64_t start_ns = 0;
  unsigned code = 0;
};

// One viewer's event stream (/live/events): the events it has not had yet, and whether the library holds the
// connection suspended until the next one.
struct Stream {
  Generation* g = nullptr;
  MHD_Connection* c = nullptr;
  uint64_t next = 0;  // the next event this viewer needs (0: a snapshot first)
  std::string pending;
  size_t sent = 0;
  bool suspended = false;  // under Impl::streams_mu
};

}  // namespace httpd

using httpd::Conn;
using httpd::constantTimeEqual;
using httpd::g_reload_requested;
using httpd::Generation;
using httpd::kBuckets;
using httpd::kCodes;
using httpd::monoNs;
using httpd::Request;
using httpd::Stats;
using httpd::Stream;

struct MetricsServer::Impl {
  ExportConfig config;
  std::shared_ptr<LiveMetrics> metrics;
  Stats stats;
  size_t hard_limit = 0;
  int listen_fd = -1, stop_fd = -1;
  std::atomic<bool> stopping{false};

  std::mutex gen_mu;
  std::shared_ptr<Generation> current;
  std::vector<std::pair<std::shared_ptr<Generation>, int64_t>> retired;  // with the time it was replaced

  std::mutex conns_mu;
  std::unordered_set<Conn*> conns;

  // The live view, if served; its viewers' streams (suspended while they have had every event).
  std::shared_ptr<LiveView> live;
  std::shared_ptr<FlightRecorder> recorder;  // the flight recorder, if on
  std::mutex streams_mu;
  std::unordered_set<Stream*> streams;
  void resumeStreams(const Generation* only_of, bool all);

  // bcrypt costs ~95 ms a check here (cost 10): results are kept under a salted SHA-256 of user and password (as the
  // exporter-toolkit caches them), so that a scrape every second does not spend a core on it.
  std::mutex auth_mu;
  std::unordered_map<std::string, bool> auth_cache;
  std::string auth_salt;

  std::thread acceptor, housekeeper;

  absl::StatusOr<std::shared_ptr<Generation>> startGeneration(std::shared_ptr<const WebConfig> web);
  void acceptLoop();
  void housekeeping();
  absl::Status reload();
  bool authorised(const Generation& g, const std::string& user, const std::string& password);
  std::vector<prometheus::MetricFamily> ownFamilies() const;
};

namespace httpd {
// A daemon and the settings it was started with; retired (and stopped once idle) when a reload replaces it.
struct Generation {
  MetricsServer::Impl* server = nullptr;
  std::shared_ptr<const WebConfig> web;  // null: plain HTTP, users from export.basic-auth only
  std::map<std::string, std::string> users;
  MHD_Daemon* daemon = nullptr;
  std::atomic<int> open{0};
  std::atomic<bool> ending{false};  // retired or stopping: event streams end at their next turn
  ~Generation() {
    if (daemon == nullptr) return;
    // The library must not stop with a suspended connection: every stream of this daemon is resumed first
    // (and ends, seeing `ending`).
    ending.store(true);
    server->resumeStreams(this, true);
    MHD_stop_daemon(daemon);
  }
};

}  // namespace httpd

namespace {

Conn* connOf(MHD_Connection* c) {
  const MHD_ConnectionInfo* ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci == nullptr ? nullptr : static_cast<Conn*>(ci->socket_context);
}

void onConnection(void* cls, MHD_Connection* c, void** socket_context, MHD_ConnectionNotificationCode code) {
  auto* g = static_cast<Generation*>(cls);
  MetricsServer::Impl* s = g->server;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    auto* conn = new Conn;
    const MHD_ConnectionInfo* ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    conn->fd = ci == nullptr ? -1 : ci->connect_fd;
    conn->deadline_ns.store(monoNs() + s->config.http.read_timeout_ns);
    *socket_context = conn;
    g->open.fetch_add(1);
    s->stats.open.fetch_add(1);
    const std::lock_guard<std::mutex> lock(s->conns_mu);
    s->conns.insert(conn);
  } else {
    auto* conn = static_cast<Conn*>(*socket_context);
    if (conn == nullptr) return;
    {
      // The library closes the socket after this notice returns: under the lock, the housekeeping thread
      // never shuts down a descriptor that may already belong to another file.
      const std::lock_guard<std::mutex> lock(s->conns_mu);
      s->conns.erase(conn);
    }
    delete conn;
    *socket_context = nullptr;
    g->open.fetch_sub(1);
    s->stats.open.fetch_sub(1);
  }
}

void onCompleted(void* cls, MHD_Connection* c, void** req_cls, MHD_RequestTerminationCode /*toe*/) {
  auto* g = static_cast<Generation*>(cls);
  auto* r = static_cast<Request*>(*req_cls);
  if (r != nullptr) {
    if (r->code != 0) g->server->stats.request(r->code, monoNs() - r->start_ns);
    delete r;
    *req_cls = nullptr;
  }
  // Keep-alive: the next request's header is due within the idle timeout.
  if (Conn* conn = connOf(c)) conn->deadline_ns.store(monoNs() + g->server->config.http.idle_timeout_ns);
}

void onLog(void* /*cls*/, const char* fmt, va_list ap) {
  // The library's own messages (a client's TLS handshake failing, a malformed request): at this level they
  // are a hostile or confused client's doing, and the counters say what matters. Start-up failures are
  // reported by the caller.
  (void)fmt;
  (void)ap;
}

MHD_Result queue(MHD_Connection* c, const Generation& g, Request* r, unsigned code, const std::string& body,
                 const std::vector<std::pair<std::string, std::string>>& extra = {}, bool auth_fail = false) {
  MHD_Response* resp =
      MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (resp == nullptr) return MHD_NO;
  for (const auto& [k, v] : extra) MHD_add_response_header(resp, k.c_str(), v.c_str());
  if (g.web) {
    for (const auto& [k, v] : g.web->headers) MHD_add_response_header(resp, k.c_str(), v.c_str());
  }
  r->code = code;
  const MHD_Result ok =
      auth_fail ? MHD_queue_basic_auth_fail_response(c, "burstscope", resp) : MHD_queue_response(c, code, resp);
  MHD_destroy_response(resp);
  return ok;
}

std::vector<std::pair<std::string, std::string>> textHeaders() {
  return {{"Content-Type", "text/plain; charset=utf-8"}};
}

// A client certificate, when the web config asks for one: verified against its CA (a 403 otherwise; the
// handshake itself only requests the certificate).
std::string clientCertProblem(MHD_Connection* c, ClientAuth mode) {
  const MHD_ConnectionInfo* ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (ci == nullptr) return "no TLS session";
  auto session = static_cast<gnutls_session_t>(ci->tls_session);
  unsigned n = 0;
  const gnutls_datum_t* peers = gnutls_certificate_get_peers(session, &n);
  if (peers == nullptr || n == 0) {
    return mode == ClientAuth::kRequireAndVerify ? "a client certificate is required" : "";
  }
  unsigned status = 0;
  if (gnutls_certificate_verify_peers2(session, &status) < 0) return "the client certificate could not be verified";
  if (status != 0) {
    gnutls_datum_t out{};
    std::string why = "the client certificate is not trusted";
    if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0) == 0) {
      why = absl::StrCat(why, ": ", std::string(reinterpret_cast<char*>(out.data), out.size));
      gnutls_free(out.data);
    }
    return why;
  }
  return "";
}

std::string gzip(const std::string& in) {
  z_stream z{};
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return "";
  std::string out(deflateBound(&z, in.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END ? out : "";
}

// The event stream's body, produced as the viewer's socket takes it: the events after its last one, or, when
// it has them all, the connection suspended until the housekeeping thread resumes it for the next event.
ssize_t readStream(void* cls, uint64_t /*pos*/, char* buf, size_t max) {
  auto* st = static_cast<Stream*>(cls);
  MetricsServer::Impl* s = st->g->server;
  if (st->sent == st->pending.size()) {
    if (s->stopping.load() || st->g->ending.load()) return MHD_CONTENT_READER_END_OF_STREAM;
    st->pending = s->live->eventsAfter(&st->next);
    st->sent = 0;
    if (st->pending.empty()) {
      const std::lock_guard<std::mutex> lock(s->streams_mu);
      st->suspended = true;
      MHD_suspend_connection(st->c);
      return 0;
    }
  }
  const size_t n = std::min(max, st->pending.size() - st->sent);
  std::copy_n(st->pending.data() + st->sent, n, buf);
  st->sent += n;
  return static_cast<ssize_t>(n);
}

void freeStream(void* cls) {
  auto* st = static_cast<Stream*>(cls);
  MetricsServer::Impl* s = st->g->server;
  {
    const std::lock_guard<std::mutex> lock(s->streams_mu);
    s->streams.erase(st);
  }
  s->live->viewerClosed();
  delete st;
}

MHD_Result queueStream(MHD_Connection* c, Generation* g, Request* r) {
  MetricsServer::Impl* s = g->server;
  auto* st = new Stream;
  st->g = g;
  st->c = c;
  MHD_Response* resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, &readStream, st, &freeStream);
  if (resp == nullptr) {
    delete st;
    return MHD_NO;
  }
  s->live->viewerOpened();
  {
    const std::lock_guard<std::mutex> lock(s->streams_mu);
    s->streams.insert(st);
  }
  MHD_add_response_header(resp, "Content-Type", "text/event-stream; charset=utf-8");
  MHD_add_response_header(resp, "Cache-Control", "no-store");
  if (g->web) {
    for (const auto& [k, v] : g->web->headers) MHD_add_response_header(resp, k.c_str(), v.c_str());
  }
  r->code = 200;
  const MHD_Result ok = MHD_queue_response(c, 200, resp);
  MHD_destroy_response(resp);
  return ok;
}

MHD_Result onRequest(void* cls, MHD_Connection* c, const char* url, const char* method, const char* /*version*/,
                     const char* /*upload_data*/, size_t* upload_data_size, void** req_cls) {
  auto* g = static_cast<Generation*>(cls);
  MetricsServer::Impl* s = g->server;
  if (*req_cls != nullptr) {  // a body after the answer was queued: dropped
    *upload_data_size = 0;
    return MHD_YES;
  }
  auto* r = new Request{monoNs(), 0};
  *req_cls = r;
  if (Conn* conn = connOf(c)) conn->deadline_ns.store(0);  // the header is complete
  const HttpServerConfig& h = s->config.http;
  if (s->stats.open.load() > static_cast<int64_t>(h.max_connections)) {
    s->stats.over_limit.fetch_add(1);
    return queue(c, *g, r, 503,
                 absl::StrCat("burstscope: too many connections to the metrics endpoint (export.http.max-connections "
                              "is ",
                              h.max_connections, "); retry\n"),
                 {{"Content-Type", "text/plain; charset=utf-8"}, {"Retry-After", "1"}, {"Connection", "close"}});
  }
  if (g->web && g->web->tls && g->web->tls_config.client_auth != ClientAuth::kNone) {
    const std::string problem = clientCertProblem(c, g->web->tls_config.client_auth);
    if (!problem.empty()) return queue(c, *g, r, 403, absl::StrCat("burstscope: ", problem, "\n"), textHeaders());
  }
  if (!g->users.empty()) {
    char* password = nullptr;
    char* user = MHD_basic_auth_get_username_password(c, &password);
    const bool ok = user != nullptr && password != nullptr && s->authorised(*g, user, password);
    if (user != nullptr) MHD_free(user);
    if (password != nullptr) MHD_free(password);
    if (!ok) return queue(c, *g, r, 401, "burstscope: unauthorised\n", textHeaders(), /*auth_fail=*/true);
  }
  const bool live_page = s->live && std::strcmp(url, "/live") == 0;
  const bool live_events = s->live && std::strcmp(url, "/live/events") == 0;
  const bool flight = s->recorder && std::strcmp(url, "/flight-recorder/trigger") == 0;
  if (std::strcmp(url, "/metrics") != 0 && !live_page && !live_events && !flight) {
    return queue(
        c, *g, r, 404,
        absl::StrCat("burstscope: not found; the metrics are at /metrics", s->live ? ", the live view at /live" : "",
                     s->recorder ? ", the flight recorder's trigger at POST /flight-recorder/trigger" : "", "\n"),
        textHeaders());
  }
  if (flight) {
    if (std::strcmp(method, "POST") != 0) {
      return queue(c, *g, r, 405, "burstscope: POST to trigger the flight recorder\n",
                   {{"Content-Type", "text/plain; charset=utf-8"}, {"Allow", "POST"}});
    }
    // 202: the files are written once their windows have passed (docs/flight-recorder.md); 429 when no port
    // will write one (rate limit, inside the last file's window, or no frame yet), with why per port.
    const std::vector<std::string> said = s->recorder->triggerNow();
    const bool any =
        std::any_of(said.begin(), said.end(), [](const std::string& l) { return absl::EndsWith(l, ".pcapng"); });
    return queue(c, *g, r, any ? 202 : 429, absl::StrCat(absl::StrJoin(said, "\n"), "\n"), textHeaders());
  }
  if (std::strcmp(method, "GET") != 0 && std::strcmp(method, "HEAD") != 0) {
    return queue(c, *g, r, 405, "burstscope: method not allowed\n",
                 {{"Content-Type", "text/plain; charset=utf-8"}, {"Allow", "GET, HEAD"}});
  }
  if (live_page) {
    return queue(c, *g, r, 200, s->live->page(),
                 {{"Content-Type", "text/html; charset=utf-8"}, {"Cache-Control", "no-store"}});
  }
  if (live_events) return queueStream(c, g, r);
  std::vector<prometheus::MetricFamily> families = s->metrics->Collect();
  for (prometheus::MetricFamily& f : s->ownFamilies()) families.push_back(std::move(f));
  std::string body = prometheus::TextSerializer().Serialize(families);
  std::vector<std::pair<std::string, std::string>> headers = {
      {"Content-Type", "text/plain; version=0.0.4; charset=utf-8"}};
  const char* accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept-Encoding");
  if (accept != nullptr && absl::StrContains(accept, "gzip")) {
    std::string zipped = gzip(body);
    if (!zipped.empty()) {
      body = std::move(zipped);
      headers.emplace_back("Content-Encoding", "gzip");
    }
  }
  return queue(c, *g, r, 200, body, headers);
}

// host:port (host may be a name, an IPv4 address, or an IPv6 address in brackets) -> a listening socket.
absl::StatusOr<int> listenOn(const std::string& address) {
  const size_t colon = address.rfind(':');
  std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat("export.listen '", address, "': ", gai_strerror(rc)));
  }
  std::string why = "no address";
  int fd = -1;
  for (addrinfo* a = res; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = errnoText(errno);
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      why = errnoText(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0)
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", address, ": ", why,
                                               " (address in use or not local? set export.listen / --listen)"));
  return fd;
}

int boundPort(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof(a);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port);
  return 0;
}

prometheus::ClientMetric metricWith(const std::vector<prometheus::ClientMetric::Label>& base,
                                    std::vector<prometheus::ClientMetric::Label> extra, double value, bool counter) {
  prometheus::ClientMetric m;
  m.label = base;
  for (auto& l : extra) m.label.push_back(std::move(l));
  if (counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  return m;
}

}  // namespace

std::vector<prometheus::MetricFamily> MetricsServer::Impl::ownFamilies() const {
  using prometheus::MetricFamily;
  using prometheus::MetricType;
  const auto& id = metrics->identity();
  std::vector<MetricFamily> f;
  MetricFamily req{"burstscope_http_requests_total",
                   "requests to the metrics endpoint answered, by status code",
                   MetricType::Counter,
                   {}};
  for (size_t i = 0; i < kCodes.size(); ++i) {
    const std::string code = kCodes[i] == 0 ? "other" : std::to_string(kCodes[i]);
    req.metric.push_back(metricWith(id, {{"code", code}}, static_cast<double>(stats.requests[i].load()), true));
  }
  f.push_back(std::move(req));
  MetricFamily dur{"burstscope_http_request_duration_seconds",
                   "time from a request's complete header to its response sent",
                   MetricType::Histogram,
                   {}};
  prometheus::ClientMetric h;
  h.label = id;
  uint64_t cumulative = 0;
  for (size_t b = 0; b <= kBuckets.size(); ++b) {
    cumulative += stats.duration[b].load();
    h.histogram.bucket.push_back(
        {cumulative, b < kBuckets.size() ? kBuckets[b] : std::numeric_limits<double>::infinity()});
  }
  h.histogram.sample_count = cumulative;
  h.histogram.sample_sum = static_cast<double>(stats.duration_sum_ns.load()) * 1e-9;
  dur.metric.push_back(std::move(h));
  f.push_back(std::move(dur));
  f.push_back(MetricFamily{"burstscope_http_connections",
                           "connections to the metrics endpoint open now",
                           MetricType::Gauge,
                           {metricWith(id, {}, static_cast<double>(stats.open.load()), false)}});
  f.push_back(MetricFamily{"burstscope_http_connections_accepted_total",
                           "connections to the metrics endpoint accepted",
                           MetricType::Counter,
                           {metricWith(id, {}, static_cast<double>(stats.accepted.load()), true)}});
  f.push_back(MetricFamily{
      "burstscope_http_rejected_connections_total",
      "connections refused or cut: over_limit (answered 503 beyond export.http.max-connections), hard_limit "
      "(closed unanswered at 5/4 of it), read_timeout (request header not complete within export.http.read-timeout, "
      "or the next one within idle-timeout)",
      MetricType::Counter,
      {metricWith(id, {{"reason", "over_limit"}}, static_cast<double>(stats.over_limit.load()), true),
       metricWith(id, {{"reason", "hard_limit"}}, static_cast<double>(stats.hard_limit.load()), true),
       metricWith(id, {{"reason", "read_timeout"}}, static_cast<double>(stats.read_timeout.load()), true)}});
  f.push_back(
      MetricFamily{"burstscope_http_config_reloads_total",
                   "reloads of the web configuration file (SIGHUP), by result",
                   MetricType::Counter,
                   {metricWith(id, {{"result", "success"}}, static_cast<double>(stats.reloads_ok.load()), true),
                    metricWith(id, {{"result", "failure"}}, static_cast<double>(stats.reloads_failed.load()), true)}});
  if (live) {
    const LiveViewStats l = live->stats();
    f.push_back(MetricFamily{"burstscope_live_viewers",
                             "event streams of the live view (/live/events) open now",
                             MetricType::Gauge,
                             {metricWith(id, {}, static_cast<double>(l.viewers), false)}});
    f.push_back(MetricFamily{"burstscope_live_events_total",
                             "events the live view published (one per export.live.update)",
                             MetricType::Counter,
                             {metricWith(id, {}, static_cast<double>(l.events), true)}});
    f.push_back(MetricFamily{"burstscope_live_snapshots_total",
                             "snapshots of the window sent to live viewers (new, or too far behind)",
                             MetricType::Counter,
                             {metricWith(id, {}, static_cast<double>(l.snapshots), true)}});
    f.push_back(
        MetricFamily{"burstscope_live_bins_total",
                     "100 us bins the live view took from the workers, and bins it read too late (overwritten: "
                     "missing from the view, never from the measurements)",
                     MetricType::Counter,
                     {metricWith(id, {{"result", "shown"}}, static_cast<double>(l.bins), true),
                      metricWith(id, {{"result", "overwritten"}}, static_cast<double>(l.bins_overwritten), true)}});
  }
  if (recorder) {
    const FlightRecorderStats fr = recorder->stats();
    MetricFamily triggers{"burstscope_flight_recorder_triggers_total",
                          "flight recorder triggers by what raised them and what came of them: written (a file), "
                          "rate_limited (sooner than flight-recorder.min-interval after the port's last file), "
                          "in_window (inside the window of a file already written or owed), failed (not written)",
                          MetricType::Counter,
                          {}};
    MetricFamily frames{"burstscope_flight_recorder_frames_total",
                        "frames in the flight recorder's files (written), and frames of a window overwritten in "
                        "memory before they could be copied out (torn: missing from a file)",
                        MetricType::Counter,
                        {}};
    MetricFamily held{"burstscope_flight_recorder_held_seconds",
                      "the span of traffic the flight recorder's memory holds now (oldest to newest frame)",
                      MetricType::Gauge,
                      {}};
    for (const FlightPortStats& p : fr.ports) {
      for (int t = 0; t < kFlightTriggerCount; ++t) {
        for (int res = 0; res < kFlightResultCount; ++res) {
          triggers.metric.push_back(metricWith(id,
                                               {{"port", p.name},
                                                {"trigger", flightTriggerName(static_cast<FlightTrigger>(t))},
                                                {"result", flightResultName(static_cast<FlightResult>(res))}},
                                               static_cast<double>(p.triggers[t][res]), true));
        }
      }
      frames.metric.push_back(
          metricWith(id, {{"port", p.name}, {"result", "written"}}, static_cast<double>(p.frames_written), true));
      frames.metric.push_back(
          metricWith(id, {{"port", p.name}, {"result", "torn"}}, static_cast<double>(p.frames_torn), true));
      held.metric.push_back(metricWith(id, {{"port", p.name}}, static_cast<double>(p.held_ns) * 1e-9, false));
    }
    f.push_back(std::move(triggers));
    f.push_back(std::move(frames));
    f.push_back(std::move(held));
    f.push_back(MetricFamily{"burstscope_flight_recorder_written_bytes_total",
                             "bytes of pcapng the flight recorder wrote",
                             MetricType::Counter,
                             {metricWith(id, {}, static_cast<double>(fr.bytes_written), true)}});
    f.push_back(MetricFamily{"burstscope_flight_recorder_deleted_files_total",
                             "flight recorder files removed to keep flight-recorder.max-files and max-disk-bytes",
                             MetricType::Counter,
                             {metricWith(id, {}, static_cast<double>(fr.files_deleted), true)}});
    f.push_back(MetricFamily{"burstscope_flight_recorder_disk_bytes",
                             "bytes of the flight recorder's files in its directory now",
                             MetricType::Gauge,
                             {metricWith(id, {}, static_cast<double>(fr.disk_bytes), false)}});
    f.push_back(MetricFamily{"burstscope_flight_recorder_files",
                             "the flight recorder's files in its directory now",
                             MetricType::Gauge,
                             {metricWith(id, {}, static_cast<double>(fr.disk_files), false)}});
    f.push_back(MetricFamily{"burstscope_flight_recorder_memory_bytes",
                             "memory of the flight recorder's frame rings",
                             MetricType::Gauge,
                             {metricWith(id, {}, static_cast<double>(fr.memory_bytes), false)}});
  }
  f.push_back(MetricFamily{"burstscope_http_config_last_reload_successful",
                           "1 if the last reload of the web configuration file succeeded (or none was asked)",
                           MetricType::Gauge,
                           {metricWith(id, {}, stats.last_reload_ok.load() ? 1.0 : 0.0, false)}});
  return f;
}

bool MetricsServer::Impl::authorised(const Generation& g, const std::string& user, const std::string& password) {
  auto it = g.users.find(user);
  // An unknown user is checked against a hash too, so that the time taken does not say which names exist.
  static const std::string kDummy = "$2b$10$AAAAAAAAAAAAAAAAAAAAAOQ7xgcn1QiAk2S7cvM1uS7nfvGJ1wJ8a";
  const std::string& hash = it == g.users.end() ? kDummy : it->second;
  std::array<unsigned char, 32> digest{};
  const std::string material =
      absl::StrCat(auth_salt, user, std::string(1, '\0'), password, std::string(1, '\0'), hash);
  std::string key;
  if (gnutls_hash_fast(GNUTLS_DIG_SHA256, material.data(), material.size(), digest.data()) == 0) {
    key.assign(reinterpret_cast<const char*>(digest.data()), digest.size());
    const std::lock_guard<std::mutex> lock(auth_mu);
    auto hit = auth_cache.find(key);
    if (hit != auth_cache.end()) return hit->second && it != g.users.end();
  }
  const bool ok = checkPassword(password, hash) && it != g.users.end();
  if (!key.empty()) {
    const std::lock_guard<std::mutex> lock(auth_mu);
    if (auth_cache.size() >= 1024) auth_cache.clear();
    auth_cache[key] = ok;
  }
  return ok;
}

absl::StatusOr<std::shared_ptr<Generation>> MetricsServer::Impl::startGeneration(std::shared_ptr<const WebConfig> web) {
  auto g = std::make_shared<Generation>();
  g->server = this;
  g->web = std::move(web);
  if (!config.basic_auth_user.empty()) g->users[config.basic_auth_user] = config.basic_auth_hash;
  if (g->web) {
    for (const auto& [u, h] : g->web->users) g->users[u] = h;
  }
  const HttpServerConfig& h = config.http;
  std::vector<MHD_OptionItem> o = {
      {MHD_OPTION_THREAD_POOL_SIZE, h.threads, nullptr},
      // Above our own bound, so that the library never refuses what the accept loop counted in.
      {MHD_OPTION_CONNECTION_LIMIT, static_cast<intptr_t>(hard_limit + 64), nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT, static_cast<intptr_t>((h.idle_timeout_ns + 999'999'999) / 1'000'000'000),
       nullptr},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, 32 * 1024, nullptr},
      {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&onConnection), g.get()},
      {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&onCompleted), g.get()},
      {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&onLog), nullptr},
  };
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC |
                   MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
  if (g->web && g->web->tls) {
    const TlsServerConfig& t = g->web->tls_config;
    flags |= MHD_USE_TLS;
    o.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(t.key_pem.c_str())});
    o.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(t.cert_pem.c_str())});
    o.push_back({MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(t.priorities.c_str())});
    if (t.client_auth != ClientAuth::kNone) {
      o.push_back({MHD_OPTION_HTTPS_MEM_TRUST, 0, const_cast<char*>(t.client_ca_pem.c_str())});
    }
  }
  o.push_back({MHD_OPTION_END, 0, nullptr});
  g->daemon =
      MHD_start_daemon(flags, 0, nullptr, nullptr, &onRequest, g.get(), MHD_OPTION_ARRAY, o.data(), MHD_OPTION_END);
  if (g->daemon == nullptr) {
    return absl::InternalError("libmicrohttpd refused to start the metrics endpoint with these settings");
  }
  return g;
}

void MetricsServer::Impl::acceptLoop() {
  while (!stopping.load()) {
    std::array<pollfd, 2> p{{{listen_fd, POLLIN, 0}, {stop_fd, POLLIN, 0}}};
    if (poll(p.data(), p.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[1].revents != 0) break;
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    const int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: the connection waits in the backlog; do not spin on it.
        stats.hard_limit.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      continue;
    }
    stats.accepted.fetch_add(1);
    if (stats.open.load() >= static_cast<int64_t>(hard_limit)) {
      stats.hard_limit.fetch_add(1);
      close(fd);
      continue;
    }
    std::shared_ptr<Generation> g;
    {
      const std::lock_guard<std::mutex> lock(gen_mu);
      g = current;
    }
    // The library closes the socket if it cannot take it.
    if (MHD_add_connection(g->daemon, fd, reinterpret_cast<sockaddr*>(&addr), len) != MHD_YES) {
      stats.hard_limit.fetch_add(1);
    }
  }
}

void MetricsServer::Impl::resumeStreams(const Generation* only_of, bool all) {
  const uint64_t latest = live ? live->latest() : 0;
  const std::lock_guard<std::mutex> lock(streams_mu);
  for (Stream* st : streams) {
    if (st->suspended && (only_of == nullptr || st->g == only_of) && (all || st->next <= latest)) {
      st->suspended = false;
      MHD_resume_connection(st->c);
    }
  }
}

void MetricsServer::Impl::housekeeping() {
  // Every 100 ms (every 20 ms while the live view is served: its viewers wait for the next event no longer).
  const int tick_ms = live ? 20 : 100;
  while (!stopping.load()) {
    pollfd p{stop_fd, POLLIN, 0};
    if (poll(&p, 1, tick_ms) > 0) break;
    resumeStreams(nullptr, false);
    const int64_t now = monoNs();
    {
      const std::lock_guard<std::mutex> lock(conns_mu);
      for (Conn* conn : conns) {
        const int64_t deadline = conn->deadline_ns.load();
        if (deadline != 0 && now > deadline && !conn->reaped && conn->fd >= 0) {
          // The library sees end-of-file and closes the connection in its own thread.
          shutdown(conn->fd, SHUT_RDWR);
          conn->reaped = true;
          stats.read_timeout.fetch_add(1);
        }
      }
    }
    if (g_reload_requested.exchange(false)) {
      const absl::Status st = reload();
      if (st.ok()) {
        std::cerr << "burstscope: SIGHUP: "
                  << (config.web_config_file.empty() ? "no web configuration file to reload (export.web-config); "
                                                       "other settings take effect on restart"
                                                     : "reloaded " + config.web_config_file)
                  << std::endl;
      } else {
        std::cerr << "burstscope: SIGHUP: " << st.message() << "; the running settings stay" << std::endl;
      }
    }
    // Retired daemons stop once their connections are gone, or after the idle timeout at the latest; a
    // generation the accept loop still holds waits for the next round.
    std::vector<std::shared_ptr<Generation>> done;
    {
      const std::lock_guard<std::mutex> lock(gen_mu);
      for (auto it = retired.begin(); it != retired.end();) {
        if (it->first.use_count() == 1 &&
            (it->first->open.load() == 0 || now - it->second > config.http.idle_timeout_ns)) {
          done.push_back(std::move(it->first));
          it = retired.erase(it);
        } else {
          ++it;
        }
      }
    }
    done.clear();  // MHD_stop_daemon, outside the lock
  }
}

absl::Status MetricsServer::Impl::reload() {
  if (config.web_config_file.empty()) return absl::OkStatus();
  absl::StatusOr<WebConfig> web = loadWebConfig(config.web_config_file);
  absl::StatusOr<std::shared_ptr<Generation>> g =
      web.ok() ? startGeneration(std::make_shared<const WebConfig>(std::move(*web)))
               : absl::StatusOr<std::shared_ptr<Generation>>(web.status());
  if (!g.ok()) {
    stats.reloads_failed.fetch_add(1);
    stats.last_reload_ok.store(false);
    return g.status();
  }
  {
    const std::lock_guard<std::mutex> lock(gen_mu);
    current->ending.store(true);  // its live viewers reconnect (EventSource does) to the new settings
    resumeStreams(current.get(), true);
    retired.emplace_back(std::move(current), monoNs());
    current = std::move(*g);
  }
  stats.reloads_ok.fetch_add(1);
  stats.last_reload_ok.store(true);
  return absl::OkStatus();
}

MetricsServer::~MetricsServer() {
  if (!impl_) return;
  impl_->stopping.store(true);
  if (impl_->stop_fd >= 0) {
    const uint64_t one = 1;
    (void)!write(impl_->stop_fd, &one, sizeof(one));
  }
  if (impl_->acceptor.joinable()) impl_->acceptor.join();
  if (impl_->housekeeper.joinable()) impl_->housekeeper.join();
  impl_->resumeStreams(nullptr, true);  // streams end (stopping), so the daemons can stop
  impl_->retired.clear();
  impl_->current.reset();  // stops the daemon: every connection is closed and notified
  if (impl_->listen_fd >= 0) close(impl_->listen_fd);
  if (impl_->stop_fd >= 0) close(impl_->stop_fd);
}

bool MetricsServer::tls() const {
  const std::lock_guard<std::mutex> lock(impl_->gen_mu);
  return impl_->current && impl_->current->web && impl_->current->web->tls;
}

absl::Status MetricsServer::reload() { return impl_->reload(); }

void MetricsServer::requestReload() { g_reload_requested.store(true); }

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::start(const ExportConfig& config,
                                                                    const std::shared_ptr<LiveMetrics>& metrics,
                                                                    std::shared_ptr<LiveView> live,
                                                                    std::shared_ptr<FlightRecorder> recorder) {
  std::unique_ptr<MetricsServer> s(new MetricsServer());
  s->impl_ = std::make_unique<Impl>();
  Impl& m = *s->impl_;
  m.config = config;
  m.metrics = metrics;
  m.live = std::move(live);
  m.recorder = std::move(recorder);
  m.hard_limit = config.http.max_connections + config.http.max_connections / 4 + 1;
  std::array<unsigned char, 16> salt{};
  if (gnutls_rnd(GNUTLS_RND_NONCE, salt.data(), salt.size()) == 0) m.auth_salt.assign(salt.begin(), salt.end());
  std::shared_ptr<const WebConfig> web;
  if (!config.web_config_file.empty()) {
    BS_ASSIGN_OR_RETURN(WebConfig w, loadWebConfig(config.web_config_file));
    for (const std::string& warning : w.warnings) std::cerr << "burstscope: web config: " << warning << std::endl;
    web = std::make_shared<const WebConfig>(std::move(w));
  }
  // Every connection needs a descriptor: the soft limit goes up to what the bound needs (within the hard one).
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    const rlim_t want = static_cast<rlim_t>(m.hard_limit) + 256;
    if (lim.rlim_cur < want) {
      lim.rlim_cur = std::min(want, lim.rlim_max);
      setrlimit(RLIMIT_NOFILE, &lim);
    }
  }
  BS_ASSIGN_OR_RETURN(m.listen_fd, listenOn(config.listen));
  BS_ASSIGN_OR_RETURN(m.current, m.startGeneration(std::move(web)));
  m.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (m.stop_fd < 0) return absl::InternalError(absl::StrCat("eventfd: ", errnoText(errno)));
  m.acceptor = std::thread([&m] { m.acceptLoop(); });
  m.housekeeper = std::thread([&m] { m.housekeeping(); });
  s->port_ = boundPort(m.listen_fd);
  std::string host = config.listen.substr(0, config.listen.rfind(':'));
  const bool tls = m.current->web && m.current->web->tls;
  s->url_ = absl::StrCat(tls ? "https://" : "http://", host, ":", s->port_, "/metrics");
  return s;
}

absl::StatusOr<std::string> hashPassword(const std::string& password) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  if (crypt_gensalt_rn("$2b$", 10, nullptr, 0, salt, sizeof(salt)) == nullptr) {
    return errnoStatus(errno, "crypt_gensalt (bcrypt)");
  }
  auto data = std::make_unique<crypt_data>();
  const char* h = crypt_r(password.c_str(), salt, data.get());
  if (h == nullptr || h[0] == '*') return absl::InternalError("crypt_r failed to hash the password");
  return std::string(h);
}

bool checkPassword(const std::string& password, const std::string& hash) {
  auto data = std::make_unique<crypt_data>();
  const char* h = crypt_r(password.c_str(), hash.c_str(), data.get());
  if (h == nullptr || h[0] == '*') return false;
  return constantTimeEqual(h, hash);
}

}  // namespace burstscope
