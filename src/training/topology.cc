#include "src/training/topology.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace burstscope::training {
namespace {

// Whether the undirected graph `adj` is connected.
bool connected(const std::vector<std::vector<int>>& adj) {
  const size_t n = adj.size();
  if (n == 0) return false;
  std::vector<bool> seen(n, false);
  std::vector<int> stack{0};
  seen[0] = true;
  size_t count = 1;
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    for (int w : adj[v]) {
      if (!seen[w]) {
        seen[w] = true;
        ++count;
        stack.push_back(w);
      }
    }
  }
  return count == n;
}

// The hosts of `v`'s component of `adj`, in path order from one end, when the component is a simple path of two or
// more hosts; else none.
std::optional<std::vector<int>> pathFrom(const std::vector<std::vector<int>>& adj, int v) {
  std::vector<int> comp{v};
  std::vector<bool> seen(adj.size(), false);
  seen[v] = true;
  for (size_t k = 0; k < comp.size(); ++k) {
    for (int w : adj[comp[k]]) {
      if (!seen[w]) {
        seen[w] = true;
        comp.push_back(w);
      }
    }
  }
  size_t ends = 0, degrees = 0;
  int end = -1;
  for (int w : comp) {
    degrees += adj[w].size();
    if (adj[w].size() > 2) return std::nullopt;
    if (adj[w].size() == 1) {
      ++ends;
      if (end < 0 || w < end) end = w;
    }
  }
  if (comp.size() < 2 || ends != 2 || degrees != 2 * (comp.size() - 1)) return std::nullopt;
  std::vector<int> path{end};
  int prev = -1;
  while (path.size() < comp.size()) {
    const int at = path.back();
    const int next = adj[at][0] != prev ? adj[at][0] : adj[at][1];
    prev = at;
    path.push_back(next);
  }
  return path;
}

// Offsets closer than this (a share of the period) are not told apart.
constexpr double kOffsetTolerance = 0.005;
// The two directions of a pipeline edge: their payload lies at least this far apart in the step (a share of the
// period); a collective between two hosts sends both ways at once.
constexpr double kApart = 0.02;

// A pipeline's step is one wave: activations leave stage 0 first and reach each next stage later, then the
// gradients come back from the last stage to the first. So where in the step the payload of q0→q1, q1→q2, …,
// q(m-2)→q(m-1), then q(m-1)→q(m-2), …, q1→q0 lies rises around the step once (circularly: the step's cut may fall
// anywhere in the wave), each later than the one before. A reduce-then-broadcast tree laid on a path goes around
// twice (both ends send toward the middle at once, then the middle sends back out). The wave is the same read
// from either end, so its direction comes from its halves: the gradients' half is the slower (a stage's backward
// costs about twice its forward, and each stage passes its microbatch on after its compute).
struct Wave {
  bool one = false;   // a single wave through the path's edges
  int direction = 0;  // +1: the path runs in stage order, -1: against it, 0: not told
};
Wave waveOf(const std::vector<int>& path, const std::vector<std::vector<double>>& off) {
  Wave w;
  const size_t m = path.size();
  if (m < 3) return w;
  std::vector<double> events;
  for (size_t i = 0; i + 1 < m; ++i) events.push_back(off[path[i]][path[i + 1]]);
  for (size_t i = m - 1; i > 0; --i) events.push_back(off[path[i]][path[i - 1]]);
  if (std::any_of(events.begin(), events.end(), [](double e) { return e < 0; })) return w;
  std::vector<double> d;
  for (size_t k = 0; k + 1 < events.size(); ++k) {
    double x = events[k + 1] - events[k];
    x -= std::floor(x);
    if (x <= kOffsetTolerance) return w;
    d.push_back(x);
  }
  if (std::accumulate(d.begin(), d.end(), 0.0) >= 1 - kOffsetTolerance) return w;
  w.one = true;
  // d[0..m-3]: from stage to stage on the way out, d[m-2]: the turn at the far end, d[m-1..]: the way back.
  const double out = std::accumulate(d.begin(), d.begin() + (m - 2), 0.0);
  const double back = std::accumulate(d.begin() + (m - 1), d.end(), 0.0);
  w.direction = out < 0.9 * back ? 1 : back < 0.9 * out ? -1 : 0;
  return w;
}

// The circular distance from a to b (shares of the period), in (-0.5, 0.5].
double circular(double a, double b) {
  double d = b - a;
  d -= std::floor(d);
  return d > 0.5 ? d - 1 : d;
}

}  // namespace

TopologyResult classifyTopology(const TopologyInput& in) {
  TopologyResult out;
  const size_t n = in.hosts.size();
  out.roles.assign(n, "host");
  out.successor.assign(n, -1);
  TopologyReport& t = out.report;
  uint64_t total = 0, heaviest = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      total += in.bytes[i][j];
      heaviest = std::max(heaviest, in.bytes[i][j]);
    }
  }
  // Flows: how concentrated the job's bytes are.
  std::vector<uint64_t> flows = in.flow_bytes;
  std::sort(flows.rbegin(), flows.rend());
  t.flows = flows.size();
  uint64_t flow_total = std::accumulate(flows.begin(), flows.end(), uint64_t{0});
  uint64_t acc = 0;
  for (size_t i = 0; i < flows.size(); ++i) {
    acc += flows[i];
    if (i < 5) t.top_flows_share = flow_total ? static_cast<double>(acc) / static_cast<double>(flow_total) : 0;
    if (t.flows_for_99pct == 0 && static_cast<double>(acc) >= 0.99 * static_cast<double>(flow_total)) {
      t.flows_for_99pct = i + 1;
    }
  }
  if (n < 2 || total == 0) {
    t.evidence = n < 2 ? "fewer than two hosts" : "no traffic";
    return out;
  }

  const double cut = in.data_edge_share * static_cast<double>(heaviest);
  auto data = [&](size_t i, size_t j) {
    return i != j && in.bytes[i][j] > 0 && static_cast<double>(in.bytes[i][j]) >= cut;
  };
  // With a period, each pair's share of the steps and its place in the step (topology.h).
  const bool timed = in.steps_share.size() == n && in.offset.size() == n;
  auto edge = [&](size_t i, size_t j, bool light) {
    return TopologyEdge{in.hosts[i],
                        in.hosts[j],
                        in.bytes[i][j],
                        static_cast<double>(in.bytes[i][j]) / static_cast<double>(total),
                        timed ? in.steps_share[i][j] : -1,
                        timed ? in.offset[i][j] : -1,
                        light};
  };
  uint64_t data_bytes = 0, reverse_bytes = 0;
  std::vector<std::vector<int>> adj(n);  // undirected data graph
  size_t undirected_edges = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      if (data(i, j)) {
        data_bytes += in.bytes[i][j];
        t.edges.push_back(edge(i, j, false));
      } else if (data(j, i)) {
        reverse_bytes += in.bytes[i][j];
      }
      if (i < j && (data(i, j) || data(j, i))) {
        adj[i].push_back(static_cast<int>(j));
        adj[j].push_back(static_cast<int>(i));
        ++undirected_edges;
      }
    }
  }
  std::sort(t.edges.begin(), t.edges.end(),
            [](const TopologyEdge& a, const TopologyEdge& b) { return a.bytes > b.bytes; });
  if (t.edges.size() > 64) t.edges.resize(64);
  t.data_share = static_cast<double>(data_bytes) / static_cast<double>(total);
  t.reverse_share = static_cast<double>(reverse_bytes) / static_cast<double>(total);

  // Structure below the data share: a pair that carries payload both ways in (nearly) every counted step.
  auto every = [&](size_t i, size_t j) { return timed && i != j && in.steps_share[i][j] >= in.structure_steps_share; };
  size_t light_edges = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      if (data(i, j) || data(j, i) || !every(i, j) || !every(j, i)) continue;
      ++light_edges;
      for (auto [a, b] : {std::pair{i, j}, std::pair{j, i}}) {
        if (t.edges.size() >= 64) break;
        t.edges.push_back(edge(a, b, true));
      }
    }
  }
  const size_t phases = in.phases.size();

  // Expert parallel: (nearly) all of the step's phase bytes in all-to-all phases, every ordered pair in each.
  if (n >= 3 && phases > 0) {
    const double everyone = static_cast<double>(n * (n - 1));
    double sum = 0, a2a = 0;
    size_t count = 0;
    for (const PhaseReport& p : in.phases) {
      sum += p.bytes;
      if (static_cast<double>(p.pairs) >= 0.9 * everyone) {
        a2a += p.bytes;
        ++count;
      }
    }
    if (sum > 0 && a2a >= 0.8 * sum) {
      t.kind = "expert-parallel";
      t.evidence = absl::StrFormat(
          "%d all-to-all phases per step (of %d), every ordered pair of the %d hosts carries payload in each; "
          "they hold %.0f%% of the step's phase bytes",
          count, phases, n, 100 * a2a / sum);
      out.roles.assign(n, "peer");
      return out;
    }
  }

  // Pipelines. A pipeline edge carries payload both ways in (nearly) every step, one way after the other
  // (activations, later their gradients: the two directions' payload lies apart in the step), where a collective
  // between two hosts sends both ways at once and a ring's reverse direction carries ACKs only.
  auto apart = [&](size_t i, size_t j) {
    double d = in.offset[i][j] - in.offset[j][i];
    d -= std::floor(d);
    return in.offset[i][j] >= 0 && in.offset[j][i] >= 0 && std::min(d, 1 - d) >= kApart;
  };
  std::vector<std::vector<int>> pipe_adj(n);   // pipeline edges
  std::vector<std::vector<int>> group_adj(n);  // the other structure: data edges, and both-ways light edges
  size_t pipe_edges = 0;
  for (size_t i = 0; i < n && timed; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const bool structure = data(i, j) || data(j, i) || (every(i, j) && every(j, i));
      if (!structure) continue;
      std::vector<std::vector<int>>& into = every(i, j) && every(j, i) && apart(i, j) ? pipe_adj : group_adj;
      pipe_edges += &into == &pipe_adj;
      into[i].push_back(static_cast<int>(j));
      into[j].push_back(static_cast<int>(i));
    }
  }
  std::vector<std::vector<int>> pipes;  // the pipeline edges' components, when all are paths of one length
  for (size_t v = 0; v < n && pipe_edges > 0; ++v) {
    if (std::any_of(pipes.begin(), pipes.end(),
                    [&](const std::vector<int>& p) { return std::find(p.begin(), p.end(), v) != p.end(); })) {
      continue;
    }
    std::optional<std::vector<int>> p = pathFrom(pipe_adj, static_cast<int>(v));
    if (!p || (!pipes.empty() && p->size() != pipes[0].size())) {
      pipes.clear();
      break;
    }
    pipes.push_back(std::move(*p));
  }
  const size_t stages = pipes.empty() ? 0 : pipes[0].size();
  auto describe = [&](const std::vector<int>& p) {
    std::vector<std::string> names;
    for (int v : p) {
      names.push_back(in.hosts[v]);
      out.roles[v] = "stage";
    }
    return names;
  };
  // Pipeline: one path through every host, nothing else, in one wave per step (waveOf).
  if (pipes.size() == 1 && stages == n && n >= 3 && pipe_edges == n - 1 &&
      std::all_of(group_adj.begin(), group_adj.end(), [](const std::vector<int>& a) { return a.empty(); })) {
    std::vector<int> path = pipes[0];
    const Wave w = waveOf(path, in.offset);
    if (w.one) {
      if (w.direction < 0) std::reverse(path.begin(), path.end());
      t.kind = "pipeline";
      t.order = describe(path);
      t.pipelines.push_back(t.order);
      t.evidence = absl::StrFormat(
          "%d stages on one path, payload both ways on each of its edges in every step, one way after the other, in "
          "one wave per step; %s; %d phases per step",
          n,
          w.direction != 0 ? absl::StrCat("activations from ", t.order.front(), " on to ", t.order.back(),
                                          ", gradients back, slower (the backward costs more)")
                           : "which end is stage 0 is not told by the traffic (listed from the lowest address)",
          phases);
      return out;
    }
  }
  // Hybrid: several pipelines of one length, the other structure joining the same stage of each into a
  // data-parallel group.
  if (pipes.size() >= 2 && stages >= 2) {
    std::vector<int> group(n, -1);
    int groups = 0;
    for (size_t v = 0; v < n; ++v) {
      if (group[v] >= 0) continue;
      std::vector<int> stack{static_cast<int>(v)};
      group[v] = groups;
      while (!stack.empty()) {
        const int a = stack.back();
        stack.pop_back();
        for (int w : group_adj[a]) {
          if (group[w] < 0) {
            group[w] = groups;
            stack.push_back(w);
          }
        }
      }
      ++groups;
    }
    bool ok = static_cast<size_t>(groups) == stages;
    // Stage s of every pipeline in stage s's group: each pipeline turned to match the first.
    auto aligned = [&](const std::vector<int>& p) {
      for (size_t s = 0; s < stages; ++s) {
        if (group[p[s]] != group[pipes[0][s]]) return false;
      }
      return true;
    };
    for (size_t q = 1; q < pipes.size() && ok; ++q) {
      if (!aligned(pipes[q])) std::reverse(pipes[q].begin(), pipes[q].end());
      ok = aligned(pipes[q]);
    }
    if (ok) {
      // Which end is stage 0: the data-parallel reductions run in reverse stage order (a stage reduces when its
      // backward is done, and the last stage's is done first); else the pipelines' waves (three stages or more);
      // else, for two stages, the activations come first after the step's cut.
      int votes = 0;
      const char* how = "from the data-parallel reductions (the last stage reduces first)";
      auto reduced = [&](size_t s) {  // where stage s's reduction lies: the circular mean of its group's pairs
        double c = 0, sn = 0;
        for (const std::vector<int>& p : pipes) {
          for (int w : group_adj[p[s]]) {
            if (in.offset[p[s]][w] < 0) continue;
            c += std::cos(2 * M_PI * in.offset[p[s]][w]);
            sn += std::sin(2 * M_PI * in.offset[p[s]][w]);
          }
        }
        return c == 0 && sn == 0 ? -1.0 : turnOf(c, sn);
      };
      const double first = reduced(0), last = reduced(stages - 1);
      if (first >= 0 && last >= 0 && std::abs(circular(last, first)) > kOffsetTolerance) {
        votes = circular(last, first) > 0 ? 1 : -1;
      }
      if (votes == 0) {
        how = "from the pipelines' waves (the gradients' way back is the slower)";
        for (const std::vector<int>& p : pipes) votes += waveOf(p, in.offset).direction;
      }
      if (votes == 0 && stages == 2) {
        how = "from the activations, first after the step's cut";
        for (const std::vector<int>& p : pipes) {
          const double x = in.offset[p[0]][p[1]], y = in.offset[p[1]][p[0]];
          if (x >= 0 && y >= 0 && std::abs(x - y) > kOffsetTolerance) votes += x < y ? 1 : -1;
        }
      }
      if (votes == 0) how = "not told by the traffic (listed from the lowest address)";
      if (votes < 0) {
        for (std::vector<int>& p : pipes) std::reverse(p.begin(), p.end());
      }
      t.kind = "hybrid";
      for (const std::vector<int>& p : pipes) t.pipelines.push_back(describe(p));
      for (size_t s = 0; s < stages; ++s) {
        std::vector<std::string> g;
        g.reserve(pipes.size());
        for (const std::vector<int>& p : pipes) g.push_back(in.hosts[p[s]]);
        t.groups.push_back(std::move(g));
      }
      t.evidence = absl::StrFormat(
          "%d pipelines of %d stages (payload both ways on each pipeline edge in every step, one way after the "
          "other), the same stage of each joined into a data-parallel group (%d groups); stage order %s",
          pipes.size(), stages, stages, how);
      return out;
    }
  }

  if (!connected(adj)) {
    t.evidence = light_edges > 0
                     ? "its data edges form separate groups, and the light edges between them are not pipelines "
                       "that join the same stage of each group"
                     : "its data edges form separate groups and nothing repeats every step between them";
    return out;
  }

  // Parameter server, before the collectives' rules: its data edges join every worker to every server both ways
  // and nothing else — no worker sends another anything, where a sharded job's gathers go from rank to rank — yet
  // live on a loaded machine its ranks drift apart until one worker's push meets the server's reply to another,
  // and every host sends in each of several phases spread over the step, which is what the sharded rule reads (a
  // CI run named the testbed's live PS job `sharded`). No other kind below can hold such a graph: the ring and
  // the bidirectional ring need as many servers as workers, the mesh more edges than fewer servers can make.
  // Two-colour the data graph: servers and workers.
  std::vector<int> colour(n, -1);
  bool bipartite = true;
  colour[0] = 0;
  std::vector<int> queue{0};
  for (size_t q = 0; q < queue.size() && bipartite; ++q) {
    const int v = queue[q];
    for (int w : adj[v]) {
      if (colour[w] < 0) {
        colour[w] = 1 - colour[v];
        queue.push_back(w);
      } else if (colour[w] == colour[v]) {
        bipartite = false;
      }
    }
  }
  if (bipartite) {
    std::vector<size_t> side[2];
    for (size_t i = 0; i < n; ++i) side[colour[i]].push_back(i);
    const int s = side[0].size() <= side[1].size() ? 0 : 1;
    const std::vector<size_t>& servers = side[s];
    const std::vector<size_t>& workers = side[1 - s];
    bool complete = servers.size() < workers.size() && workers.size() >= 2;
    for (size_t a : servers) {
      for (size_t b : workers) complete = complete && data(a, b) && data(b, a);
    }
    // Parameter server: every worker exchanges data with every server, both ways.
    if (complete) {
      t.kind = "parameter-server";
      t.evidence = "every worker exchanges data with every server, both ways, and no other pair carries data";
      for (size_t a : servers) {
        t.servers.push_back(in.hosts[a]);
        out.roles[a] = "server";
      }
      for (size_t b : workers) {
        t.workers.push_back(in.hosts[b]);
        out.roles[b] = "worker";
      }
      return out;
    }
  }
  // Sharded data parallel: three or more collective phases per step, all hosts sending in each (gather the
  // weights before each layer's forward and again before its backward, reduce its gradients), spread over the
  // step between the layers' compute — where plain data parallel reduces after the backward, so that the forward
  // and most of the backward are one silent stretch of the step — and none holding more than half of the step's
  // phase bytes: a sharded job's phase is a layer's gather, or its reduction and the next layer's gather, at most a
  // third of the step with two layers or more (the testbed's sharded jobs: 10–22%), where plain data parallel's
  // last reduction, its largest gradient bucket, often holds most of it (a 3-rank DDP job whose buckets lie far
  // apart in its long backward, ../shared/traces/ddp-gloo-w3-mlp4mb-b128: 5 phases 39% silent at most, the last
  // 68% of the bytes).
  if (phases > 0 && in.period_s > 0) {
    size_t collective = 0;
    double phase_bytes = 0, largest = 0;
    for (const PhaseReport& p : in.phases) {
      collective += p.senders == n;
      phase_bytes += p.bytes;
      largest = std::max(largest, p.bytes);
    }
    std::vector<std::pair<double, double>> spans;
    for (const PhaseReport& p : in.phases) spans.emplace_back(p.offset_s, p.offset_s + p.length_s);
    std::sort(spans.begin(), spans.end());
    double silent = in.period_s - spans.back().second + spans.front().first;  // across the step's boundary
    for (size_t k = 1; k < spans.size(); ++k) silent = std::max(silent, spans[k].first - spans[k - 1].second);
    const double longest = silent / in.period_s;
    if (n >= 2 && collective >= 3 && longest < 0.5 && phase_bytes > 0 && largest <= 0.5 * phase_bytes) {
      t.kind = "sharded";
      t.evidence = absl::StrFormat(
          "%d collective phases per step (of %d) in which all %d hosts send, spread over the step (its longest "
          "silence %.0f%% of the period, its largest phase %.0f%% of the bytes): gathers before the forward and the "
          "backward and gradient reductions, where plain data parallel reduces once, after a silent forward",
          collective, phases, n, 100 * longest, 100 * largest / phase_bytes);
      out.roles.assign(n, "rank");
      return out;
    }
  }

  // Ring: each host sends most of its bytes to one successor, and the successors form one cycle.
  {
    std::vector<int> succ(n, -1);
    bool ok = true;
    for (size_t i = 0; i < n && ok; ++i) {
      uint64_t sent = 0, most = 0;
      for (size_t j = 0; j < n; ++j) {
        sent += in.bytes[i][j];
        if (j != i && in.bytes[i][j] > most) {
          most = in.bytes[i][j];
          succ[i] = static_cast<int>(j);
        }
      }
      ok = succ[i] >= 0 && data(i, static_cast<size_t>(succ[i])) &&
           static_cast<double>(most) >= 0.6 * static_cast<double>(sent);
    }
    if (ok) {
      std::vector<bool> seen(n, false);
      int v = 0;
      size_t len = 0;
      while (!seen[v]) {
        seen[v] = true;
        ++len;
        v = succ[v];
      }
      if (v == 0 && len == n) {
        t.kind = "ring";
        t.evidence =
            "each host sends most of its bytes (60% or more) to one successor, and the successors form "
            "one cycle";
        v = 0;
        for (size_t k = 0; k < n; ++k, v = succ[v]) t.order.push_back(in.hosts[v]);
        out.successor = succ;
        out.roles.assign(n, "rank");
        return out;
      }
    }
  }
  // Mesh: data edges between most (75% of the n(n-1)/2) host pairs.
  if (n >= 3 && static_cast<double>(undirected_edges) >= 0.375 * static_cast<double>(n * (n - 1))) {
    t.kind = "mesh";
    t.evidence = absl::StrFormat("data edges between %d of the %d host pairs", undirected_edges, n * (n - 1) / 2);
    out.roles.assign(n, "peer");
    return out;
  }
  // A bidirectional ring: the undirected data graph is one cycle.
  if (n >= 4 && undirected_edges == n &&
      std::all_of(adj.begin(), adj.end(), [](const std::vector<int>& a) { return a.size() == 2; })) {
    t.kind = "ring";
    t.evidence = "the data edges form one cycle through every host, used both ways";
    std::vector<int> succ(n, -1);
    int prev = 0, v = std::min(adj[0][0], adj[0][1]);
    succ[0] = v;
    t.order.push_back(in.hosts[0]);
    while (v != 0) {
      t.order.push_back(in.hosts[v]);
      const int next = adj[v][0] == prev ? adj[v][1] : adj[v][0];
      succ[v] = next;
      prev = v;
      v = next;
    }
    out.successor = succ;
    out.roles.assign(n, "rank");
    return out;
  }
  // Tree or star: acyclic; the root is the centre (the host nearest to all others).
  if (undirected_edges == n - 1) {
    std::vector<int> ecc(n, 0);
    for (size_t src = 0; src < n; ++src) {
      std::vector<int> dist(n, -1);
      dist[src] = 0;
      std::vector<int> q{static_cast<int>(src)};
      for (size_t k = 0; k < q.size(); ++k) {
        for (int w : adj[q[k]]) {
          if (dist[w] < 0) {
            dist[w] = dist[q[k]] + 1;
            q.push_back(w);
          }
        }
      }
      ecc[src] = *std::max_element(dist.begin(), dist.end());
    }
    const size_t root = std::min_element(ecc.begin(), ecc.end()) - ecc.begin();
    const bool star = adj[root].size() == n - 1;
    t.kind = star ? "star" : "tree";
    t.evidence = star ? "every data edge joins one host to the others" : "the data edges form a tree (no cycle)";
    t.servers.push_back(in.hosts[root]);
    out.roles[root] = "root";
    for (size_t i = 0; i < n; ++i) {
      if (i == root) continue;
      if (adj[i].size() >= 2) {
        t.servers.push_back(in.hosts[i]);
        out.roles[i] = "relay";
      } else {
        t.workers.push_back(in.hosts[i]);
        out.roles[i] = "leaf";
      }
    }
    return out;
  }
  t.evidence =
      "the data edges are none of a ring, a mesh, a server-worker graph or a tree, and no step pattern "
      "names a pipeline, hybrid, sharded or expert-parallel job";
  return out;
}

}  // namespace burstscope::training
