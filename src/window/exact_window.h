// Packet-level sliding windows: for each τ, the bytes of packets in (t-τ, t] at every arrival t, and its
// maximum, which is E(τ) exactly. All scales share one FIFO of (timestamp, bytes) entries, equal timestamps
// merged. One scale may also run the microburst detector, which needs the exact times at which the window
// sum changes: a packet enters at its timestamp and leaves at timestamp + τ.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "burstscope/window.h"
#include "src/window/ring_deque.h"

namespace burstscope::internal {

// A packet as the port and direction streams see it.
struct Arrival {
  int64_t ts;
  uint32_t len;  // a frame's wire length (PacketRecord::wire_len); below 2^32, which the backlogs rely on
};

struct MicroburstSpec {
  int64_t tau_ns;
  uint64_t threshold_bytes;  // window bytes at or above which the link is in a microburst (microburstThresholdBytes)
  size_t max_events;
};

class ExactWindows {
 public:
  // The kept microbursts' list grows as a vector up to kEventsInPlaceFrom, then takes room up to kReservedEvents
  // (32 MiB of address space) at once and is written in place (endBurst).
  static constexpr size_t kEventsInPlaceFrom = 4096;
  static constexpr size_t kReservedEvents = size_t{1} << 20;
  // Bytes of that room made resident at once, a run, once the events come within half a run of its resident part
  // (populateEvents).
  static constexpr size_t kPopulateRun = size_t{64} << 10;

  // `taus_ns` ascending and distinct; `max_entries` bounds the shared FIFO (see EngineConfig).
  ExactWindows(std::vector<int64_t> taus_ns, size_t max_entries, std::optional<MicroburstSpec> mb);

  // Arrivals in time order (equal timestamps merged into one entry).
  void addBatch(std::span<const Arrival> batch);
  void finish();  // lets every packet leave its window, ending an open microburst
  // Ends a report interval at `next_start` (no packet at or after it added yet): returns through `out` each
  // scale's maximum of A(t-τ, t) over the interval, and starts the next interval's maximum with the window
  // as it stands at next_start (the packets still inside it), so that an interval's E(τ) is the maximum
  // over every t in it, not only over its arrivals.
  void closeInterval(int64_t next_start, std::vector<uint64_t>* out);

  int64_t tau(size_t i) const { return scales_[i].tau; }
  uint64_t maxBytes(size_t i) const { return std::max(scales_[i].max, scales_[i].closed_max); }
  bool exact(size_t i) const { return scales_[i].active; }
  const std::optional<MicroburstResult>& microbursts() const { return mb_result_; }
  // Arrivals inside a microburst that left their departures waiting (no output reads it; the tests do).
  uint64_t unwalkedInBurst() const { return unwalked_in_burst_; }
  // The plain scales' stretches passed without a walk, and marks that left whole (no output reads them; the tests do).
  uint64_t stretchesPassed() const { return stretches_passed_; }
  uint64_t marksLeft() const { return marks_left_; }
  // Told of every microburst as it ends (nullptr: nobody).
  void setObserver(EngineObserver* o) { observer_ = o; }

 private:
  struct Entry {
    int64_t ts;
    uint64_t bytes;
  };
  struct Scale {
    int64_t tau;
    uint64_t first = 0;  // absolute position of the oldest entry inside the window
    uint64_t sum = 0;
    uint64_t max = 0;         // over the current report interval (the whole run when there are none)
    uint64_t closed_max = 0;  // over the report intervals already closed
    uint64_t mark = 0;        // a position in marks_ at or before the first mark that begins at or after `first`
    bool active = true;       // false once demoted for memory: max is then only a lower bound
  };
  // A run of FIFO entries; the next begins at the first entry a stretch_ns_ or more after its first. A plain scale's
  // departures take whole marks at once where they can.
  struct Mark {
    uint64_t pos;    // its first entry
    uint64_t bytes;  // its entries' bytes
    int64_t last_ts;
  };

  void makeRoom(int64_t now);
  void catchUp(int64_t now);
  void expireMicroburstScale(int64_t limit);
  uint64_t retainFrom() const;
  void depart(int64_t t, uint64_t sum_after);
  void endBurst(int64_t t);
  void startBurst(int64_t t, uint64_t sum);
  void populateEvents(const std::vector<Microburst>& events);
  void addMicroburstScale(std::span<const Arrival> batch);
  void append(std::span<const Arrival> batch);
  void closeMark(int64_t last_ts);
  void openMark(uint64_t pos, int64_t ts) {  // at FIFO position `pos`, its first entry at `ts`
    open_pos_ = pos;
    open_bytes_ = 0;
    open_end_ = markEnd(ts);
  }
  // Takes out of scale `s`'s window what lies wholly at or before `limit` in whole marks (and the rest of the mark
  // `first` is in, when that mark is wholly out): cheap, and it leaves `sum` the window or more.
  void departMarks(Scale& s, uint64_t& first, uint64_t& sum, int64_t limit);
  void departTo(Scale& s, int64_t limit);

  // A batch's arrivals cut where its marks begin (so a stretch spans less than stretch_ns_).
  struct Stretch {
    uint32_t end;    // one past its last arrival in the batch (the next stretch's first)
    uint64_t bytes;  // its arrivals' bytes
  };
  static constexpr int64_t kStretchParts = 16;
  static constexpr size_t kMaxBatch = size_t{1} << 20;  // larger batches are taken in parts of this
  // Where the mark opened at `ts` ends: stretch_ns_ on, or never without plain scales (nothing reads marks then).
  int64_t markEnd(int64_t ts) const {
    int64_t end;
    if (plain_.empty() || __builtin_add_overflow(ts, stretch_ns_, &end)) return INT64_MAX;
    return end;
  }

  std::vector<Scale> scales_;
  std::vector<int> plain_;          // active scales other than the microburst one, ascending τ
  int64_t stretch_ns_ = 1;          // the shortest plain scale's τ over kStretchParts, at least 1 ns
  std::vector<Stretch> stretches_;  // scratch: the batch's stretches, in order, the first stretch_count_ of it
  size_t stretch_count_ = 0;
  RingDeque<Mark> marks_;         // the closed marks, in order, from about the one the most lagging plain scale is in
  uint64_t open_pos_ = 0;         // the open mark (after the closed ones, up to the FIFO's end): its first entry,
  uint64_t open_bytes_ = 0;       // its bytes,
  int64_t open_end_ = INT64_MIN;  // and the time from which an arrival starts a new mark
  RingDeque<Entry> fifo_;
  size_t max_entries_;
  int mb_scale_ = -1;
  // Microburst state.
  uint64_t mb_threshold_ = 0;   // ceil of the threshold in bytes: an integer sum is at or above it iff at or above that
  double mb_bps_per_byte_ = 0;  // 8e9 / τ: window bytes to bit/s
  size_t mb_max_events_ = 0;
  bool in_burst_ = false;
  Microburst cur_;         // the open microburst (its peak_bps set when it ends)
  uint64_t peak_sum_ = 0;  // the open microburst's largest window sum
  int64_t last_end_ns_ = 0;
  // Set when an interval's close leaves the open microburst's window below the threshold by departures at exactly
  // its limit: the time the microburst ends unless an arrival then lifts the window back.
  int64_t unjudged_end_ns_ = 0;
  // The microburst scale's FIFO entries from its `first` up to `safe_pos_` may leave its window unjudged: they
  // hold `safe_bytes_` (or less, once an interval's close has taken some out), and safe_bytes_ + threshold was at
  // most the scale's sum when they were marked (the lazy sum: departures that waited are in it, and in
  // safe_bytes_ too), every one of them still to leave after every arrival counted there. So the window just after
  // any of them leaves holds at least what arrived by then less safe_bytes_: the threshold or more. Arrivals only
  // raise the window; departures lower both sides alike. `safe_pos_` may fall behind `first` (an interval's
  // close, catchUp); the next batch starts it again there.
  uint64_t safe_pos_ = 0;
  uint64_t safe_bytes_ = 0;
  uint64_t unwalked_in_burst_ = 0;
  uint64_t stretches_passed_ = 0;
  uint64_t marks_left_ = 0;
  std::optional<MicroburstResult> mb_result_;
  // Bytes from the kept events' first that are resident or were asked to be (SIZE_MAX: the kernel refuses the advice).
  size_t populated_bytes_ = 0;
  EngineObserver* observer_ = nullptr;
};

}  // namespace burstscope::internal
