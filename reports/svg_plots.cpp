#include "reports/svg_plots.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "reports/markup.h"

namespace sdpa {
namespace {

constexpr double kCharWidth = 8.0;  // the widest of 12 px DejaVu Sans, for label room

std::string text(double x, double y, const std::string& s, const char* anchor, int size = 12,
                 const std::string& extra = "") {
  std::ostringstream o;
  o << "<text x=\"" << x << "\" y=\"" << y << "\" text-anchor=\"" << anchor << "\" font-size=\"" << size << "\""
    << (extra.empty() ? "" : " " + extra) << ">" << xml_escape(s) << "</text>";
  return o.str();
}

std::string open_svg(double width, double height) {
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" viewBox=\"0 0 " << width << " " << height << "\">";
  return o.str();
}

double label_width(const std::vector<std::string>& labels) {
  size_t longest = 0;
  for (const auto& l : labels) longest = std::max(longest, l.size());
  // At least 90 px, so that charts stacked in one column line up.
  return std::max(90.0, longest * kCharWidth + 10);
}

}  // namespace

std::string svg_bar_chart(const std::vector<Bar>& bars) {
  std::vector<std::string> labels;
  int64_t max = 1;
  for (const auto& b : bars) labels.push_back(b.label), max = std::max(max, b.value);
  const double left = label_width(labels), plot = 380, row = 20;
  const double width = left + plot + 60, height = bars.size() * row + 6;
  std::ostringstream o;
  o << open_svg(width, height);
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    double y = 3 + i * row;
    double w = b.value > 0 ? std::max(1.0, plot * b.value / max) : 0;
    o << text(left - 6, y + 14, b.label, "end");
    o << "<rect x=\"" << left << "\" y=\"" << y + 2 << "\" width=\"" << w << "\" height=\"" << row - 4
      << "\" fill=\"" << b.color << "\"><title>" << xml_escape(b.label) << ": " << b.value << "</title></rect>";
    o << text(left + w + 4, y + 14, std::to_string(b.value), "start");
  }
  o << "</svg>";
  return o.str();
}

std::string svg_histogram(const Histogram& h) {
  const double left = 52, right = 12, top = 28, plot_h = 150, bar_w = 40, bottom = 58;
  const size_t n = h.counts.size();
  const double width = left + n * bar_w + right, height = top + plot_h + bottom;
  int64_t max = 1;
  for (int64_t c : h.counts) max = std::max(max, c);
  // The tallest bar stops short of the top, leaving room for its count.
  const double bar_room = plot_h - 14;
  std::ostringstream o;
  o << open_svg(width, height);
  o << text(left, 16, h.title, "start", 13, "font-weight=\"bold\"");
  // y axis: gridlines at 0, max/2, max.
  for (int k = 0; k <= 2; ++k) {
    double y = top + plot_h - bar_room * k / 2;
    o << "<line x1=\"" << left << "\" x2=\"" << width - right << "\" y1=\"" << y << "\" y2=\"" << y
      << "\" stroke=\"#ddd\"/>";
    o << text(left - 5, y + 4, std::to_string(max * k / 2), "end", 10);
  }
  for (size_t b = 0; b < n; ++b) {
    double x = left + b * bar_w, hgt = h.counts[b] > 0 ? std::max(1.0, bar_room * h.counts[b] / max) : 0;
    double y = top + plot_h - hgt;
    o << "<rect x=\"" << x + 3 << "\" y=\"" << y << "\" width=\"" << bar_w - 6 << "\" height=\"" << hgt
      << "\" fill=\"" << (b < h.colors.size() ? h.colors[b] : "#4c78a8") << "\"><title>" << h.counts[b]
      << "</title></rect>";
    if (h.counts[b] > 0) o << text(x + bar_w / 2, y - 3, std::to_string(h.counts[b]), "middle", 10);
  }
  o << "<line x1=\"" << left << "\" x2=\"" << width - right << "\" y1=\"" << top + plot_h << "\" y2=\""
    << top + plot_h << "\" stroke=\"#333\"/>";
  // Edge labels rotated so that neighbours never overlap.
  for (size_t i = 0; i < h.edge_labels.size() && i + 1 < n; ++i) {
    double x = left + (i + 1) * bar_w, y = top + plot_h;
    o << "<line x1=\"" << x << "\" x2=\"" << x << "\" y1=\"" << y << "\" y2=\"" << y + 4 << "\" stroke=\"#333\"/>";
    std::ostringstream rot;
    rot << "transform=\"rotate(-40 " << x << " " << y + 14 << ")\"";
    o << text(x, y + 14, h.edge_labels[i], "end", 10, rot.str());
  }
  if (h.marker > 0 && h.marker < static_cast<int>(n)) {
    double x = left + h.marker * bar_w;
    o << "<line x1=\"" << x << "\" x2=\"" << x << "\" y1=\"" << top - 4 << "\" y2=\"" << top + plot_h
      << "\" stroke=\"#c0392b\" stroke-dasharray=\"4 3\" stroke-width=\"1.5\"/>";
    o << text(x + 3, top + 6, h.marker_label, "start", 10, "fill=\"#c0392b\"");
  }
  o << text(left + n * bar_w / 2, height - 4, h.x_title, "middle", 11);
  o << "</svg>";
  return o.str();
}

std::string heat_color(double t) {
  if (t < 0) return "#f4f4f4";
  t = std::min(t, 1.0);
  // From #deebf7 (t = 0) to #08306b (t = 1).
  auto mix = [t](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * t)); };
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", mix(0xde, 0x08), mix(0xeb, 0x30), mix(0xf7, 0x6b));
  return buf;
}

bool heat_is_dark(double t) { return t > 0.5; }

double log_share(int64_t value, int64_t max) {
  if (value <= 0) return -1;
  if (max <= 1) return 1;
  return std::log(static_cast<double>(value)) / std::log(static_cast<double>(max));
}

std::string svg_heatmap(const Heatmap& h) {
  const double cell_w = 52, cell_h = 26;
  const double left = std::max(label_width(h.rows), 40.0) + 22, top = 58;
  const double width = left + h.cols.size() * cell_w + 10, height = top + h.rows.size() * cell_h + 10;
  int64_t max = 1;
  for (const auto& row : h.counts)
    for (int64_t v : row) max = std::max(max, v);
  std::ostringstream o;
  o << open_svg(width, height);
  o << text(left + h.cols.size() * cell_w / 2, 14, h.col_title, "middle", 12, "font-weight=\"bold\"");
  std::ostringstream rot;
  rot << "transform=\"rotate(-90 12 " << top + h.rows.size() * cell_h / 2 << ")\"";
  o << text(12, top + h.rows.size() * cell_h / 2, h.row_title, "middle", 12, "font-weight=\"bold\" " + rot.str());
  for (size_t c = 0; c < h.cols.size(); ++c)
    o << text(left + c * cell_w + cell_w / 2, top - 8, h.cols[c], "middle", 11);
  for (size_t r = 0; r < h.rows.size(); ++r) {
    double y = top + r * cell_h;
    o << text(left - 6, y + cell_h / 2 + 4, h.rows[r], "end", 11);
    for (size_t c = 0; c < h.cols.size(); ++c) {
      int64_t v = h.counts[r][c];
      double x = left + c * cell_w, t = log_share(v, max);
      o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << cell_w - 1 << "\" height=\"" << cell_h - 1
        << "\" fill=\"" << heat_color(t) << "\"><title>" << xml_escape(h.row_title + " " + h.rows[r] + ", " +
                                                                            h.col_title + " " + h.cols[c])
        << ": " << v << "</title></rect>";
      if (v > 0)
        o << text(x + cell_w / 2, y + cell_h / 2 + 4, std::to_string(v), "middle", 11,
                  heat_is_dark(t) ? "fill=\"#fff\"" : "fill=\"#111\"");
    }
  }
  o << "</svg>";
  return o.str();
}

}  // namespace sdpa
