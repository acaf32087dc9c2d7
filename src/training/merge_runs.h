// A sort of sorted runs by merging them (the training analysis' bins, a flow's run after another's).
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace burstscope::training {

// Sorts `v`, made of runs that begin at runs[0], runs[1], ... (runs.back() == v.size()), each ascending as a
// flow's bins do (TrainingFlowBins), by merging the runs pairwise: n·log(runs) moves instead of a sort's n·log(n)
// (a file's analysis takes all of its bins at once). Runs that do not ascend, or of fewer than two elements on
// average, are sorted whole (the same order up to elements equal to `less`). `runs` is spent.
template <typename T, typename Less>
void mergeRuns(std::vector<T>* v, std::vector<size_t>* runs, Less less) {
  if (2 * runs->size() > v->size() + 2) {  // runs of a bin or two on average: a sort is the cheaper
    std::sort(v->begin(), v->end(), less);
    return;
  }
  for (size_t r = 0; r + 1 < runs->size(); ++r) {
    if (!std::is_sorted(v->begin() + static_cast<ptrdiff_t>((*runs)[r]),
                        v->begin() + static_cast<ptrdiff_t>((*runs)[r + 1]), less)) {
      std::sort(v->begin(), v->end(), less);
      return;
    }
  }
  auto at = [&](size_t i) { return v->begin() + static_cast<ptrdiff_t>(i); };
  while (runs->size() > 2) {
    size_t w = 0, r = 0;
    for (; r + 2 < runs->size(); r += 2) {
      std::inplace_merge(at((*runs)[r]), at((*runs)[r + 1]), at((*runs)[r + 2]), less);
      (*runs)[w++] = (*runs)[r];
    }
    if (r + 1 < runs->size()) (*runs)[w++] = (*runs)[r];  // an odd run, merged in the next round
    (*runs)[w++] = runs->back();
    runs->resize(w);
  }
}

}  // namespace burstscope::training
