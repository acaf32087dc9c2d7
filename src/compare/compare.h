// Comparing traces (docs/compare.md): each trace's key figures exactly as `analyze --json` gives them, a
// feature vector of its burst behaviour, and k-means clusters of the traces and of their top flows, with k
// chosen by the mean silhouette. Everything here works on analyze's JSON objects, so that the comparison
// can never disagree with what analyze says of one file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"

namespace burstscope {

// A row's features by name; nullopt where the figure is undefined for it (no period, PtM past the trace).
using NamedFeatures = std::vector<std::pair<std::string, std::optional<double>>>;

// A trace's features from its analyze JSON: log10 PtM(τ) per scale, and of its heaviest training job the
// duty cycle, log10 period and log10 bytes per step; log10 of the distinct flows; the top flow's byte share.
NamedFeatures traceFeatures(const nlohmann::ordered_json& analyze);
// A top flow's features (one element of analyze's flows.top): log10 PtM(τ) per scale from its windows, its
// share of the trace's bytes and log10 of its bytes. Empty when the flow held no window statistics.
NamedFeatures flowFeatures(const nlohmann::ordered_json& flow);

// Rows × features: the columns at least 3/4 of the rows define, then the rows that define all of them (what
// is left out is said), raw and normalised to z-scores (mean 0, standard deviation 1 over the rows; a
// constant column is all 0).
struct FeatureTable {
  std::vector<std::string> rows;
  std::vector<size_t> index;  // each row's position among the rows given
  std::vector<std::string> names;
  std::vector<std::string> dropped;  // "name: undefined for ROW"
  std::vector<std::vector<double>> raw;
  std::vector<std::vector<double>> z;
};
FeatureTable featureTable(const std::vector<std::string>& rows, const std::vector<NamedFeatures>& features);

struct Clustering {
  int k = 1;
  std::vector<int> assignment;          // per row, clusters numbered in order of their first row
  std::vector<double> silhouette_by_k;  // mean silhouette for k = 2, 3, ... (as far as tried)
  double silhouette = 0;                // of the chosen k; 0 for k = 1
  double inertia = 0;                   // sum of squared distances to the centroids, z units
  std::string why;                      // how k was chosen
};
// k-means (k-means++ seeding, Lloyd iterations, the best of several restarts) for k = 2 .. min(max_k, n-1);
// k is the one with the highest mean silhouette, or 1 when that is below 0.25 (no substantial structure,
// Kaufman and Rousseeuw) or there are fewer than 3 rows. Deterministic for a seed.
inline constexpr double kMinSilhouette = 0.25;
Clustering cluster(const std::vector<std::vector<double>>& z, int max_k, uint64_t seed);

struct CompareInput {
  std::string file;
  nlohmann::ordered_json analyze;  // as `analyze --json` prints it for this file alone
};
struct CompareOptions {
  int max_k = 8;
  uint64_t seed = 1;
};
// The whole comparison: per trace its key figures (copied from analyze's object), features and cluster;
// the feature tables and clusterings of traces and of top flows.
nlohmann::ordered_json compareJson(const std::vector<CompareInput>& inputs, const CompareOptions& o);
// A readable table of the same.
std::string compareText(const nlohmann::ordered_json& compare);
// CSV of one feature table ("trace_clusters" or "flow_clusters"): a row per trace or flow, its cluster and
// raw features.
std::string compareCsv(const nlohmann::ordered_json& compare, const char* which);

}  // namespace burstscope
