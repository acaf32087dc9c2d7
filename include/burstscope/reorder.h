// Puts a capture's records back into timestamp order before the engine (docs/SPEC.md "Timestamps";
// docs/architecture.md): one ordered source (a capture file, in its reader's thread: QueueProducer::orderInTime) by
// push() or pushHeld(), or a live port's queues merged by hold() and releaseUpTo() (its worker).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "burstscope/packet.h"

namespace burstscope {

// Puts records back into timestamp order before the engine. A record is held until the newest timestamp
// seen is `horizon_ns` past it; ties keep arrival order. A record older than what was already released is
// released with the last released timestamp (clamped) and counted: the engine never sees time go backwards.
// In push() and pushHeld() (one ordered source, e.g. a capture file), a record more than kClockStepNs behind is not
// late but a clock stepped back (a merged or restarted capture, an NTP step): time is shifted forward from it on, so
// that it continues where it was instead of piling the rest of the traffic up at one clamped instant.
class Reorderer {
 public:
  static constexpr int64_t kClockStepNs = 1'000'000'000;

  explicit Reorderer(int64_t horizon_ns) : horizon_ns_(horizon_ns) {}

  template <typename Emit>
  void push(const PacketRecord& r, Emit&& emit);
  // push() without the copy out: the records it releases stay in the buffer, in order, until takeReleased() hands
  // them over as one span or two (where the buffer wraps). A file's reading thread (QueueProducer::orderInTime)
  // takes them at each flush into its ring, whose slots the worker's engine reads in place (bench/README.md, issue
  // 41). `take` keeps no reference past its call and does not call back into this Reorderer (a push could grow the
  // buffer under the span).
  void pushHeld(const PacketRecord& r);
  template <typename Take>
  void takeReleased(Take&& take);  // take(std::span<const PacketRecord>)
  template <typename Emit>
  void flush(Emit&& emit);  // what pushHeld() released and not yet taken first, then everything held
  // pushHeld() at the input's end: everything held is released, for takeReleased() to hand over (flush() without
  // the copy out).
  void releaseHeld();

  // For merging several queues: hold a record of queue `queue` without releasing anything, then release every
  // record at or before `bound` (the oldest of the queues' watermarks less the horizon). A record that arrives
  // later with a timestamp before the release point (the largest bound so far) is clamped to it and counted, so
  // that the engine may advance to it. A Reorderer takes either push() and pushHeld() records or hold() records,
  // never both (flush() ends either): the two are held apart.
  // Each queue's records are held apart, in time order (a queue's records arrive in order, or nearly), and the
  // release merges the queues: a record is never moved past another queue's records. (One buffer for all of them
  // put each record that was behind another queue's newest in place by moving those one at a time: with the worker
  // behind, hundreds a record; bench/README.md, issue 41.) Ties across queues are released in the order held.
  void hold(size_t queue, const PacketRecord& r);
  template <typename Emit>
  void releaseUpTo(int64_t bound, Emit&& emit);

  uint64_t reordered() const { return reordered_; }  // put back in order within the horizon
  uint64_t clamped() const { return clamped_; }      // arrived later than the horizon allowed
  int64_t maxLatenessNs() const { return max_lateness_ns_; }
  uint64_t clockStepsBack() const { return steps_back_; }  // push(), pushHeld(): steps back of more than kClockStepNs
  int64_t clockShiftNs() const { return shift_ns_; }       // push(), pushHeld(): what they add up to (time shifted on)
  // The counts above at once: a port's result takes them, and a file's queue publishes them (QueueCounters).
  struct Counts {
    uint64_t reordered = 0, clamped = 0;
    int64_t max_lateness_ns = 0;
    uint64_t clock_steps_back = 0;
    int64_t clock_shift_ns = 0;
  };
  Counts counts() const { return {reordered_, clamped_, max_lateness_ns_, steps_back_, shift_ns_}; }

 private:
  // Holds `r` with time `ts` (its own, shifted or clamped): one copy into the buffer.
  void holdAt(const PacketRecord& r, int64_t ts);
  // Into the buffer in time order, stable: at the back for a record in order (the usual case, inline), else
  // by insertion from the back (insertLate).
  void insert(const PacketRecord& r, int64_t ts) {
    if (taken_from_ + size_ == buf_.size()) grow();
    const size_t mask = buf_.size() - 1;
    if (size_ == 0 || buf_[(head_ + size_ - 1) & mask].ts_ns <= ts) {
      PacketRecord& slot = buf_[(head_ + size_) & mask];
      slot = r;
      slot.ts_ns = ts;
      ++size_;
      return;
    }
    insertLate(r, ts);
  }
  void insertLate(const PacketRecord& r, int64_t ts);
  void grow();

  // A queue's held records (hold()), in time order, each with its place in the order held (ties across queues).
  struct Held {
    PacketRecord r;
    uint64_t seq;
  };
  struct Lane {
    std::vector<Held> buf;  // ring, power-of-two size (or empty)
    size_t cap = 0;         // buf.size(), kept: a size() is a division by sizeof(Held)
    size_t head = 0;
    size_t size = 0;
    const Held& front() const { return buf[head]; }
  };
  void holdLate(Lane& lane, const PacketRecord& r, int64_t ts);  // behind the lane's newest: inserted from the back
  static void growLane(Lane& lane);

  // The merge's tournament (a winner tree). The leaves are the lanes' front keys (an empty lane's: none); an inner
  // node holds the lane of its children's earlier key, so the root is the lane whose front comes next, and the
  // first of the other lanes' fronts is the earliest key beside its path. After a lane's run only its path is
  // played again: about 2·log2(lanes) compares a run, and a compare a lane to build the tree at each release, where a
  // scan read every lane's front record at every run (with the queues' flows interleaved a run is a record or two).
  // bench/README.md, issue 41.
  // A key is one unsigned 128-bit word, the time (sign bit flipped) above the order held: one compare, no branch.
  using Key = unsigned __int128;
  static constexpr Key kNoKey = ~Key{0};  // no record: after every key (no record has the last seq)
  static Key key(int64_t ts, uint64_t seq) { return Key{static_cast<uint64_t>(ts) ^ (uint64_t{1} << 63)} << 64 | seq; }
  static Key frontKey(const Lane& lane) {
    return lane.size == 0 ? kNoKey : key(lane.front().r.ts_ns, lane.front().seq);
  }
  size_t leaves() const { return tree_.size() / 2; }  // the lanes' count rounded up to a power of two
  void play(size_t node) {                            // the node's lane: its children's earlier key
    const uint32_t l = tree_[2 * node], r = tree_[2 * node + 1];
    tree_[node] = keys_[r] < keys_[l] ? r : l;
  }
  void buildTree();  // every lane's key and every node, from the lanes' fronts
  void replay(size_t lane) {
    for (size_t node = (leaves() + lane) >> 1; node >= 1; node >>= 1) play(node);
  }
  template <typename Emit>
  void mergeLanes(int64_t bound, Emit&& emit);
  template <typename Emit>
  void emitReleased(Emit&& emit) {  // takeReleased() a record at a time (push(), flush())
    takeReleased([&](std::span<const PacketRecord> s) {
      for (const PacketRecord& x : s) emit(x);
    });
  }

  int64_t horizon_ns_;
  std::vector<PacketRecord> buf_ = std::vector<PacketRecord>(1024);  // ring, power-of-two size
  size_t head_ = 0;                                                  // oldest held
  size_t size_ = 0;
  size_t taken_from_ = 0;  // released by pushHeld(), not yet taken: the records just before head_
  int64_t newest_ns_ = INT64_MIN;
  int64_t released_ns_ = INT64_MIN;
  uint64_t reordered_ = 0;
  uint64_t clamped_ = 0;
  int64_t max_lateness_ns_ = 0;
  uint64_t steps_back_ = 0;
  int64_t shift_ns_ = 0;
  std::vector<Lane> lanes_;
  uint64_t seq_ = 0;
  std::vector<Key> keys_;       // a lane's front key at its index; one more, kNoKey, for the leaves past the lanes
  std::vector<uint32_t> tree_;  // node n's children 2n and 2n + 1; the root 1; leaf q at leaves() + q
};

inline void Reorderer::hold(size_t queue, const PacketRecord& r) {
  int64_t ts = r.ts_ns;
  if (ts < released_ns_) {
    max_lateness_ns_ = std::max(max_lateness_ns_, released_ns_ - ts);
    ts = released_ns_;
    ++clamped_;
  }
  if (queue >= lanes_.size()) lanes_.resize(queue + 1);
  Lane& lane = lanes_[queue];
  // Reordered as one buffer for every queue would count it: behind the newest record held. That is newest_ns_:
  // the newest record is released only with everything else, and a record behind what was released is clamped.
  if (ts < newest_ns_) ++reordered_;
  if (lane.size == lane.cap) growLane(lane);
  const size_t mask = lane.cap - 1;
  if (lane.size == 0 || lane.buf[(lane.head + lane.size - 1) & mask].r.ts_ns <= ts) {
    Held& slot = lane.buf[(lane.head + lane.size) & mask];
    slot.r = r;
    slot.r.ts_ns = ts;
    slot.seq = seq_++;
    ++lane.size;
  } else {
    holdLate(lane, r, ts);
  }
  newest_ns_ = std::max(newest_ns_, ts);
}

inline void Reorderer::holdAt(const PacketRecord& r, int64_t ts) {
  if (ts < released_ns_) {
    max_lateness_ns_ = std::max(max_lateness_ns_, released_ns_ - ts);
    ts = released_ns_;
    ++clamped_;
  }
  insert(r, ts);
  newest_ns_ = std::max(newest_ns_, ts);
}

inline void Reorderer::pushHeld(const PacketRecord& r) {
  int64_t ts = r.ts_ns + shift_ns_;
  // Nothing released is newer than newest_ns_ here, so it is the time line's front.
  if (newest_ns_ != INT64_MIN && ts < newest_ns_ - kClockStepNs) {
    ++steps_back_;
    shift_ns_ += newest_ns_ - ts;
    ts = newest_ns_;
  }
  holdAt(r, ts);
  const size_t mask = buf_.size() - 1;
  while (size_ > 0 && buf_[head_].ts_ns <= newest_ns_ - horizon_ns_) {
    released_ns_ = buf_[head_].ts_ns;
    head_ = (head_ + 1) & mask;
    --size_;
    ++taken_from_;
  }
}

inline void Reorderer::releaseHeld() {
  if (size_ == 0) return;
  const size_t mask = buf_.size() - 1;
  released_ns_ = buf_[(head_ + size_ - 1) & mask].ts_ns;
  head_ = (head_ + size_) & mask;
  taken_from_ += size_;
  size_ = 0;
}

template <typename Take>
void Reorderer::takeReleased(Take&& take) {
  if (taken_from_ == 0) return;
  const size_t cap = buf_.size();
  const size_t from = (head_ - taken_from_) & (cap - 1);
  const size_t first = std::min(taken_from_, cap - from);  // up to the buffer's end, then from its start
  take(std::span<const PacketRecord>(buf_.data() + from, first));
  if (first < taken_from_) take(std::span<const PacketRecord>(buf_.data(), taken_from_ - first));
  taken_from_ = 0;
}

template <typename Emit>
void Reorderer::push(const PacketRecord& r, Emit&& emit) {
  pushHeld(r);
  emitReleased(emit);
}

template <typename Emit>
void Reorderer::releaseUpTo(int64_t bound, Emit&& emit) {
  // One queue too: its only run ends at the bound (the other lanes' first is "none").
  mergeLanes(bound, emit);
  released_ns_ = std::max(released_ns_, bound);
}

template <typename Emit>
void Reorderer::flush(Emit&& emit) {
  releaseHeld();  // behind what was released and not yet taken: emitted after it
  emitReleased(emit);
  mergeLanes(INT64_MAX, [&](const PacketRecord& r) {
    released_ns_ = r.ts_ns;
    emit(r);
  });
}

template <typename Emit>
void Reorderer::mergeLanes(int64_t bound, Emit&& emit) {
  // The next lane's records up to the other lanes' first (time, then order held): a queue's run of records, a
  // flow's burst in RSS's one queue, is released without looking at the other lanes again for each.
  if (lanes_.empty()) return;
  buildTree();
  // The last key at the bound, which no record has (no seq is UINT64_MAX): every record's key at or before the
  // bound is below it, every later one above (kNoKey for a flush's).
  const Key end = key(bound, UINT64_MAX);
  for (;;) {
    const uint32_t next = tree_[1];
    if (keys_[next] >= end) break;
    // The run ends at the bound or at the other lanes' first: the earliest of the keys beside the root's path.
    Key until = end;
    for (size_t node = leaves() + next; node > 1; node >>= 1) until = std::min(until, keys_[tree_[node ^ 1]]);
    Lane& lane = lanes_[next];
    const Held* buf = lane.buf.data();
    const size_t mask = lane.cap - 1;
    size_t head = lane.head, left = lane.size;
    do {
      emit(buf[head].r);
      head = (head + 1) & mask;
      --left;
    } while (left > 0 && key(buf[head].r.ts_ns, buf[head].seq) < until);
    lane.head = head;
    lane.size = left;
    keys_[next] = frontKey(lane);
    replay(next);
  }
}

}  // namespace burstscope
