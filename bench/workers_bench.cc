#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

#include "bench/bench_common.h"
#include "burstscope/decode.h"
#include "burstscope/evidence.h"
#include "burstscope/mirror.h"
#include "burstscope/reorder.h"
#include "burstscope/training.h"
#include "burstscope/window.h"
#include "tests/common/frames.h"

namespace burstscope {
namespace {

// The cost model's stages (bench/README.md "Cores per port"): what each worker of a port does per packet with
// live defaults (1 s intervals, exact up to 10 ms, the port's link rate among the backlog rates), over the
// bundled trace decoded as `run` decodes it (duplicate keys for the mirror checks; 10.77.0.1 local, so that
// both direction streams run). Each pass of the trace continues its TCP connections (sequence numbers moved
// on by 2^28), so that no pass repeats the previous one's segments.
//   part:0  port and direction streams (the port's worker with 2 or 3 workers)
//   part:1  pair and flow tables, congestion evidence (the second worker)
//   part:2  training aggregator (the second worker with 2, the third with 3)
//   part:3  mirror checks (the port's worker with 2, the third with 3)
//   part:4  all of them in one engine (workers: 1)
//   part:5  none of them: what the benchmark's own copying of each batch and the engine's dispatch cost, which
//           every other part includes
// The decoder as `run` sets it up for the traces: 10.77.0.1 local, so that both direction streams run.
DecoderConfig liveDecoder() {
  DecoderConfig dc;
  IpPrefix local;
  parsePrefix("10.77.0.1/32", &local);
  dc.local_nets.push_back(local);
  return dc;
}
std::vector<PacketRecord> liveRecords() { return bench::bundledRecords(liveDecoder()); }

// The RoCEv2 sample (data/roce/roce-ddp-w3.pcap: the trace's first 108 ms re-framed, each TCP data segment an RDMA
// WRITE, each pure ACK an ACKNOWLEDGE, each direction of a connection a queue pair; 7,933 frames with a few
// injected CNPs, CE marks, resent packets and PAUSE frames), decoded as `liveRecords()` decodes the trace.
std::vector<PacketRecord> roceRecords() { return bench::traceRecords("data/roce/roce-ddp-w3.pcap", liveDecoder()); }

// A pass of `records`' time: from the first to the last, then one mean gap between packets, so that passes
// follow each other at the records' own rate (a fixed gap would lower the rate of short, compressed passes).
int64_t passLength(const std::vector<PacketRecord>& records) {
  const int64_t length = records.back().ts_ns - records.front().ts_ns;
  return length + std::max<int64_t>(1, length / static_cast<int64_t>(records.size()));
}

// The same records with their flows churning, as bench/flow_churn.py makes a capture for flow_churn.sh: every IPv4
// TCP packet moved to one of 1 M random 5-tuples, picked at random per packet (seeded), its direction unknown (the
// addresses are not local). 2^19 packets (about 13 passes of the trace): most are their flow's first (about 408 k
// flows among 524 k TCP packets), the rest come back to a flow after a random while.
std::vector<PacketRecord> churnRecords() {
  const std::vector<PacketRecord> live = liveRecords();
  constexpr size_t kFlows = 1'000'000, kPackets = size_t{1} << 19;
  std::mt19937_64 rng(41);
  std::vector<uint64_t> flows(kFlows * 2);
  for (uint64_t& w : flows) w = rng();
  std::vector<PacketRecord> out(kPackets);
  const int64_t span = passLength(live);
  for (size_t i = 0; i < kPackets; ++i) {
    PacketRecord& r = out[i] = live[i % live.size()];
    r.ts_ns += span * static_cast<int64_t>(i / live.size());
    if (r.key.family != 4 || r.l4Kind() != L4Kind::kTcp) continue;
    const size_t f = rng() % kFlows;
    std::memcpy(r.key.src.data(), &flows[2 * f], 4);
    std::memcpy(r.key.dst.data(), reinterpret_cast<const char*>(&flows[2 * f]) + 4, 4);
    r.key.src_port = static_cast<uint16_t>(flows[2 * f + 1]);
    r.key.dst_port = static_cast<uint16_t>(flows[2 * f + 1] >> 16);
    r.direction = Direction::kUnknown;
  }
  return out;
}

// The trace at a port's packet rate, two ways. BM_Part replays the trace at its own rate (about 28 k packets/s),
// where every base bin, window step and interval close is shared by a few packets only; at a line rate's packets
// per second they are shared by thousands. `one_job`: the same job on a faster network, its times compressed
// (its flows and their runs as they are). Else many jobs: as many copies of the trace as the rate takes, each
// its own hosts (the copy's number in the second and third bytes of every IPv4 address), duplicate keys and
// phase (copy c is the trace rotated by c/copies of its span), merged by time, so that packets of different jobs
// interleave one by one (the worst case for the flow runs). Of those, the first 2^20 packets' time (70 ms at
// 15 M packets/s): the copies whose rotation wraps within it (one in twenty or fewer) jump back in sequence
// there once. About 535 jobs at 15 M packets/s, 1,160 at 32.5 M. In the 70 ms, 1,858 and 2,442 of their flows
// send (a job's step uses a few of its 28 flows at a time; counted 2026-12-06, where this comment had said 15,000
// and 32,000, every flow of every job): a port of as many jobs meets all of them within a pass of the trace, more
// than the training aggregator keeps (BM_Untracked).
std::vector<PacketRecord> atRate(double rate, bool one_job, const std::vector<PacketRecord>& live = liveRecords()) {
  const int64_t t0 = live.front().ts_ns;
  const int64_t span = passLength(live);
  const double own = static_cast<double>(live.size()) * 1e9 / static_cast<double>(span);
  std::vector<PacketRecord> out;
  if (one_job) {
    out = live;
    const double k = own / rate;
    for (PacketRecord& r : out) r.ts_ns = t0 + std::llround(static_cast<double>(r.ts_ns - t0) * k);
    return out;
  }
  const int copies = std::max(1, static_cast<int>(std::lround(rate / own)));
  const auto window = static_cast<int64_t>(static_cast<double>(size_t{1} << 20) / rate * 1e9);
  for (int c = 0; c < copies; ++c) {
    const int64_t phase = span * c / copies;
    for (PacketRecord r : live) {
      const int64_t at = (r.ts_ns - t0 + phase) % span;
      if (at >= window) continue;
      r.ts_ns = t0 + at;
      if (r.key.family == 4) {
        for (auto* a : {&r.key.src, &r.key.dst}) {
          (*a)[1] = static_cast<uint8_t>(c >> 8);
          (*a)[2] = static_cast<uint8_t>(c);
        }
      }
      r.dup_key ^= static_cast<uint32_t>(c) * 0x9E3779B9u;
      out.push_back(r);
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const PacketRecord& a, const PacketRecord& b) { return a.ts_ns < b.ts_ns; });
  return out;
}

// One part of a port's analysis over `records`, passes after the first moved on in time and (unless `replayed`)
// in sequence space.
// `link_bps`: the port's link capacity, for utilisation and microbursts (and among the backlog rates, as a live
// port's is).
void runPart(benchmark::State& state, const std::vector<PacketRecord>& records, bool replayed = false,
             double link_bps = 10e9, bool time_batches = false, const TrainingConfig& training = {},
             size_t flow_table_capacity = 0) {
  const int part = static_cast<int>(state.range(0));
  EngineConfig cfg;
  cfg.link_capacity_bps = link_bps;
  if (std::find(cfg.rates_bps.begin(), cfg.rates_bps.end(), link_bps) == cfg.rates_bps.end())
    cfg.rates_bps.push_back(link_bps);
  cfg.report_interval_ns = 1'000'000'000;
  cfg.report_top_k = 10;
  if (flow_table_capacity != 0) cfg.flow_table_capacity = flow_table_capacity;
  const bool all = part == 4;
  cfg.streams = part == 0 || all;
  cfg.pairs_and_flows = part == 1 || all;
  Engine engine(cfg);
  if (part == 2 || all) engine.addAggregator(makeTrainingAggregator(training, true));
  if (part == 1 || all) {
    auto e = std::make_unique<EvidenceAggregator>(EvidenceConfig{}, cfg, true);
    engine.subscribe(e.get());
    engine.addAggregator(std::move(e));
  }
  if (part == 3 || all) engine.addAggregator(std::make_unique<MirrorAggregator>(MirrorConfig{}, cfg));
  std::vector<PacketRecord> batch(256);
  const int64_t span = passLength(records);
  int64_t shift = 0;
  uint32_t seq_shift = 0;
  size_t i = 0;
  std::chrono::steady_clock::duration worst{};
  for (auto _ : state) {
    for (PacketRecord& r : batch) {
      r = records[i];
      r.ts_ns += shift;
      if (r.l4Kind() == L4Kind::kTcp) {
        r.seq += seq_shift;
        r.ack += r.ack ? seq_shift : 0;
      } else if (r.l4Kind() == L4Kind::kRoce) {  // the 24-bit PSN moved on by 2^22 a pass, the syndrome kept
        r.seq = (r.seq & 0xFF000000u) | ((r.seq + (seq_shift >> 6)) & 0xFFFFFFu);
      }
      if (++i == records.size()) {
        i = 0;
        shift += span;
        seq_shift += replayed ? 0 : 1u << 28;
      }
    }
    if (!time_batches) {
      engine.add(batch);
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    engine.add(batch);
    worst = std::max(worst, std::chrono::steady_clock::now() - start);
  }
  if (time_batches) state.counters["worst_batch_us"] = std::chrono::duration<double, std::micro>(worst).count();
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 256);
  static const char* const kNames[] = {
      "port and direction streams", "tables + evidence",          "training", "mirror checks",
      "one engine: everything",     "none: the copy and dispatch"};
  state.SetLabel(kNames[part]);
}
void BM_Part(benchmark::State& state) {
  static const std::vector<PacketRecord> records = liveRecords();
  runPart(state, records);
}
BENCHMARK(BM_Part)->ArgName("part")->DenseRange(0, 5);

// A live worker's longest stop: the whole default analysis over 72 M packets of the trace (about 1.3 M microbursts
// on the port's stream, past the million a stream keeps), each batch of 256 timed; worst_batch_us is the longest
// batch. A worker that stops for longer than its ring holds loses packets (a doubling list of microbursts held it
// for 56-58 ms: bench/README.md, issue 41's twenty-third session). One run of a few seconds, outside the default
// filter's reach of `BM_Part/`.
void BM_LongRun(benchmark::State& state) {
  static const std::vector<PacketRecord> records = liveRecords();
  runPart(state, records, false, 10e9, /*time_batches=*/true);
}
BENCHMARK(BM_LongRun)->ArgName("part")->DenseRange(0, 4)->Iterations(280'000);

// The parts that key by flow, with the flows churning (issue 41's flow-churn figure, on one worker): set against
// BM_Part's same part, what a capture of a scan or of many short connections costs per packet.
void BM_Churn(benchmark::State& state) {
  static const std::vector<PacketRecord> records = churnRecords();
  runPart(state, records);
}
BENCHMARK(BM_Churn)->ArgName("part")->DenseRange(1, 5);

// The trace replayed as it is, pass after pass, without moving its sequence numbers (as a looped replay does:
// net_pcap's infinite_rx in bench/compare_dpdk.sh, which loops the trace's first 4,000 frames; this the whole
// trace): to the evidence nearly every data segment after the first pass is a retransmission, an event charged to
// its flow and host pair (a retransmission storm; one within the out-of-order threshold of its connection's last
// advance is out of order instead). Set against BM_Part.
void BM_Replayed(benchmark::State& state) {
  static const std::vector<PacketRecord> records = liveRecords();
  runPart(state, records, /*replayed=*/true);
}
BENCHMARK(BM_Replayed)->ArgName("part")->DenseRange(1, 5);

// Every part at the packet rates of the cost model's ports: 15 M packets/s (100 Gbit/s of the training mix with
// its ACKs) and 32.5 M (400 Gbit/s of 1500-byte frames, here in the trace's own sizes); jobs:1 one job faster,
// jobs:0 many jobs interleaved (atRate). The port's link is 100 G or 400 G, as its analysis would be set up
// (`link-gbps`): a 10 G link's microburst threshold under 84 Gbit/s of traffic kept every packet in one burst
// (the figures before 2026-12-03's thirteenth session of issue 41 were taken so; bench/README.md).
void BM_AtRate(benchmark::State& state) {
  static const std::vector<PacketRecord> sets[2][2] = {{atRate(15e6, false), atRate(32.5e6, false)},
                                                       {atRate(15e6, true), atRate(32.5e6, true)}};
  const bool g100 = state.range(1) == 15;
  runPart(state, sets[state.range(2)][g100 ? 0 : 1], false, g100 ? 100e9 : 400e9);
}
BENCHMARK(BM_AtRate)->ArgNames({"part", "mpps", "jobs"})->ArgsProduct({{0, 1, 2, 3, 4, 5}, {15, 32}, {1, 0}});

// The RoCEv2 sample (roceRecords) at 15 M packets/s on a 100 G link, one job faster (jobs:1) or many jobs interleaved
// (jobs:0), as BM_AtRate's TCP trace: what a port of RDMA training traffic costs. Each pass moves the PSNs on, so
// that no pass repeats the last one's packets (a repeat would be resent, an event charged to its flow and pair).
void BM_Roce(benchmark::State& state) {
  static const std::vector<PacketRecord> roce = roceRecords();
  static const std::vector<PacketRecord> sets[2] = {atRate(15e6, false, roce), atRate(15e6, true, roce)};
  runPart(state, sets[state.range(1)], false, 100e9);
}
BENCHMARK(BM_Roce)->ArgNames({"part", "jobs"})->ArgsProduct({{0, 1, 2, 3, 4, 5}, {1, 0}});

// More live flows than the analyses keep. bound:0, more than the training aggregator's flows (`training.max-flows`,
// 4,096 by default; a port of 535 jobs of the trace, 15,000 flows, has more within a pass of it): many jobs at 15 M
// packets/s (BM_AtRate's jobs:0, whose 2^20 packets hold 1,858 flows) with 256 flows kept, so that seven eighths of
// them are untracked, counted as such run by run. bound:1, more than the congestion evidence's connections too
// (`flow-table`, 57,344 by default): the flow table's bound 512 (the connections are about half the flows; the flow
// and pair tables evict all the while). Set against BM_AtRate/part:N/mpps:15/jobs:0: part 2 alone finds each run's
// flow itself, parts 1 and 4 through the flow table's hints.
void BM_Untracked(benchmark::State& state) {
  static const std::vector<PacketRecord> records = atRate(15e6, false);
  TrainingConfig training;
  training.max_flows = 256;
  runPart(state, records, false, 100e9, false, training, state.range(1) == 1 ? 512 : 0);
}
BENCHMARK(BM_Untracked)->ArgNames({"part", "bound"})->ArgsProduct({{1, 2, 4}, {0, 1}});

// The AF_XDP comparison's traffic (bench/compare_afxdp.py replays tests/integration/make_flows.py's file): 64 UDP
// flows, each between a host pair of its own, one packet of each in turn (so every flow run is one packet long),
// 3 us apart, of sizes 64 to 1,513 bytes; decoded as `run` decodes it (no local networks). Built with the
// tests' FrameBuilder, 40 rounds, giving the records make_flows.py's frames decode to (its MAC addresses differ, which
// no record holds), for the per-part costs behind that comparison's port worker.
std::vector<PacketRecord> interleavedRecords() {
  constexpr int kFlows = 64, kRounds = 40;
  Decoder d{DecoderConfig{}};
  std::vector<PacketRecord> out;
  int64_t t = 1'795'294'232'000'000'000;
  for (int j = 0; j < kRounds; ++j) {
    for (int i = 0; i < kFlows; ++i) {
      const auto size = static_cast<uint16_t>(64 + (i * 37 + j * 11) % 1450);
      const auto payload = static_cast<uint16_t>(size - 42);
      testing::FrameBuilder f;
      f.eth(0x0800)
          .ipv4(testing::ip4(10, 1, static_cast<uint8_t>(i / 256), static_cast<uint8_t>(i)),
                testing::ip4(10, 2, static_cast<uint8_t>(i * 7 / 256), static_cast<uint8_t>(i * 7)), 17,
                static_cast<uint16_t>(payload + 8))
          .ports(static_cast<uint16_t>(10000 + i), static_cast<uint16_t>(20000 + (i * 13) % 4000),
                 static_cast<uint16_t>(payload + 8))
          .payload(payload);
      // As make_flows.py writes them: the round in the IP ID and the payload's bytes, so that no two frames of a
      // flow share a duplicate key.
      f.bytes[18] = static_cast<uint8_t>(j >> 8);
      f.bytes[19] = static_cast<uint8_t>(j);
      for (size_t k = 0; k < payload; ++k) f.bytes[42 + k] = static_cast<uint8_t>(j + static_cast<int>(k));
      t += 3'000;
      PacketRecord& r = out.emplace_back();
      d.decode(f.bytes, size, &r);
      r.ts_ns = t;
    }
  }
  return out;
}
void BM_Interleaved(benchmark::State& state) {
  static const std::vector<PacketRecord> records = interleavedRecords();
  runPart(state, records);
}
BENCHMARK(BM_Interleaved)->ArgName("part")->DenseRange(0, 5);

// The worker's merge of a port's RX queues (PortWorker::poll in src/pipeline/pipeline.cc), before any part: 100 G of
// many jobs (atRate, 15 M packets/s, 1,858 flows) spread over `queues` queues by flow, as RSS spreads them,
// each queue in time order. A poll takes from each queue in turn what arrived by the poll's time, at most a batch
// of 256, holds it, and releases what lies the 1 ms horizon behind the oldest of the queues' newest records. A
// round of polls comes every `per_poll` records a queue of traffic on average: 32 where the worker keeps up, 256
// (a whole batch) where it falls behind. Per record released.
void BM_Merge(benchmark::State& state) {
  static const std::vector<PacketRecord> records = atRate(15e6, false);
  const auto queues = static_cast<size_t>(state.range(0));
  constexpr size_t kBatch = 256;  // pipeline.cc's
  std::vector<std::vector<PacketRecord>> queue_records(queues);
  for (const PacketRecord& r : records) {
    uint64_t w[5];
    std::memcpy(w, &r.key, sizeof(w));
    uint64_t h = 0;
    for (uint64_t x : w) h = (h ^ x) * 0x9E3779B97F4A7C15ull;
    queue_records[(h >> 32) % queues].push_back(r);
  }
  const int64_t span = passLength(records);
  const int64_t step = state.range(1) * state.range(0) * 1'000'000'000 / 15'000'000;  // traffic's ns a poll
  Reorderer reorder(1'000'000);
  std::vector<size_t> at(queues, 0);
  std::vector<int64_t> shift(queues, 0), watermark(queues, INT64_MIN);
  int64_t now = records.front().ts_ns;
  uint64_t released = 0;
  for (auto _ : state) {
    now += step;
    // Polls until every queue has given what arrived by `now` (a queue with more than a batch waiting is polled
    // again, as the worker does).
    for (bool more = true; more;) {
      more = false;
      for (size_t q = 0; q < queues; ++q) {
        const std::vector<PacketRecord>& lane = queue_records[q];
        for (size_t n = 0; !lane.empty(); ++n) {
          PacketRecord r = lane[at[q]];
          r.ts_ns += shift[q];
          if (r.ts_ns > now) break;
          if (n == kBatch) {
            more = true;
            break;
          }
          watermark[q] = r.ts_ns;
          reorder.hold(q, r);
          if (++at[q] == lane.size()) {
            at[q] = 0;
            shift[q] += span;
          }
        }
      }
      const int64_t low = *std::min_element(watermark.begin(), watermark.end());
      if (low == INT64_MIN) continue;
      reorder.releaseUpTo(low - 1'000'000, [&](const PacketRecord& r) {
        benchmark::DoNotOptimize(r.ts_ns);
        ++released;
      });
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(released));
  state.counters["reordered_share"] = static_cast<double>(reorder.reordered()) / static_cast<double>(released);
}
BENCHMARK(BM_Merge)->ArgNames({"queues", "per_poll"})->ArgsProduct({{1, 2, 4, 8}, {32, 256}});

// One ordered source through the reorderer, as a file's reading thread puts its records in order (`analyze`,
// QueueProducer::orderInTime, which takes 64 a flush): 256 at a time by pushHeld(), every record held until the
// newest is the 1 ms horizon past it, then what they released taken in place (takeReleased). set:0 the trace at its own
// rate, set:1 100 G of many jobs (atRate, 15 M packets/s). Per record pushed.
void BM_Push(benchmark::State& state) {
  static const std::vector<PacketRecord> sets[2] = {liveRecords(), atRate(15e6, false)};
  const std::vector<PacketRecord>& records = sets[state.range(0)];
  const int64_t span = passLength(records);
  Reorderer reorder(1'000'000);
  int64_t shift = 0;
  size_t i = 0;
  uint64_t released = 0;
  for (auto _ : state) {
    for (int n = 0; n < 256; ++n) {
      PacketRecord r = records[i];
      r.ts_ns += shift;
      reorder.pushHeld(r);
      if (++i == records.size()) {
        i = 0;
        shift += span;
      }
    }
    reorder.takeReleased([&](std::span<const PacketRecord> s) {
      for (const PacketRecord& x : s) benchmark::DoNotOptimize(x.ts_ns);
      released += s.size();
    });
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 256);
  state.counters["released_share"] = static_cast<double>(released) / static_cast<double>(state.iterations() * 256);
}
BENCHMARK(BM_Push)->ArgName("set")->DenseRange(0, 1);

}  // namespace
}  // namespace burstscope

BENCHMARK_MAIN();
