// The Reorderer's out-of-line parts (include/burstscope/reorder.h).
#include <bit>
#include <vector>

#include "burstscope/reorder.h"

namespace burstscope {

void Reorderer::insertLate(const PacketRecord& r, int64_t ts) {
  const size_t mask = buf_.size() - 1;
  // Stable insertion from the back (the newest held record is later than ts: at least one step).
  size_t pos = size_;
  while (pos > 0 && buf_[(head_ + pos - 1) & mask].ts_ns > ts) {
    buf_[(head_ + pos) & mask] = buf_[(head_ + pos - 1) & mask];
    --pos;
  }
  ++reordered_;
  PacketRecord& slot = buf_[(head_ + pos) & mask];
  slot = r;
  slot.ts_ns = ts;
  ++size_;
}

void Reorderer::holdLate(Lane& lane, const PacketRecord& r, int64_t ts) {
  const size_t mask = lane.cap - 1;
  // Stable insertion from the back, past this queue's later records only (the other queues' are in their lanes).
  size_t pos = lane.size;
  while (pos > 0 && lane.buf[(lane.head + pos - 1) & mask].r.ts_ns > ts) {
    lane.buf[(lane.head + pos) & mask] = lane.buf[(lane.head + pos - 1) & mask];
    --pos;
  }
  Held& slot = lane.buf[(lane.head + pos) & mask];
  slot.r = r;
  slot.r.ts_ns = ts;
  slot.seq = seq_++;
  ++lane.size;
}

void Reorderer::growLane(Lane& lane) {
  const size_t cap = std::max<size_t>(lane.cap * 2, 1024);
  std::vector<Held> bigger(cap);
  for (size_t i = 0; i < lane.size; ++i) bigger[i] = lane.buf[(lane.head + i) & (lane.cap - 1)];
  lane.buf.swap(bigger);
  lane.cap = cap;
  lane.head = 0;
}

void Reorderer::buildTree() {
  const size_t lanes = lanes_.size();
  if (keys_.size() != lanes + 1) {  // a queue seen for the first time (a port's queues: a few, at start-up)
    keys_.assign(lanes + 1, kNoKey);
    tree_.assign(2 * std::bit_ceil(lanes), static_cast<uint32_t>(lanes));
    for (size_t q = 0; q < lanes; ++q) tree_[leaves() + q] = static_cast<uint32_t>(q);
  }
  for (size_t q = 0; q < lanes; ++q) keys_[q] = frontKey(lanes_[q]);
  for (size_t node = leaves() - 1; node >= 1; --node) play(node);
}

void Reorderer::grow() {
  // The records released and not yet taken too (pushHeld), before the held ones.
  std::vector<PacketRecord> bigger(buf_.size() * 2);
  const size_t from = head_ - taken_from_;
  for (size_t i = 0; i < taken_from_ + size_; ++i) bigger[i] = buf_[(from + i) & (buf_.size() - 1)];
  buf_.swap(bigger);
  head_ = taken_from_;
}

}  // namespace burstscope
