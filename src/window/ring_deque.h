// A growable FIFO addressed by absolute position, for sliding windows: several windows of different
// lengths share one buffer, each remembering the absolute position of its oldest element.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace burstscope::internal {

template <typename T>
class RingDeque {
 public:
  explicit RingDeque(size_t initial = 256) : buf_(std::bit_ceil(initial)) {}

  uint64_t begin() const { return head_; }  // absolute position of the oldest element
  uint64_t end() const { return tail_; }    // one past the newest
  size_t size() const { return tail_ - head_; }
  size_t capacity() const { return buf_.size(); }
  bool empty() const { return tail_ == head_; }
  T& operator[](uint64_t pos) { return buf_[pos & (buf_.size() - 1)]; }
  const T& operator[](uint64_t pos) const { return buf_[pos & (buf_.size() - 1)]; }
  T& back() { return (*this)[tail_ - 1]; }

  void pushBack(const T& v) {
    if (size() == buf_.size()) grow();
    (*this)[tail_++] = v;
  }
  // Forgets everything before absolute position `pos` (head <= pos <= end).
  void dropBefore(uint64_t pos) { head_ = pos; }

  // For appending in a loop of one's own: room for `n` elements, the slots (position p is slots()[p & mask()]),
  // and the new end once they are written.
  void reserve(size_t n) {
    while (buf_.size() < n) grow();
  }
  T* slots() { return buf_.data(); }
  uint64_t mask() const { return buf_.size() - 1; }
  void setEnd(uint64_t tail) { tail_ = tail; }

 private:
  void grow() {
    std::vector<T> bigger(buf_.size() * 2);
    const uint64_t mask = bigger.size() - 1;
    for (uint64_t p = head_; p != tail_; ++p) bigger[p & mask] = (*this)[p];
    buf_.swap(bigger);
  }

  std::vector<T> buf_;
  uint64_t head_ = 0;
  uint64_t tail_ = 0;
};

}  // namespace burstscope::internal
