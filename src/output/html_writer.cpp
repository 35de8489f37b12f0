// The HTML report: one self-contained page. Every chart is SVG drawn here
// from the records; the page loads nothing (no scripts, fonts, images or
// links), so it can be mailed, archived and opened offline.

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fabricbench/analysis/headline.hpp"
#include "fabricbench/analysis/topology_analysis.hpp"
#include "fabricbench/core/sizes.hpp"
#include "fabricbench/core/text.hpp"
#include "fabricbench/output/file_writers.hpp"
#include "fabricbench/output/sections.hpp"
#include "fabricbench/output/topology_summary.hpp"

namespace fabricbench {
namespace {

std::string esc(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

const char* palette(std::size_t i) {
  static const char* colors[] = {"#1f6fb4", "#d9731a", "#2e9a48", "#c23b3b",
                                 "#7d5ab5", "#8a5a44", "#c4569c", "#6b6b6b"};
  return colors[i % 8];
}

std::string level_class(Level l) {
  switch (l) {
    case Level::ok:
      return "ok";
    case Level::warn:
      return "warn";
    case Level::fail:
      return "fail";
    case Level::info:
      return "info";
  }
  return "info";
}

// Four significant digits, never an exponent: 12730, not 1.273e+04.
std::string num(double v) { return std::abs(v) >= 1000 ? fmt::format("{:.0f}", v) : fmt::format("{:.4g}", v); }

// A figure with its unit, times above 1000 us in ms: "12.73 ms", "4.5 us".
std::string figure_text(double v, std::string_view unit) {
  if (unit == "us" && v >= 1000) return fmt::format("{:.4g} ms", v / 1000);
  return fmt::format("{} {}", num(v), unit);
}

constexpr const char* style =
    R"(body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:32px}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f2f2f2}td.l,th.l{text-align:left}.verdict{border:2px solid;border-radius:6px;padding:8px 14px;margin:12px 0}
.verdict.ok{border-color:#2e9a48;background:#eef8f0}.verdict.warn{border-color:#d9a21a;background:#fdf7e6}
.verdict.fail{border-color:#c23b3b;background:#fbeeee}.verdict.info{border-color:#888;background:#f6f6f6}
.badge{display:inline-block;min-width:42px;text-align:center;border-radius:4px;padding:1px 6px;font-weight:bold;color:#fff}
.badge.ok{background:#2e9a48}.badge.warn{background:#c68d00}.badge.fail{background:#c23b3b}.badge.info{background:#888}
.src{color:#555;font-size:12px}figure{margin:14px 0;max-width:100%}figcaption{font-size:12px;color:#555;overflow-wrap:anywhere}
svg{display:block;max-width:100%;height:auto}svg text{font-family:inherit}
.chart-title{font-size:14px;font-weight:bold;margin:0 0 4px}
.legend{list-style:none;padding:0;margin:4px 0;font-size:12px;overflow-wrap:anywhere}
.legend li{display:inline-block;margin-right:16px}
.swatch{display:inline-block;width:18px;height:0;border-top:3px solid;vertical-align:middle;margin-right:6px}
.swatch.in_place{border-top-style:dashed}.swatch.bar{height:10px;border-top:0}
.table-wrap{overflow-x:auto;max-width:100%}
figure.heatmap{display:inline-block;vertical-align:top;margin-right:28px}
tr.differs td{background:#fff3d6}.muted{color:#777})";

// A byte count held as a double (2^64 is not a size_t), for a label.
std::string size_label(double bytes) {
  if (!(bytes >= 0)) return "?";
  if (bytes >= 18446744073709551615.0) return format_size(std::numeric_limits<std::size_t>::max());
  // Rounded below 2^63, where llround is defined: a size from log2 and back
  // may come out a hair under the power of two it is.
  return format_size(bytes < 9.2e18 ? static_cast<std::size_t>(std::llround(bytes)) : static_cast<std::size_t>(bytes));
}

// Round tick values for an axis from 0 to at least `top`: steps of 1, 2 or 5
// times a power of ten, about five of them.
std::vector<double> nice_ticks(double top) {
  if (!(top > 0)) top = 1;
  // A figure near the largest double (a hostile or broken file) still draws:
  // the ticks' arithmetic stays finite.
  top = std::min(top, std::numeric_limits<double>::max() / 16);
  const double raw = top / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (const double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  for (int k = 0;; ++k) {
    ticks.push_back(step * k);
    if (step * k >= top) break;
  }
  return ticks;
}

std::string tick_text(double v) { return fmt::format("{:g}", v); }

// The height of v on an axis from 0 to top drawn from bottom up to y_top,
// kept inside the plot: a figure beyond the axis (one near the largest
// double, from a hostile or broken file) sits on its edge, never at an
// infinite or undefined coordinate.
double plot_y(double v, double top, int y_top, int bottom) {
  const double share = top > 0 ? v / top : 0.0;
  return bottom - std::clamp(std::isnan(share) ? 0.0 : share, 0.0, 1.0) * (bottom - y_top);
}

// A y axis with round ticks and grid lines; returns the axis top.
double y_axis(double ymax, int left, int right, int top, int bottom, std::ostream& out) {
  const std::vector<double> ticks = nice_ticks(ymax);
  const double ytop = ticks.back();
  for (const double t : ticks) {
    const double y = bottom - t / ytop * (bottom - top);
    out << fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e4e4e4\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" font-size=\"10\" text-anchor=\"end\">{5}</text>\n",
        left, y, right, left - 4, y + 3, tick_text(t));
  }
  return ytop;
}

void axis_titles(const std::string& x_title, const std::string& y_title, int left, int right, int top, int bottom,
                 int height, std::ostream& out) {
  out << fmt::format("<text class=\"axis-title\" x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n",
                     (left + right) / 2, height - 6, esc(x_title));
  out << fmt::format(
      "<text class=\"axis-title\" x=\"12\" y=\"{0}\" font-size=\"11\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 12 {0})\">{1}</text>\n",
      (top + bottom) / 2, esc(y_title));
}

// What NCCL chose per measured point, and what each NIC carried in a
// multi-node all-reduce; a run whose library does not say gets its reason once.
void algorithm_section(const Report& report, std::ostream& out) {
  // On the host transport the MPI library's choice is not visible: such a
  // run has nothing here unless the NIC wire rate was worked out.
  const auto shown = [](const ReportRun& run) {
    return std::any_of(run.result.records.begin(), run.result.records.end(), [&run](const SweepRecord& r) {
      return r.nic_wire.has_value() || (r.choice && (r.choice->algorithm || run.result.run.transport != "mpi"));
    });
  };
  if (std::none_of(report.runs.begin(), report.runs.end(), shown)) return;
  out << "<section id=\"algorithm\">\n<h2>What NCCL chose</h2>\n";
  for (const ReportRun& run : report.runs) {
    if (!shown(run)) continue;
    std::vector<const SweepRecord*> rows;
    std::string note;
    for (const SweepRecord& r : run.result.records) {
      if (!r.timing) continue;
      if ((r.choice && r.choice->algorithm) || r.nic_wire)
        rows.push_back(&r);
      else if (r.choice && note.empty())
        note = r.choice->note;
    }
    out << "<h3>" << esc(run.path) << "</h3>\n";
    if (rows.empty()) {
      out << "<p>" << esc(note.empty() ? "not recorded" : note) << "</p>\n";
      continue;
    }
    out << "<div class=\"table-wrap\"><table><tr><th class=\"l\">op</th><th>dtype</th><th>placement</th>"
           "<th>size</th><th>busbw (GB/s)</th><th class=\"l\">algorithm</th><th class=\"l\">protocol</th>"
           "<th>NIC wire (GB/s)</th></tr>\n";
    for (const SweepRecord* r : rows) {
      const std::string algorithm =
          r->choice && r->choice->algorithm ? *r->choice->algorithm : (r->choice ? r->choice->note : "-");
      const std::string protocol = r->choice && r->choice->protocol ? *r->choice->protocol : "-";
      std::string wire = "-";
      if (r->nic_wire)
        wire = r->nic_wire->gbs
                   ? fmt::format("{}{} ({}, {} NICs per node)", r->nic_wire->basis == "lower_bound" ? "≥ " : "",
                                 num(*r->nic_wire->gbs), r->nic_wire->basis, r->nic_wire->nics_per_node)
                   : r->nic_wire->basis;
      out << fmt::format(
          "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td>"
          "<td class=\"l\">{}</td><td>{}</td></tr>\n",
          name(r->op), name(r->dtype), name(r->placement), esc(format_size(r->bytes)), num(r->timing->busbw_gbs),
          esc(algorithm), esc(protocol), esc(wire));
    }
    out << "</table></div>\n";
    if (!note.empty()) out << "<p>Other points: " << esc(note) << "</p>\n";
  }
  out << "<p>NIC wire: the rate each NIC carried each way, from busbw (README, NIC wire rate); ≥ marks the "
         "all-reduce lower bound, used where NCCL's algorithm is a tree or unknown.</p>\n</section>\n";
}

// A line chart of busbw against message size, log2 x axis; both placements
// (in-place dashed), error bars from the lowest to the highest run.
void busbw_chart(const Report& report, const BusbwChart& chart, std::ostream& out) {
  double xmin = 1e300, xmax = 0, ymax = 0;
  bool spread = false;
  for (const ChartSeries& s : chart.series)
    for (const ChartPoint& p : s.points) {
      xmin = std::min(xmin, static_cast<double>(p.bytes));
      xmax = std::max(xmax, static_cast<double>(p.bytes));
      ymax = std::max(ymax, p.busbw.max);
      spread = spread || p.busbw.runs > 1;
    }
  if (chart.series.empty()) return;
  const double lx0 = std::log2(xmin), lx1 = std::max(lx0 + 1, std::log2(xmax));
  const int W = 720, H = 320, L = 62, R = 44, T = 14, B = 46;
  const auto px = [&](double x) { return L + (std::log2(x) - lx0) / (lx1 - lx0) * (W - L - R); };
  out << fmt::format(
      "<figure class=\"chart busbw-chart\" id=\"busbw-{0}\"><div class=\"chart-title\">{0}: bus bandwidth against "
      "message size</div>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{1}\" height=\"{2}\" viewBox=\"0 0 {1} "
      "{2}\" role=\"img\" aria-label=\"{0} busbw against message size\">\n",
      name(chart.op), W, H);
  out << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n", L, T,
                     W - L - R, H - T - B);
  const double ytop = y_axis(ymax * 1.05, L, W - R, T, H - B, out);
  const auto py = [&](double y) { return plot_y(y, ytop, T, H - B); };
  // Size ticks at powers of two, at most about eight; the last size always
  // labelled (a tick too close before it gives way).
  const int span = static_cast<int>(std::ceil(lx1 - lx0));
  const int step = std::max(1, (span + 7) / 8);
  std::vector<double> ticks;
  for (double e = std::ceil(lx0); e <= lx1 + 1e-9; e += step) ticks.push_back(e);
  while (!ticks.empty() && lx1 - ticks.back() < 0.6 * step && std::fabs(ticks.back() - lx1) > 1e-9) ticks.pop_back();
  if (ticks.empty() || std::fabs(ticks.back() - lx1) > 1e-9) ticks.push_back(lx1);
  for (const double e : ticks) {
    const double x = L + (e - lx0) / (lx1 - lx0) * (W - L - R);
    out << fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e4e4e4\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" font-size=\"10\" text-anchor=\"middle\">{4}</text>\n",
        x, T, H - B, H - B + 14, esc(size_label(std::exp2(e))));
  }
  axis_titles("message size (log scale)", "busbw (GB/s)", L, W - R, T, H - B, H, out);
  for (const ChartSeries& s : chart.series) {
    const char* color = palette(s.group);
    const char* dash = s.placement == Placement::in_place ? " stroke-dasharray=\"6 4\"" : "";
    std::string pts;
    for (const ChartPoint& p : s.points)
      pts += fmt::format("{:.1f},{:.1f} ", px(static_cast<double>(p.bytes)), py(p.busbw.mean));
    out << fmt::format("<polyline class=\"series\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{} points=\"{}\"/>\n",
                       color, dash, pts);
    for (const ChartPoint& p : s.points) {
      const double x = px(static_cast<double>(p.bytes));
      if (p.busbw.runs > 1)
        out << fmt::format(
            "<path class=\"error-bar\" d=\"M{0:.1f},{1:.1f}V{2:.1f}M{3:.1f},{1:.1f}H{4:.1f}M{3:.1f},{2:.1f}H{4:.1f}\" "
            "stroke=\"{5}\" fill=\"none\"/>\n",
            x, py(p.busbw.min), py(p.busbw.max), x - 3, x + 3, color);
      out << fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{} {}: {} GB/s{}</title></circle>\n", x,
          py(p.busbw.mean), color, esc(format_size(p.bytes)), name(s.placement), num(p.busbw.mean),
          p.busbw.runs > 1 ? fmt::format(" (mean of {} runs, {}–{})", p.busbw.runs, num(p.busbw.min), num(p.busbw.max))
                           : "");
    }
  }
  out << "</svg>\n<ul class=\"legend\">\n";
  for (const ChartSeries& s : chart.series)
    out << fmt::format("<li><span class=\"swatch {}\" style=\"border-color:{}\"></span>{}, {}</li>\n",
                       name(s.placement), palette(s.group), esc(s.label), name(s.placement));
  out << "</ul>\n";
  out << fmt::format(
      "<figcaption>{}: busbw per message size; solid out-of-place, dashed in-place{}</figcaption></figure>\n",
      name(chart.op),
      spread ? "; a point is the mean over the group's runs, its bar spans the lowest to the highest run"
      : report.runs.size() > 1 ? "; one run per group"
                               : "");
}

// Bars of median busbw per ladder level, one colour per op.
void ladder_chart(const Report& report, const LadderChart& chart, std::ostream& out) {
  if (chart.levels.empty()) return;
  const ReportRun& run = report.runs[chart.run];
  double ymax = 0;
  for (const LadderBar& b : chart.bars) ymax = std::max(ymax, b.busbw_median_gbs);
  const int W = 720, L = 62, R = 20, T = 14;
  const double slot = static_cast<double>(W - L - R) / static_cast<double>(chart.levels.size());
  const double bar = slot * 0.8 / static_cast<double>(chart.ops.size());
  // A label wider than its slot is set on a slant so neighbours never overlap.
  std::size_t longest = 0;
  for (const std::string& l : chart.levels) longest = std::max(longest, l.size());
  const bool slant = static_cast<double>(longest) * 6.2 > slot - 4;
  const int B = slant ? 40 + static_cast<int>(static_cast<double>(longest) * 2.7) : 44;
  const int H = 236 + B;
  out << fmt::format(
      "<figure class=\"chart ladder-chart\" id=\"ladder-{0}\"><div class=\"chart-title\">Scaling ladder at {1}: median "
      "busbw per level</div>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{2}\" height=\"{3}\" viewBox=\"0 0 {2} "
      "{3}\" role=\"img\" aria-label=\"scaling ladder\">\n",
      chart.run, esc(format_size(chart.bytes)), W, H);
  out << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n", L, T,
                     W - L - R, H - T - B);
  const double ytop = y_axis(ymax * 1.12, L, W - R, T, H - B, out);
  const auto py = [&](double y) { return plot_y(y, ytop, T, H - B); };
  for (std::size_t i = 0; i < chart.levels.size(); ++i) {
    const double x = L + slot * (static_cast<double>(i) + 0.5);
    if (slant)
      out << fmt::format(
          "<text x=\"{0:.1f}\" y=\"{1}\" font-size=\"10\" text-anchor=\"end\" transform=\"rotate(-25 {0:.1f} {1})\">"
          "{2}</text>\n",
          x, H - B + 14, esc(chart.levels[i]));
    else
      out << fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n", x,
                         H - B + 16, esc(chart.levels[i]));
  }
  axis_titles("ladder level (nodes per group; rail: one rank per node)", "median busbw (GB/s)", L, W - R, T, H - B, H,
              out);
  for (const LadderBar& b : chart.bars) {
    const auto oi = static_cast<std::size_t>(std::find(chart.ops.begin(), chart.ops.end(), b.op) - chart.ops.begin());
    const double x = L + slot * static_cast<double>(b.level) + slot * 0.1 + bar * static_cast<double>(oi);
    const double y = py(b.busbw_median_gbs);
    out << fmt::format(
        "<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\">"
        "<title>{} {}: {} GB/s</title></rect>\n",
        x, y, bar * 0.95, H - B - y, palette(oi), name(b.op), esc(chart.levels[b.level]), num(b.busbw_median_gbs));
    if (b.efficiency)
      out << fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"middle\">{:.0f}%</text>\n",
                         x + bar * 0.475, y - 3, *b.efficiency * 100);
  }
  out << "</svg>\n<ul class=\"legend\">\n";
  for (std::size_t o = 0; o < chart.ops.size(); ++o)
    out << fmt::format("<li><span class=\"swatch bar\" style=\"background:{}\"></span>{}</li>\n", palette(o),
                       name(chart.ops[o]));
  out << "</ul>\n";
  out << fmt::format(
      "<figcaption>{}: median busbw over each level's groups (GB/s); % above a bar: efficiency against 1 "
      "node</figcaption></figure>\n",
      esc(run.path));
}

// The GPU-count ladder of one run: its levels as a table, and one chart of
// job time (or step time without --steps) and cost per job against the GPU
// count, on the closest (or only) set of each count; the cost on its own
// axis at the right.
void gpu_ladder_section(const ReportRun& run, std::size_t index, std::ostream& out) {
  const GpuLadderResult& g = *run.result.gpu_ladder;
  out << fmt::format("<h3>{}</h3>\n<p>{} GPUs per node; {}.</p>\n", esc(run.path), g.gpus_per_node,
                     g.from_topology ? "sets from the GPU link matrix" : esc(g.note));
  out << "<table class=\"gpu-ladder\"><tr><th class=\"l\">op</th><th>size</th><th>GPUs</th><th class=\"l\">set</th>"
         "<th class=\"l\">path</th><th>busbw median (GB/s)</th><th>efficiency vs pair</th></tr>\n";
  for (const GpuLevelResult& l : g.levels)
    out << fmt::format(
        "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{:.3f}"
        "</td><td>{}</td></tr>\n",
        name(l.op), esc(format_size(l.bytes)), l.gpus, name(l.choice), esc(l.path), l.busbw_median_gbs,
        l.efficiency ? fmt::format("{:.0f}%", *l.efficiency * 100) : "-");
  out << "</table>\n";
  struct Point {
    int gpus;
    double time;
    std::optional<double> cost;
  };
  std::vector<Point> points;
  for (const GpuProjectionPoint& p : g.projection) {
    if (p.choice == GpuSetChoice::spread) continue;
    std::optional<double> cost = p.cost_per_job;
    for (const ServerCost& s : g.servers)
      if (s.gpus == p.gpus) cost = s.cost_per_job;
    if (!g.servers.empty() &&
        std::none_of(g.servers.begin(), g.servers.end(), [&p](const ServerCost& s) { return s.gpus == p.gpus; }))
      cost.reset();
    points.push_back({p.gpus, p.job_hours.value_or(p.step_ms), cost});
  }
  if (points.empty()) return;
  const bool hours = g.steps.has_value();
  double tmax = 0;
  double cmax = 0;
  bool any_cost = false;
  for (const Point& p : points) {
    tmax = std::max(tmax, p.time);
    if (p.cost) {
      cmax = std::max(cmax, *p.cost);
      any_cost = true;
    }
  }
  const int W = 720, L = 62, R = any_cost ? 62 : 20, T = 14, B = 44, H = 280;
  out << fmt::format(
      "<figure class=\"chart gpu-ladder-chart\" id=\"gpu-ladder-{0}\"><div class=\"chart-title\">{1}{2} against "
      "GPU count</div>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{3}\" height=\"{4}\" viewBox=\"0 0 {3} "
      "{4}\" role=\"img\" aria-label=\"job time and cost per job against GPU count\">\n",
      index, hours ? "Job time" : "Step time", any_cost ? " and cost per job" : "", W, H);
  out << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n", L, T,
                     W - L - R, H - T - B);
  const double ttop = y_axis(tmax * 1.12, L, W - R, T, H - B, out);
  double ctop = 1;
  if (any_cost) {
    const std::vector<double> ticks = nice_ticks(cmax * 1.12);
    ctop = ticks.back();
    for (const double t : ticks)
      out << fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"10\" fill=\"{}\">{}</text>\n", W - R + 4,
                         plot_y(t, ctop, T, H - B) + 3, palette(1), tick_text(t));
    out << fmt::format(
        "<text class=\"axis-title\" x=\"{0}\" y=\"{1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"{2}\" "
        "transform=\"rotate(90 {0} {1})\">cost per job</text>\n",
        W - 8, (T + H - B) / 2, palette(1));
  }
  const double slot = static_cast<double>(W - L - R) / static_cast<double>(points.size());
  const auto px = [&](std::size_t i) { return L + slot * (static_cast<double>(i) + 0.5); };
  const auto py = [&](double v, double top) { return plot_y(v, top, T, H - B); };
  for (std::size_t i = 0; i < points.size(); ++i)
    out << fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n", px(i),
                       H - B + 16, points[i].gpus);
  axis_titles("GPUs (the closest set of each count)", hours ? "job time (h)" : "step time (ms)", L, W - R, T, H - B, H,
              out);
  std::string line;
  for (std::size_t i = 0; i < points.size(); ++i)
    line += fmt::format("{}{:.1f},{:.1f}", i == 0 ? "" : " ", px(i), py(points[i].time, ttop));
  out << fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", palette(0), line);
  for (std::size_t i = 0; i < points.size(); ++i) {
    out << fmt::format(
        "<circle class=\"time\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"><title>{} GPUs: {} {}</title>"
        "</circle>\n",
        px(i), py(points[i].time, ttop), palette(0), points[i].gpus, num(points[i].time), hours ? "h" : "ms");
    if (!points[i].cost) continue;
    const double y = py(*points[i].cost, ctop);
    out << fmt::format(
        "<rect class=\"cost\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"8\" height=\"8\" fill=\"{}\"><title>{} GPUs: {} per "
        "job</title></rect>\n",
        px(i) - 4, y - 4, palette(1), points[i].gpus, num(*points[i].cost));
  }
  out << "</svg>\n<ul class=\"legend\">\n";
  out << fmt::format("<li><span class=\"swatch\" style=\"background:{}\"></span>{}</li>\n", palette(0),
                     hours ? fmt::format("job time for {} steps (h)", *g.steps) : std::string("step time (ms)"));
  if (any_cost)
    out << fmt::format("<li><span class=\"swatch bar\" style=\"background:{}\"></span>cost per job{}</li>\n",
                       palette(1),
                       g.servers.empty() ? " (GPUs x price per GPU-hour)" : " (the server's price per hour)");
  out << "</ul>\n<figcaption>";
  if (g.cheapest_gpus) out << fmt::format("Cheapest per job: {} GPUs. ", *g.cheapest_gpus);
  if (g.fastest_gpus) out << fmt::format("Fastest: {} GPUs.", *g.fastest_gpus);
  out << "</figcaption></figure>\n";
}

// Red (bad) through yellow to green (at the median or better).
std::string heat_colour(double rel) {
  rel = std::clamp(rel, 0.0, 1.0);
  const int red = rel < 0.5 ? 220 : static_cast<int>(220 - (rel - 0.5) * 2 * 174);
  const int green = rel < 0.5 ? static_cast<int>(60 + rel * 2 * 120) : static_cast<int>(180 - (1 - rel) * 40);
  return fmt::format("rgb({},{},80)", red, green);
}

// A heat-map of a pair matrix: host names on both axes, colour by the value
// against the median (core::median), findings outlined and marked, and a
// colour scale below.
void heatmap(const MatrixChart& m, std::ostream& out) {
  const auto rel = [&m](double v) {
    if (m.median <= 0 || v <= 0) return 1.0;
    return m.higher_is_better ? v / m.median : m.median / v;
  };
  std::size_t longest = 1;
  for (const std::string& l : m.labels) longest = std::max(longest, l.size());
  const int label_px = static_cast<int>(std::min<std::size_t>(longest, 28) * 7) + 10;
  const int cell = std::max(22, std::min(56, 480 / std::max(1, m.size)));
  const int L = label_px + 8, T = static_cast<int>(label_px * 0.72) + 14;
  const int grid = cell * m.size;
  const int W = std::max(L + grid + 24, 420), H = T + grid + 78;
  out << fmt::format(
      "<figure class=\"chart heatmap\" id=\"{0}\"><div class=\"chart-title\">{1}</div>\n<svg "
      "xmlns=\"http://www.w3.org/2000/svg\" width=\"{2}\" height=\"{3}\" viewBox=\"0 0 {2} {3}\" role=\"img\" "
      "aria-label=\"{1}\">\n",
      esc(m.id), esc(m.title), W, H);
  const auto short_label = [](const std::string& l) { return l.size() > 28 ? l.substr(0, 27) + "…" : l; };
  for (int i = 0; i < m.size; ++i) {
    const std::string& label = m.labels[static_cast<std::size_t>(i)];
    const double cy = T + cell * i + cell / 2.0 + 4;
    const double cx = L + cell * i + cell / 2.0;
    out << fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n", L - 6, cy,
                       esc(short_label(label)));
    out << fmt::format(
        "<text x=\"{0:.1f}\" y=\"{1}\" font-size=\"11\" text-anchor=\"start\" transform=\"rotate(-45 {0:.1f} "
        "{1})\">{2}</text>\n",
        cx, T - 6, esc(short_label(label)));
  }
  // One grey background for the cells without a figure, so the page grows
  // with the links the file holds, not with the square of its host list.
  out << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#eee\"/>\n", L, T, grid, grid);
  for (const MatrixCell& c : m.cells) {
    const int x = L + cell * c.to, y = T + cell * c.from;
    out << fmt::format(
        "<rect class=\"cell{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"{}\" "
        "stroke-width=\"{}\"><title>{} → {}: {}{}</title></rect>\n",
        c.flagged ? " finding" : "", x, y, cell, cell, heat_colour(rel(c.value)), c.flagged ? "#000" : "#fff",
        c.flagged ? 3 : 1, esc(m.labels[static_cast<std::size_t>(c.from)]),
        esc(m.labels[static_cast<std::size_t>(c.to)]), figure_text(c.value, m.unit), c.flagged ? " (finding)" : "");
    if (cell >= 30)
      out << fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"9\" text-anchor=\"middle\">{}{}</text>\n", x + cell / 2,
                         y + cell / 2 + 3,
                         m.unit == "us" && c.value >= 1000 ? fmt::format("{:.3g}ms", c.value / 1000) : num(c.value),
                         c.flagged ? "!" : "");
  }
  // The colour scale: from the worst value to the median and better.
  const int sx = L, sy = T + grid + 16, sw = std::min(240, W - L - 24);
  // Discrete steps rather than a gradient: the page references nothing, not
  // even an id through url().
  constexpr int steps = 24;
  for (int k = 0; k < steps; ++k)
    out << fmt::format(
        "<rect class=\"colour-scale\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"10\" fill=\"{}\"/>",
        sx + sw * k / static_cast<double>(steps), sy, sw / static_cast<double>(steps) + 0.5,
        heat_colour((k + 0.5) / steps));
  out << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"10\" fill=\"none\" stroke=\"#999\"/>\n", sx, sy,
                     sw);
  // The scale is relative to the median: its middle is half the median's
  // bandwidth (twice its latency), its right end the median or better.
  const std::string left = m.higher_is_better ? "0" : "slower";
  const std::string middle = figure_text(m.higher_is_better ? m.median / 2 : m.median * 2, m.unit);
  const std::string right =
      fmt::format("median {} {}", figure_text(m.median, m.unit), m.higher_is_better ? "or more" : "or less");
  out << fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"start\">{}</text>\n", sx, sy + 24, left);
  out << fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>\n", sx + sw / 2, sy - 3,
                     esc(middle));
  out << fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{}</text>\n", sx + sw, sy + 24,
                     esc(right));
  out << fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\">row sends to column{}</text>\n", sx, sy + 42,
                     m.higher_is_better ? "; outlined: findings" : "");
  out << "</svg><figcaption>" << esc(m.caption) << "</figcaption></figure>\n";
}

void verdict_list(const std::vector<Verdict>& verdicts, std::ostream& out) {
  out << "<table class=\"verdicts\"><tr><th>verdict</th><th class=\"l\">kind</th><th class=\"l\">subject</th>"
         "<th class=\"l\">reason</th></tr>\n";
  for (const Verdict& v : verdicts) {
    out << fmt::format(
        "<tr><td><span class=\"badge {}\">{}</span></td><td class=\"l\">{}</td><td class=\"l\">{}</td>"
        "<td class=\"l\">{}",
        level_class(v.level), name(v.level), esc(name(v.kind)), esc(v.subject), esc(v.reason));
    if (!v.cause.empty()) out << "<div class=\"cause\"><b>cause:</b> " << esc(v.cause) << "</div>";
    if (!v.fix.empty()) out << "<div class=\"fix\"><b>fix:</b> " << esc(v.fix) << "</div>";
    if (!v.source.empty()) out << "<div class=\"src\">source: " << esc(v.source) << "</div>";
    out << "</td></tr>\n";
  }
  out << "</table>\n";
}

std::string opt_gbs(const std::optional<double>& v) { return v ? fmt::format("{:.1f}", *v) : "-"; }

// What each node (or group of its ranks) runs with; the drift findings are
// among the anomalies below it.
void configuration_table(const std::vector<NodeConfig>& configs, std::size_t index, std::ostream& out) {
  if (configs.empty()) return;
  out << fmt::format(
      "<div class=\"table-wrap\"><table class=\"topology\" id=\"configuration-{}\"><tr><th class=\"l\">host</th>"
      "<th class=\"l\">ranks</th><th class=\"l\">NCCL</th><th class=\"l\">net plugin</th><th class=\"l\">CUDA "
      "driver / runtime</th><th class=\"l\">kernel</th><th class=\"l\">libibverbs</th><th class=\"l\">memlock</th>"
      "<th class=\"l\">NCCL interfaces</th><th class=\"l\">settings</th></tr>\n",
      index);
  const auto v = [](const std::optional<std::string>& s) { return esc(s.value_or("-")); };
  for (const NodeConfig& c : configs) {
    std::vector<std::string> ifs;
    for (const std::string& name : c.nccl_interfaces)
      for (const NetInterface& i : c.interfaces)
        if (i.name == name) ifs.push_back(fmt::format("{} (MTU {})", name, i.mtu ? std::to_string(*i.mtu) : "?"));
    std::vector<std::string> settings;
    for (const auto& [k, val] : c.environment) settings.push_back(fmt::format("{}={}", k, val));
    for (const auto& [k, val] : c.nccl_conf) settings.push_back(fmt::format("{}={} (nccl.conf)", k, val));
    const std::string memlock = c.memlock_unlimited == true ? std::string("unlimited")
                                : c.memlock_bytes           ? fmt::format("{} KiB", *c.memlock_bytes >> 10)
                                                            : std::string("-");
    out << fmt::format(
        "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>"
        "<td class=\"l\">{} / {}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>"
        "<td class=\"l\">{}</td><td class=\"l\">{}</td></tr>\n",
        esc(c.host), esc(fmt::format("{}", fmt::join(c.ranks, ", "))), v(c.nccl_version), v(c.nccl_net_plugin),
        v(c.cuda_driver), v(c.cuda_runtime), v(c.kernel), v(c.libibverbs), esc(memlock),
        esc(ifs.empty() ? std::string("-") : fmt::format("{}", fmt::join(ifs, ", "))),
        esc(settings.empty() ? std::string("-") : fmt::format("{}", fmt::join(settings, " "))));
  }
  out << "</table></div>\n";
}

void topology_section(const ReportRun& run, std::size_t index, std::ostream& out) {
  const ClusterTopology& t = *run.result.topology;
  out << fmt::format(
      "<h3>{}</h3>\n<div class=\"table-wrap\"><table class=\"topology\" id=\"topology-{}\"><tr><th "
      "class=\"l\">host</th>"
      "<th>GPUs</th><th class=\"l\">GPU model</th><th class=\"l\">PCIe</th><th>H2D GB/s</th>"
      "<th>D2H GB/s</th><th class=\"l\">NICs</th><th class=\"l\">GPUDirect RDMA</th></tr>\n",
      esc(run.path), index);
  for (const NodeTopology& n : t.nodes) {
    std::string model = "-", pcie = "-", h2d = "-", d2h = "-";
    if (!n.gpus.empty()) {
      const GpuInfo& g = n.gpus.front();
      model = g.name.value_or("unknown");
      if (g.pcie.current_gen) pcie = fmt::format("Gen{} x{}", *g.pcie.current_gen, g.pcie.current_width.value_or(0));
      std::vector<double> hs, ds;
      for (const GpuInfo& x : n.gpus) {
        if (x.h2d_gbs) hs.push_back(*x.h2d_gbs);
        if (x.d2h_gbs) ds.push_back(*x.d2h_gbs);
      }
      if (!hs.empty()) h2d = opt_gbs(*std::min_element(hs.begin(), hs.end()));
      if (!ds.empty()) d2h = opt_gbs(*std::min_element(ds.begin(), ds.end()));
    } else if (!n.gpu_status.empty()) {
      model = n.gpu_status;
    }
    std::string nics;
    for (const NicInfo& nic : n.nics) {
      std::string rate;
      for (const NicPort& p : nic.ports)
        if (p.rate_gbps) rate = fmt::format(" {:.0f}G {}", *p.rate_gbps, p.state.value_or(""));
      if (!rate.empty() || nic.speed_gbps)
        nics += fmt::format("{}{} ({}{})", nics.empty() ? "" : ", ", nic.name, name(nic.kind),
                            rate.empty() ? fmt::format(" {:.0f}G", *nic.speed_gbps) : rate);
      else
        nics += fmt::format("{}{} ({})", nics.empty() ? "" : ", ", nic.name, name(nic.kind));
    }
    out << fmt::format(
        "<tr><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td>"
        "<td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>\n",
        esc(n.host.hostname), n.gpus.size(), esc(model), esc(pcie), h2d, d2h, esc(nics.empty() ? "-" : nics),
        esc(name(n.gpudirect.status)));
  }
  out << "</table></div>\n";
  // Inside each node: PCIe switches, ACS, IOMMU, virtualization, copies at once.
  for (const NodeTopology& n : t.nodes) {
    const std::vector<std::string> lines = inside_node_lines(n);
    if (lines.empty()) continue;
    out << fmt::format("<p class=\"inside\">Inside {}:</p>\n<ul class=\"inside\">\n", esc(n.host.hostname));
    for (const std::string& line : lines) out << "<li>" << esc(line) << "</li>\n";
    out << "</ul>\n";
  }
  configuration_table(t.configuration, index, out);
  if (t.anomalies.empty()) {
    out << "<p class=\"anomalies muted\">No anomalies: the nodes agree.</p>\n";
  } else {
    out << "<ul class=\"anomalies\">\n";
    for (const Anomaly& a : t.anomalies)
      out << fmt::format("<li><b>{}</b> {} {}: {}</li>\n", esc(a.kind), esc(a.host), esc(a.device), esc(a.detail));
    out << "</ul>\n";
  }
}

// The model-parallel projection of each run that has one: its input, what
// was measured for it, and the step it projects.
void model_parallel_section(const Report& report, std::ostream& out) {
  bool any = false;
  for (const ReportRun& run : report.runs) any = any || run.result.model_parallel.has_value();
  if (!any) return;
  out << "<section id=\"model-parallel\">\n<h2>Model-parallel projection</h2>\n";
  for (const ReportRun& run : report.runs) {
    if (!run.result.model_parallel) continue;
    const ModelParallelResult& m = *run.result.model_parallel;
    out << fmt::format(
        "<h3>{}</h3>\n<p>tp {} &times; pp {} &times; dp {} on {} {} ({} node{}); {} layers, hidden {}, seq {}, "
        "micro-batch {}, {} micro-batches; {} activations of {}; {} ms compute per step on one GPU.</p>\n",
        esc(run.path), m.tp, m.pp, m.dp, m.gpus, unit_word(run.result), m.nodes, m.nodes == 1 ? "" : "s", m.layers,
        m.hidden, m.seq, m.micro_batch, m.micro_batches, name(m.dtype), esc(format_size(m.activation_bytes)),
        num(m.compute_ms));
    out << "<ul>\n";
    if (const auto& t = m.tp_allreduce)
      out << fmt::format(
          "<li>TP all-reduce of {} ({}) on {} groups of {} ranks within a node: {} us median, {} us slowest; 4 per "
          "layer.</li>\n",
          esc(format_size(t->bytes)), name(t->dtype), t->groups, t->ranks, num(t->time_us), num(t->time_max_us));
    if (const auto& l = m.pp_link)
      out << fmt::format(
          "<li>Slowest stage link, node {} &rarr; node {}: {} us + {} at {} GB/s per rank = {} us per transfer; 2 per "
          "micro-batch.</li>\n",
          l->from, l->to, num(l->latency_us), esc(format_size(m.activation_bytes)), num(l->bandwidth_gbs),
          num(l->transfer_us));
    out << "</ul>\n";
    if (!m.projection) {
      out << "<p class=\"muted\">Skipped: " << esc(m.skipped) << "</p>\n";
      continue;
    }
    const ModelParallelPoint& p = *m.projection;
    out << "<table class=\"model-parallel\"><tr><th>compute (ms)</th><th>TP comm (ms)</th><th>PP comm (ms)</th>"
           "<th>bubble (ms)</th><th>bubble</th><th>step (ms)</th><th>speedup</th><th>efficiency</th></tr>\n";
    out << fmt::format(
        "<tr><td>{:.3f}</td><td>{:.3f}</td><td>{:.3f}</td><td>{:.3f}</td><td>{:.1f}%</td><td>{:.3f}</td><td>{:.2f}</td>"
        "<td>{:.1f}%</td></tr>\n</table>\n",
        p.compute_ms, p.tp_comm_ms, p.pp_comm_ms, p.bubble_ms, p.bubble_fraction * 100.0, p.step_ms, p.speedup,
        p.efficiency * 100.0);
    if (m.dp > 1)
      out << fmt::format(
          "<p class=\"muted\">Not included: the data-parallel gradient synchronisation between the {} replicas.</p>\n",
          m.dp);
  }
  out << "</section>\n";
}

// Latency islands, the bisection test and the storage test of one run.
void placement_section(const ReportRun& run, std::ostream& out) {
  const RunResult& r = run.result;
  out << "<h3>" << esc(run.path) << "</h3>\n";
  if (r.islands) {
    out << "<h4>Latency islands</h4>\n<table class=\"islands\"><tr><th class=\"l\">island</th><th>nodes</th><th "
           "class=\"l\">hosts</th></tr>\n";
    for (const LatencyIsland& island : r.islands->islands) {
      std::string hosts;
      for (const std::string& h : island.hosts) hosts += (hosts.empty() ? "" : " ") + h;
      out << fmt::format("<tr><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td></tr>\n", esc(island.name),
                         island.nodes.size(), esc(hosts));
    }
    out << "</table>\n<p>" << esc(r.islands->message) << "</p>\n";
  }
  if (r.bisection) {
    const BisectionResult& b = *r.bisection;
    out << fmt::format("<h4>Bisection at {} (seed {})</h4>\n", esc(format_size(b.bytes)), b.seed);
    out << "<table class=\"bisection\"><tr><th>halving</th><th class=\"l\">pair</th><th>alone (GB/s)</th><th>loaded "
           "(GB/s)</th><th>oversubscription</th></tr>\n";
    for (std::size_t k = 0; k < b.halvings.size(); ++k) {
      const HalvingResult& h = b.halvings[k];
      for (const BisectionPair& p : h.pairs)
        out << fmt::format("<tr><td>{}</td><td class=\"l\">{} &harr; {}</td><td>{}</td><td>{}</td><td></td></tr>\n",
                           k + 1, esc(p.host_a), esc(p.host_b), p.isolated_gbs ? num(*p.isolated_gbs) : "-",
                           num(p.loaded_gbs));
      out << fmt::format(
          "<tr class=\"total\"><td>{}</td><td class=\"l\">together</td><td>{}</td><td>{}</td><td>{}</td>"
          "</tr>\n",
          k + 1, num(h.isolated_gbs), num(h.loaded_gbs),
          h.oversubscription ? fmt::format("{:.2f}:1", *h.oversubscription) : "-");
    }
    out << fmt::format("</table>\n<p class=\"{}\">{}</p>\n", b.blocking ? "warn" : "ok", esc(b.message));
  }
  if (r.storage) {
    const StorageResult& st = *r.storage;
    out << fmt::format("<h4>Storage in {} ({}, {} per file)</h4>\n", esc(st.path),
                       st.io_mode == "direct" ? "O_DIRECT" : esc("buffered: " + st.io_note),
                       esc(format_size(st.file_bytes)));
    out << "<table class=\"storage\"><tr><th class=\"l\">node</th><th>files</th><th>bytes</th><th>write "
           "(GB/s)</th><th>read (GB/s)</th></tr>\n";
    for (const StorageNode& n : st.nodes)
      out << fmt::format("<tr{}><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                         st.slowest_write_node == n.node || st.slowest_read_node == n.node ? " class=\"differs\"" : "",
                         esc(n.host), n.files, n.bytes, num(n.write_gbs), num(n.read_gbs));
    out << fmt::format(
        "<tr class=\"total\"><td class=\"l\">all</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        st.files_written, st.bytes_written, num(st.write_gbs), num(st.read_gbs));
    out << fmt::format("</table>\n<p>{} Files removed afterwards: {} of {}.</p>\n", esc(st.message), st.files_removed,
                       st.files_written);
  }
}

}  // namespace

void write_report_html(const Report& report, std::ostream& out) {
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         "<title>fabricbench report</title>\n<style>\n"
      << style << "\n</style>\n</head>\n<body>\n<h1>fabricbench report</h1>\n";

  out << fmt::format(
      "<section id=\"verdict\" class=\"verdict {}\">\n<h2>Verdict: <span class=\"badge {}\">{}</span></h2>\n",
      level_class(report.level), level_class(report.level), name(report.level));
  for (const ReportRun& run : report.runs) {
    out << fmt::format("<h3><span class=\"badge {}\">{}</span> {}</h3>\n", level_class(run.level), name(run.level),
                       esc(run.path));
    // The decision first: the headline, then every verdict.
    out << "<table class=\"headline\">\n";
    for (const HeadlineLine& line : headline(run))
      out << fmt::format("<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>\n", esc(line.topic), esc(line.text));
    out << "</table>\n";
    verdict_list(run.verdicts, out);
  }
  out << "</section>\n";

  out << "<section id=\"runs\">\n<h2>Runs</h2>\n<table><tr><th>group</th><th class=\"l\">file</th><th "
         "class=\"l\">cluster"
         "</th><th class=\"l\">started (UTC)</th><th class=\"l\">tool</th><th>duration (s)</th></tr>\n";
  for (const ReportGroup& g : report.groups)
    for (const std::size_t i : g.runs) {
      const RunResult& r = report.runs[i].result;
      out << fmt::format(
          "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>"
          "<td class=\"l\">{} ({})</td><td>{}</td></tr>\n",
          esc(g.label + " (" + g.name + ")"), esc(report.runs[i].path), esc(g.cluster), esc(r.run.start_utc),
          esc(r.tool.version), esc(r.tool.git), r.duration_s ? fmt::format("{:.1f}", *r.duration_s) : "-");
    }
  out << "</table>\n</section>\n";

  if (!report.busbw_charts.empty()) {
    out << "<section id=\"busbw\">\n<h2>Bus bandwidth against message size</h2>\n";
    for (const BusbwChart& chart : report.busbw_charts) busbw_chart(report, chart, out);
    out << "</section>\n";
  }

  algorithm_section(report, out);

  // What NCCL used, per run that captured NCCL's log.
  bool nccl_header = false;
  for (const ReportRun& run : report.runs) {
    if (!run.result.nccl) continue;
    if (!nccl_header) out << "<section id=\"nccl-usage\">\n<h2>What NCCL used</h2>\n";
    nccl_header = true;
    out << fmt::format("<h3>{}</h3>\n<pre>", esc(run.path));
    for (const std::string& line : nccl_usage_lines(*run.result.nccl)) out << esc(line) << '\n';
    out << "</pre>\n";
  }
  if (nccl_header) out << "</section>\n";

  if (report.runs.size() > 1 && !report.compare.empty()) {
    out << "<section id=\"comparison\">\n<h2>Comparison</h2>\n";
    for (const GroupHeadline& h : report.headline) out << "<p class=\"result\">" << esc(h.text) << "</p>\n";
    out << fmt::format(
        "<p>Runs grouped by their label, else each file alone. busbw in GB/s, mean ± standard deviation over each "
        "group's runs (min–max in the tooltip); ratio to A, ~ within noise (a side below {:g}% of the op's peak, or "
        "the difference within twice the standard error of the runs' spread).</p>\n<div "
        "class=\"table-wrap\"><table><tr><th "
        "class=\"l\">op</th><th>dtype</th><th>redop</th><th>root</th><th>placement</th><th>size</th>",
        noise_floor_fraction * 100);
    for (const ReportGroup& g : report.groups) out << "<th>" << esc(g.label) << "</th>";
    for (std::size_t g = 1; g < report.groups.size(); ++g) out << "<th>" << esc(report.groups[g].label) << "/A</th>";
    out << "</tr>\n";
    for (const CompareRow& row : report.compare) {
      out << fmt::format("<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                         name(row.op), name(row.dtype), row.redop ? std::string(name(*row.redop)) : "-",
                         row.root ? std::to_string(*row.root) : "-", name(row.placement), esc(format_size(row.bytes)));
      for (const auto& s : row.busbw) {
        if (!s)
          out << "<td>-</td>";
        else
          out << fmt::format("<td title=\"min {} max {}, {} run(s)\">{}{}</td>", num(s->min), num(s->max), s->runs,
                             num(s->mean), s->runs > 1 ? fmt::format(" ± {}", num(s->sd)) : "");
      }
      for (std::size_t g = 1; g < row.ratio.size(); ++g) {
        const CompareRatio& r = row.ratio[g];
        if (r.value)
          out << fmt::format("<td>{:.2f}</td>", *r.value);
        else if (r.noise == Noise::missing)
          out << "<td>-</td>";
        else
          out << fmt::format("<td title=\"{}\">~</td>", name(r.noise));
      }
      out << "</tr>\n";
    }
    out << "</table></div>\n";
    if (!report.topology.empty()) {
      out << "<h3>Topology differences</h3>\n<table><tr><th class=\"l\">what</th>";
      for (const ReportGroup& g : report.groups) out << "<th>" << esc(g.label) << "</th>";
      out << "</tr>\n";
      for (const TopologyRow& row : report.topology) {
        out << fmt::format("<tr{}><td class=\"l\">{}</td>", row.differs ? " class=\"differs\"" : "", esc(row.what));
        for (const std::string& v : row.values) out << "<td>" << esc(v) << "</td>";
        out << "</tr>\n";
      }
      out << "</table>\n";
    }
    out << "</section>\n";
  }

  bool any_ladder = false, any_pairs = false, any_topology = false, any_cost = false;
  for (const ReportRun& run : report.runs) {
    any_ladder = any_ladder || (run.result.scaling && !run.result.scaling->levels.empty());
    any_pairs = any_pairs || run.result.pairs.has_value();
    any_topology = any_topology || run.result.topology.has_value();
    any_cost = any_cost || run.cost.has_value();
  }
  if (any_ladder) {
    out << "<section id=\"ladder\">\n<h2>Scaling ladder</h2>\n";
    for (const LadderChart& chart : report.ladder_charts) ladder_chart(report, chart, out);
    out << "</section>\n";
  }
  if (std::any_of(report.runs.begin(), report.runs.end(),
                  [](const ReportRun& run) { return run.result.gpu_ladder.has_value(); })) {
    out << "<section id=\"gpu-ladder\">\n<h2>GPU-count ladder inside a node</h2>\n";
    for (std::size_t i = 0; i < report.runs.size(); ++i)
      if (report.runs[i].result.gpu_ladder) gpu_ladder_section(report.runs[i], i, out);
    out << "</section>\n";
  }
  if (any_pairs) {
    out << "<section id=\"pairs\">\n<h2>Node pairs</h2>\n";
    for (std::size_t i = 0; i < report.runs.size(); ++i) {
      const ReportRun& run = report.runs[i];
      if (!run.result.pairs) continue;
      const std::string prefix = fmt::format("pairs-{}", i);
      for (const MatrixChart& m : report.matrix_charts)
        if (m.id == prefix || m.id.starts_with(prefix + "-")) heatmap(m, out);
      if (!run.result.findings.empty()) {
        out << "<ul class=\"findings\">\n";
        for (const Finding& f : run.result.findings) out << "<li>" << esc(f.message) << "</li>\n";
        out << "</ul>\n";
      } else if (run.result.pairs->nodes.size > 1) {
        out << "<p class=\"findings muted\">No finding: no node or link stands out.</p>\n";
      }
      // Suspects the second pass cleared: shown, never as findings.
      if (!run.result.unconfirmed.empty()) {
        out << "<ul class=\"findings muted\">\n";
        for (const Finding& f : run.result.unconfirmed) out << "<li>" << esc(f.message) << "</li>\n";
        out << "</ul>\n";
      }
    }
    out << "</section>\n";
  }
  model_parallel_section(report, out);
  if (std::any_of(report.runs.begin(), report.runs.end(), [](const ReportRun& run) {
        return run.result.islands || run.result.bisection || run.result.storage;
      })) {
    out << "<section id=\"placement\">\n<h2>Placement and storage</h2>\n";
    for (const ReportRun& run : report.runs)
      if (run.result.islands || run.result.bisection || run.result.storage) placement_section(run, out);
    out << "</section>\n";
  }
  if (any_topology) {
    out << "<section id=\"topology\">\n<h2>Topology</h2>\n";
    for (std::size_t i = 0; i < report.runs.size(); ++i)
      if (report.runs[i].result.topology) topology_section(report.runs[i], i, out);
    out << "</section>\n";
  }
  if (any_cost) {
    out << "<section id=\"cost\">\n<h2>Cost</h2>\n";
    for (const ReportRun& run : report.runs) {
      if (!run.cost) continue;
      const CostSummary& c = *run.cost;
      const std::string unit = unit_word(run.result) == "GPUs" ? "GPU" : "rank";
      out << fmt::format(
          "<h3>{}</h3>\n<p>Price: {}. This run: {}.</p>\n", esc(run.path),
          c.price.per_gpu_hour
              ? fmt::format("{} per {}-hour", esc(money_text(*c.price.per_gpu_hour, c.price.currency)), unit)
              : fmt::format("{} per node-hour", esc(money_text(*c.price.per_node_hour, c.price.currency))),
          c.run_cost ? esc(money_text(*c.run_cost, c.price.currency)) : esc("unknown (" + c.why_no_run_cost + ")"));
      if (!c.training.empty()) {
        out << fmt::format(
            "<table class=\"training-cost\"><tr><th>nodes</th><th>{}</th><th>step (ms)</th><th>cost per 1000 "
            "steps</th></tr>\n",
            unit_word(run.result));
        for (const CostPoint& p : c.training)
          out << fmt::format("<tr><td>{}</td><td>{}</td><td>{:.3f}</td><td>{}</td></tr>\n", p.nodes, p.gpus, p.step_ms,
                             esc(money_text(p.per_1000_steps, c.price.currency)));
        out << "</table>\n";
      }
      if (c.model_parallel && run.result.model_parallel)
        out << fmt::format(
            "<p class=\"model-parallel-cost\">Model-parallel training (tp {} &times; pp {} &times; dp {}, "
            "{} {}): step {:.3f} ms, {} per 1000 steps.</p>\n",
            run.result.model_parallel->tp, run.result.model_parallel->pp, run.result.model_parallel->dp,
            c.model_parallel->gpus, unit_word(run.result), c.model_parallel->step_ms,
            esc(money_text(c.model_parallel->per_1000_steps, c.price.currency)));
    }
    out << "</section>\n";
  }
  out << "</body>\n</html>\n";
}

}  // namespace fabricbench
