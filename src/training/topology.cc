#include "src/training/topology.h"

#include <algorithm>
#include <functional>
#include <numeric>

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
  if (n < 2 || total == 0) return out;

  const double cut = in.data_edge_share * static_cast<double>(heaviest);
  auto data = [&](size_t i, size_t j) {
    return i != j && in.bytes[i][j] > 0 && static_cast<double>(in.bytes[i][j]) >= cut;
  };
  uint64_t data_bytes = 0, reverse_bytes = 0;
  std::vector<std::vector<int>> adj(n);  // undirected data graph
  size_t undirected_edges = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      if (data(i, j)) {
        data_bytes += in.bytes[i][j];
        t.edges.push_back({in.hosts[i], in.hosts[j], in.bytes[i][j],
                           static_cast<double>(in.bytes[i][j]) / static_cast<double>(total)});
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
  if (!connected(adj)) return out;

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
    out.roles.assign(n, "peer");
    return out;
  }
  // A bidirectional ring: the undirected data graph is one cycle.
  if (n >= 4 && undirected_edges == n &&
      std::all_of(adj.begin(), adj.end(), [](const std::vector<int>& a) { return a.size() == 2; })) {
    t.kind = "ring";
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
  // Two-colour the data graph: servers and workers, or a tree's levels.
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
  return out;
}

}  // namespace burstscope::training
