#include "src/window/exact_window.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>

#include "src/window/histograms.h"

namespace burstscope::internal {

ExactWindows::ExactWindows(std::vector<int64_t> taus_ns, size_t max_entries, std::optional<MicroburstSpec> mb)
    : max_entries_(max_entries) {
  for (int64_t t : taus_ns) scales_.push_back(Scale{t});
  for (int i = 0; i < static_cast<int>(scales_.size()); ++i) {
    if (!mb || scales_[i].tau != mb->tau_ns) plain_.push_back(i);
  }
  // The plain scales' stretches and marks (the microburst scale takes its arrivals one by one).
  if (!plain_.empty()) stretch_ns_ = std::max<int64_t>(1, scales_[plain_.front()].tau / kStretchParts);
  if (mb) {
    auto it = std::find(taus_ns.begin(), taus_ns.end(), mb->tau_ns);
    mb_scale_ = static_cast<int>(it - taus_ns.begin());  // the caller includes mb->tau_ns
    mb_threshold_ = mb->threshold_bytes;
    mb_bps_per_byte_ = 8e9 / static_cast<double>(mb->tau_ns);
    mb_max_events_ = mb->max_events;
    mb_result_ = MicroburstResult{0,
                                  {},
                                  Histogram(microburstDurationBounds()),
                                  Histogram(microburstGapBounds()),
                                  Histogram(microburstVolumeBounds())};
  }
}

// The FIFO takes the whole batch first, then each scale walks it in a loop of its own (tight, its branches
// predictable). A scale's `sum` is the bytes from its `first` entry to the arrival it has reached, which is the
// window's content or more (entries that have left but were not yet taken out). Departures only lower the
// window, so when even that bound plus an arrival does not pass the maximum, the maximum stands and the
// departures can wait: they are taken out at the next arrival that might set a new maximum, or at the
// interval's close. The walk never passes the arrival it is at: what leaves at t is older than t - τ < t.
//
// The same holds a stretch at a time: every arrival t of a stretch whose first is t0 has its window inside
// (t0-τ, t], so it holds at most the window just before t0 plus the stretch's bytes. Where even that bound cannot
// pass the maximum (most of the time: bench/README.md), the stretch only adds to the bound, and what leaves before
// it leaves in whole marks (runs of entries, each with its bytes): a scale's work is then per stretch and per mark,
// not per packet. Only a stretch that might set a maximum is walked arrival by arrival.
void ExactWindows::addBatch(std::span<const Arrival> batch) {
  if (batch.empty()) return;
  if (batch.size() > kMaxBatch) {  // a stretch's end is 32-bit
    for (size_t i = 0; i < batch.size(); i += kMaxBatch)
      addBatch(batch.subspan(i, std::min(kMaxBatch, batch.size() - i)));
    return;
  }
  if (batch.size() > 1 && fifo_.size() + batch.size() >= max_entries_) {
    // Near the memory bound, demotion must happen at the arrival that reaches it: one by one.
    for (const Arrival& a : batch) addBatch({&a, 1});
    return;
  }
  if (stretches_.size() < batch.size()) stretches_.resize(batch.size());  // at most one an arrival
  if (fifo_.size() + batch.size() < max_entries_) {
    append(batch);
  } else {
    // A batch of one (see above) at the memory bound: bring the scales up to date and demote.
    const Arrival& a = batch.front();
    if (!fifo_.empty() && fifo_.back().ts == a.ts) {
      fifo_.back().bytes += a.len;
    } else {
      fifo_.dropBefore(retainFrom());
      if (fifo_.size() >= max_entries_) makeRoom(fifo_.back().ts);
      if (fifo_.empty() || a.ts >= open_end_) {
        if (!fifo_.empty()) closeMark(fifo_.back().ts);
        openMark(fifo_.end(), a.ts);
      }
      fifo_.pushBack(Entry{a.ts, a.len});
    }
    open_bytes_ += a.len;
    stretches_[0] = Stretch{1, a.len};
    stretch_count_ = 1;
  }
  uint64_t passed = 0;
  for (int i : plain_) {
    Scale& s = scales_[i];
    uint64_t first = s.first, sum = s.sum, max = s.max;
    uint32_t from = 0;
    for (const Stretch& st : std::span(stretches_.data(), stretch_count_)) {
      if (sum + st.bytes > max) {
        const int64_t limit = batch[from].ts - s.tau;  // entries at or before this have left before the stretch
        departMarks(s, first, sum, limit);
        if (sum + st.bytes > max) {
          while (fifo_[first].ts <= limit) sum -= fifo_[first++].bytes;
        }
      }
      if (sum + st.bytes <= max) {
        sum += st.bytes;
        from = st.end;
        ++passed;
        continue;
      }
      for (; from < st.end; ++from) {
        const Arrival& a = batch[from];
        sum += a.len;
        if (sum > max) {
          const int64_t limit = a.ts - s.tau;  // entries at or before this have left (t-τ, t]
          while (fifo_[first].ts <= limit) sum -= fifo_[first++].bytes;
          if (sum > max) max = sum;
        }
      }
    }
    s.first = first;
    s.sum = sum;
    s.max = max;
  }
  stretches_passed_ += passed;
  if (mb_scale_ >= 0) addMicroburstScale(batch);
}

// Appends the batch to the FIFO (equal timestamps merged into one entry), in a loop of its own, cutting its marks
// and the batch's stretches as it goes.
void ExactWindows::append(std::span<const Arrival> batch) {
  // Forget what every window has left only when the buffer would otherwise grow (the oldest entry still
  // needed is the minimum of the lagging scales' positions).
  if (fifo_.capacity() - fifo_.size() < batch.size() && !fifo_.empty()) fifo_.dropBefore(retainFrom());
  fifo_.reserve(fifo_.size() + batch.size());
  Entry* slots = fifo_.slots();
  const uint64_t mask = fifo_.mask();
  uint64_t tail = fifo_.end();
  if (fifo_.empty()) {  // the first arrival, added below, opens the first mark
    openMark(tail, batch.front().ts);
    slots[tail++ & mask] = Entry{batch.front().ts, 0};
  }
  int64_t back_ts = slots[(tail - 1) & mask].ts;
  Stretch* stretches = stretches_.data();
  size_t n = 0;
  // A stretch is the part of its mark in this batch: the open mark's bytes grow by each stretch as it ends.
  uint64_t stretch_bytes = 0;
  for (uint32_t k = 0; k < batch.size(); ++k) {
    const Arrival& a = batch[k];
    if (a.ts == back_ts) {
      slots[(tail - 1) & mask].bytes += a.len;
    } else {
      if (a.ts >= open_end_) [[unlikely]] {
        open_bytes_ += stretch_bytes;
        closeMark(back_ts);
        openMark(tail, a.ts);
        if (k != 0) stretches[n++] = Stretch{k, stretch_bytes};
        stretch_bytes = 0;
      }
      slots[tail++ & mask] = Entry{a.ts, a.len};
      back_ts = a.ts;
    }
    stretch_bytes += a.len;
  }
  stretches[n++] = Stretch{static_cast<uint32_t>(batch.size()), stretch_bytes};
  stretch_count_ = n;
  open_bytes_ += stretch_bytes;
  fifo_.setEnd(tail);
}

// Closes the open mark, whose last entry is at `last_ts`. The marks every plain scale has passed are forgotten only
// when the ring would otherwise grow. (Forgetting one too many costs no figure: a scale without its marks lets its
// entries leave one by one.)
void ExactWindows::closeMark(int64_t last_ts) {
  if (marks_.size() == marks_.capacity()) {
    uint64_t keep = marks_.end();
    for (int i : plain_) {
      Scale& s = scales_[i];
      while (s.mark < marks_.end() && marks_[s.mark].pos < s.first) ++s.mark;
      keep = std::min(keep, s.mark);
    }
    marks_.dropBefore(std::max(keep, marks_.begin()));
  }
  marks_.pushBack(Mark{open_pos_, open_bytes_, last_ts});
}

// Takes every entry at or before `limit` out of plain scale `s`'s window, whole marks where it can.
void ExactWindows::departTo(Scale& s, int64_t limit) {
  departMarks(s, s.first, s.sum, limit);
  while (s.first != fifo_.end() && fifo_[s.first].ts <= limit) s.sum -= fifo_[s.first++].bytes;
}

// The closed marks lie end to end up to the open one, so the mark after the last that leaves begins where it ends.
void ExactWindows::departMarks(Scale& s, uint64_t& first, uint64_t& sum, int64_t limit) {
  const uint64_t marks_end = marks_.end();
  uint64_t m = s.mark;  // at or after marks_.begin(): closeMark forgets only marks every plain scale has passed
  while (m < marks_end && marks_[m].pos < first) ++m;
  if (m < marks_end && first < marks_[m].pos) {
    // `first` is inside the mark before m: its rest leaves only if that whole mark does.
    if (fifo_[marks_[m].pos - 1].ts > limit) {
      s.mark = m;
      return;
    }
    while (first < marks_[m].pos) sum -= fifo_[first++].bytes;
  }
  if (m < marks_end && first == marks_[m].pos) {
    const uint64_t from = m;
    while (m < marks_end && marks_[m].last_ts <= limit) sum -= marks_[m++].bytes;
    marks_left_ += m - from;
    first = m < marks_end ? marks_[m].pos : open_pos_;
  }
  s.mark = m;
}

// The microburst scale: as a plain scale, except inside a microburst, where a departure's time may end it, and
// near the threshold, where an arrival may start one. Outside both, an arrival that cannot pass the maximum only
// adds to the bound; inside one, so does an arrival that can pass neither maximum (the interval's, the
// microburst's peak) while what is due to leave is known not to end it (the safe entries, below). The walks
// never pass the arrival (its own entry is in the FIFO, after them).
void ExactWindows::addMicroburstScale(std::span<const Arrival> batch) {
  Scale& s = scales_[mb_scale_];
  uint64_t first = s.first, sum = s.sum, max = s.max;
  const uint64_t threshold = mb_threshold_;
  const int64_t tau = s.tau;
  // The FIFO's slots in registers: the calls below (endBurst, startBurst) do not touch it, which the compiler
  // cannot see, and it reloaded them at every arrival.
  const Entry* const slots = fifo_.slots();
  const uint64_t mask = fifo_.mask();
  auto at = [&](uint64_t pos) -> const Entry& { return slots[pos & mask]; };
  // The open microburst's state in registers; the members are brought up to date around the rare calls.
  bool burst = in_burst_;
  uint64_t burst_bytes = cur_.bytes, peak = peak_sum_;
  auto end = [&](int64_t t) {
    cur_.bytes = burst_bytes;
    peak_sum_ = peak;
    endBurst(t);
    burst = false;
  };
  // A microburst left below the threshold by an interval's close (expireMicroburstScale) ended then, unless this
  // batch's first arrival is at that very time (it is judged with those departures, below).
  if (burst && sum < threshold && batch.front().ts > unjudged_end_ns_) end(unjudged_end_ns_);
  // Inside a microburst, the entries from `first` up to `safe` may leave unjudged: with `safe_bytes` their bytes,
  // safe_bytes + threshold <= sum held when they were marked, so the window just after any of them leaves holds at
  // least the threshold (the header says why). `sum` is the lazy one (departures that wait are still in it), but
  // their bytes are on both sides. An arrival that sets no maximum and finds nothing due to leave at or after
  // `safe` needs no walk: its departures wait, as a plain scale's do, and the walk comes once every few arrivals
  // instead of at each. A walk's departures leave the inequality as it was (both sides lose them).
  uint64_t safe = safe_pos_, safe_bytes = safe_bytes_;
  if (safe < first) {  // an interval's close, or catchUp at the FIFO's bound, took the window past them
    safe = first;
    safe_bytes = 0;
  }
  // Entries that may be marked safe: not the FIFO's last, to which the next batch's arrivals at its time add. (A
  // safeguard: with a threshold of a byte or more the marking stops before the arriving packet's entry anyway.)
  const uint64_t safe_cap = fifo_.end() - 1;
  uint64_t unwalked = 0;
  for (const Arrival& a : batch) {
    const uint64_t bound = sum + a.len;
    if (!burst) {
      if (bound <= max && bound < threshold) {
        sum = bound;
        continue;
      }
    } else if (bound <= peak && bound <= max && bound >= threshold) {
      // No maximum to set, and the microburst goes on if what is due to leave is safe to leave unjudged. (Where an
      // interval's close left the window below the threshold, `bound <= max` fails, max being that window, unless
      // the arrival has no bytes: `bound >= threshold` is for that.) More entries are marked safe only here, by
      // the window before this arrival: an entry not yet safe leaves after the last arrival (which walked what was
      // due then, or found it safe), so after everything in `sum`.
      if (at(safe).ts <= a.ts - tau) {
        while (safe < safe_cap && safe_bytes + at(safe).bytes + threshold <= sum) safe_bytes += at(safe++).bytes;
      }
      if (at(safe).ts > a.ts - tau) {
        sum = bound;
        burst_bytes += a.len;
        ++unwalked;
        continue;
      }
    }
    const uint64_t before = sum;
    const int64_t limit = a.ts - tau;
    while (burst && at(first).ts <= limit) {
      const Entry& e = at(first++);
      sum -= e.bytes;
      // A packet leaving exactly now is judged together with the arrival (S is right-continuous).
      if (sum < threshold && e.ts < limit) end(e.ts + tau);
    }
    while (at(first).ts <= limit) sum -= at(first++).bytes;
    if (first <= safe) {
      safe_bytes -= before - sum;  // what left was all safe
    } else {
      safe = first;
      safe_bytes = 0;
    }
    sum += a.len;
    if (burst) {
      if (sum < threshold) {
        end(a.ts);  // what left at a.ts took it below, and this arrival did not lift it back
      } else {
        burst_bytes += a.len;
        peak = sum > peak ? sum : peak;
      }
    } else if (sum >= threshold) {
      startBurst(a.ts, sum);
      burst = true;
      burst_bytes = cur_.bytes;  // the window's bytes when it began
      peak = sum;
    }
    if (sum > max) max = sum;
  }
  s.first = first;
  s.sum = sum;
  s.max = max;
  safe_pos_ = safe;
  safe_bytes_ = safe_bytes;
  unwalked_in_burst_ += unwalked;
  cur_.bytes = burst_bytes;
  peak_sum_ = peak;
}

// Lets the entries at or before `limit` leave the microburst scale's window, in time order. Only inside a
// microburst does a departure's time matter (the first that takes the window below the threshold ends it); the
// rest leave in a plain loop.
void ExactWindows::expireMicroburstScale(int64_t limit) {
  Scale& s = scales_[mb_scale_];
  uint64_t first = s.first, sum = s.sum;
  const uint64_t end = fifo_.end();
  // A microburst already below the threshold (an earlier close left it so, below) ended at that close's time,
  // which the next batch or finish() gives it: no later departure may end it again.
  const bool judging = in_burst_ && s.sum >= mb_threshold_;
  while (judging && in_burst_ && first != end && fifo_[first].ts <= limit) {
    const Entry& e = fifo_[first++];
    sum -= e.bytes;
    // A packet leaving exactly now is judged together with the arrival (S is right-continuous).
    if (e.ts < limit) depart(e.ts + s.tau, sum);
  }
  while (first != end && fifo_[first].ts <= limit) sum -= fifo_[first++].bytes;
  // What left exactly at `limit` is judged with an arrival at limit + τ, if one comes (addMicroburstScale); if it
  // took the window below, the microburst ends then unless that arrival lifts it back.
  if (judging && in_burst_ && sum < mb_threshold_) unjudged_end_ns_ = limit + s.tau;
  s.first = first;
  s.sum = sum;
}

void ExactWindows::closeInterval(int64_t next_start, std::vector<uint64_t>* out) {
  out->clear();
  for (Scale& s : scales_) out->push_back(s.max);
  // The window at the next interval's start, before any arrival there: (next_start - τ, next_start).
  for (int i : plain_) departTo(scales_[i], next_start - scales_[i].tau);
  if (mb_scale_ >= 0) expireMicroburstScale(next_start - scales_[mb_scale_].tau);
  for (Scale& s : scales_) {
    s.closed_max = std::max(s.closed_max, s.max);
    s.max = s.active ? s.sum : 0;  // a demoted scale no longer keeps its sum
  }
  if (!fifo_.empty()) fifo_.dropBefore(std::min(retainFrom(), fifo_.end()));
}

// The oldest entry some active scale still counts.
uint64_t ExactWindows::retainFrom() const {
  uint64_t from = fifo_.end() - 1;
  for (int i : plain_) from = std::min(from, scales_[i].first);
  if (mb_scale_ >= 0) from = std::min(from, scales_[mb_scale_].first);
  return from;
}

// Brings every lazy scale up to the arrival at `now`: their windows as they stand then (maxima unchanged).
void ExactWindows::catchUp(int64_t now) {
  for (int i : plain_) departTo(scales_[i], now - scales_[i].tau);
  if (mb_scale_ >= 0) expireMicroburstScale(now - scales_[mb_scale_].tau);
}

// Demotes the longest exact scale (never the microburst scale) until the FIFO has room again. The windows
// are first brought up to date, so that what is held is what they need, the same as if they never lagged.
void ExactWindows::makeRoom(int64_t now) {
  catchUp(now);
  fifo_.dropBefore(retainFrom());
  while (fifo_.size() >= max_entries_ && !plain_.empty()) {
    scales_[plain_.back()].active = false;
    plain_.pop_back();
    if (plain_.empty()) open_end_ = INT64_MAX;  // no more marks: nothing would read them
    fifo_.dropBefore(std::min(retainFrom(), fifo_.end()));
  }
}

void ExactWindows::depart(int64_t t, uint64_t sum_after) {
  if (in_burst_ && sum_after < mb_threshold_) endBurst(t);
}

void ExactWindows::endBurst(int64_t t) {
  in_burst_ = false;
  cur_.end_ns = t;
  cur_.peak_bps = static_cast<double>(peak_sum_) * mb_bps_per_byte_;  // the product is monotone in the sum
  MicroburstResult& r = *mb_result_;
  ++r.count;
  r.durations_s.observe(static_cast<double>(cur_.end_ns - cur_.start_ns) * 1e-9);
  r.volumes_bytes.observe(static_cast<double>(cur_.bytes));
  if (r.events.size() < mb_max_events_) {
    // Once the list fills its first kEventsInPlaceFrom, the room for the rest (up to kReservedEvents) is taken at
    // once: a doubling vector copied every event kept so far at each step, and its last step (16 to 32 MiB) held the
    // live worker for tens of milliseconds, long enough to overflow its ring (bench/README.md, issue 41's
    // twenty-third session). The room is address space only: its pages become resident a run at a time, just ahead of
    // the events written into them (populateEvents). Not from the start: a file's heap is on huge pages, where the
    // reserved room's first page would be 2 MiB resident for a handful of microbursts.
    // (Past kReservedEvents, where mb_max_events_ is larger, it doubles again.)
    const size_t n = r.events.size();
    if (n == r.events.capacity() && n >= kEventsInPlaceFrom && n < kReservedEvents) {
      r.events.reserve(std::min(mb_max_events_, kReservedEvents));
    }
    r.events.push_back(cur_);
    if (n >= kEventsInPlaceFrom && r.events.size() * sizeof(Microburst) + kPopulateRun / 2 >= populated_bytes_)
      populateEvents(r.events);
  }
  last_end_ns_ = t;
  if (observer_) observer_->onMicroburst(cur_);
}

// The next run of the kept events' room (kPopulateRun bytes, or a page where pages are larger) past what is resident,
// made resident in one call (MADV_POPULATE_WRITE, Linux 5.14). Called once the events come within half a run of the
// resident part's end, so the events written next find their pages resident; the writes never fall behind it, so at
// most a run and a half is resident ahead of them. Written one event at a time, each 4 KiB page (128 events) was a
// page fault of its own: most of the faults a worker took while its lists grew, each a costly trap on this
// project's VM (bench/README.md, issue 41). Not asked again where the kernel does not know the advice (EINVAL); a run
// it cannot populate (ENOMEM: a memory limit) faults page by page as before. A list larger than the room (more than
// kReservedEvents kept) is populated likewise once it has moved.
void ExactWindows::populateEvents(const std::vector<Microburst>& events) {
  static const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const auto base = reinterpret_cast<uintptr_t>(events.data());
  // From the page after the one the last event was written into (resident), or where the last run ended.
  const uintptr_t written = base + events.size() * sizeof(Microburst);
  const uintptr_t from = std::max((written + page - 1) & ~(page - 1), base + populated_bytes_);
  const uintptr_t room_end = (base + events.capacity() * sizeof(Microburst)) & ~(page - 1);
  const uintptr_t to = std::min(from + std::max(kPopulateRun, page), room_end);
  if (to <= from) {  // the room's last page, part of which the room holds: its events fault there as before
    populated_bytes_ = room_end - base + kPopulateRun;
    return;
  }
  if (::madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE) != 0 && errno == EINVAL) {
    populated_bytes_ = SIZE_MAX;
    return;
  }
  populated_bytes_ = to - base;
}

void ExactWindows::startBurst(int64_t t, uint64_t sum) {
  in_burst_ = true;
  if (mb_result_->count > 0) mb_result_->gaps_s.observe(static_cast<double>(t - last_end_ns_) * 1e-9);
  // Its bytes start with the traffic that formed it: the window's bytes when it began.
  cur_ = Microburst{t, 0, sum, 0};
  peak_sum_ = sum;
}

void ExactWindows::finish() {
  if (mb_scale_ < 0) return;
  Scale& s = scales_[mb_scale_];
  if (in_burst_ && s.sum < mb_threshold_) endBurst(unjudged_end_ns_);  // no arrival came at that time
  while (s.first != fifo_.end()) {
    const Entry& e = fifo_[s.first];
    s.sum -= e.bytes;
    depart(e.ts + s.tau, s.sum);
    ++s.first;
  }
}

}  // namespace burstscope::internal
