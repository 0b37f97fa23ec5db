#pragma once
/// Small inline SVG plots for the HTML report: no scripts, no network, text
/// readable at the page's 1280 px width. Every label is escaped here.
#include <cstdint>
#include <string>
#include <vector>

namespace sdpa {

struct Bar {
  std::string label;
  int64_t value = 0;
  std::string color;  // a CSS colour
};

/// Horizontal bars, the label left of each bar and its count right of it.
std::string svg_bar_chart(const std::vector<Bar>& bars);

/// A histogram: bar b counts bucket b; edge_labels[i] names the edge
/// between buckets i and i + 1; a dashed line marks the edge before bucket
/// `marker` (none when out of range), labelled `marker_label`.
struct Histogram {
  std::vector<int64_t> counts;
  std::vector<std::string> colors;  // per bucket
  std::vector<std::string> edge_labels;
  int marker = -1;
  std::string marker_label, x_title, title;
};
std::string svg_histogram(const Histogram& h);

/// Counts in a grid, cell colour on a log scale, the count written in each
/// non-empty cell; rows top to bottom, columns left to right.
struct Heatmap {
  std::vector<std::string> rows, cols;
  std::vector<std::vector<int64_t>> counts;  // [row][col]
  std::string row_title, col_title;
};
std::string svg_heatmap(const Heatmap& h);

/// The heatmap colour at t in [0, 1] (light to dark blue; below 0: empty,
/// grey), and whether text on it should be white.
std::string heat_color(double t);
bool heat_is_dark(double t);
/// Where `value` lies on a log scale from 0 to `max`: 0 for 1, 1 for max; -1 for 0.
double log_share(int64_t value, int64_t max);

}  // namespace sdpa
