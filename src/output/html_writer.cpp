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

#include <fmt/format.h>

#include "fabricbench/core/sizes.hpp"
#include "fabricbench/output/report_writers.hpp"
#include "fabricbench/topology/topology_analysis.hpp"

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

std::string num(double v) { return fmt::format("{:.4g}", v); }

constexpr const char* style =
    R"(body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:32px}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f2f2f2}td.l,th.l{text-align:left}.verdict{border:2px solid;border-radius:6px;padding:8px 14px;margin:12px 0}
.verdict.ok{border-color:#2e9a48;background:#eef8f0}.verdict.warn{border-color:#d9a21a;background:#fdf7e6}
.verdict.fail{border-color:#c23b3b;background:#fbeeee}.verdict.info{border-color:#888;background:#f6f6f6}
.badge{display:inline-block;min-width:42px;text-align:center;border-radius:4px;padding:1px 6px;font-weight:bold;color:#fff}
.badge.ok{background:#2e9a48}.badge.warn{background:#c68d00}.badge.fail{background:#c23b3b}.badge.info{background:#888}
.src{color:#555;font-size:12px}figure{margin:10px 0}figcaption{font-size:12px;color:#555}svg text{font-family:inherit}
tr.differs td{background:#fff3d6}.muted{color:#777})";

// A byte count held as a double (2^64 is not a size_t), for a label.
std::string size_label(double bytes) {
  if (!(bytes >= 0)) return "?";
  if (bytes >= 18446744073709551615.0) return format_size(std::numeric_limits<std::size_t>::max());
  return format_size(static_cast<std::size_t>(bytes));
}

// A line chart of busbw against message size, log2 x axis.
void busbw_chart(const Report& report, Op op, std::ostream& out) {
  struct Series {
    std::string label;
    std::vector<std::pair<double, double>> points;  // bytes, busbw
  };
  std::vector<Series> series;
  for (std::size_t g = 0; g < report.groups.size(); ++g) {
    std::map<std::size_t, std::vector<double>> by_size;
    bool has_oop = false;
    for (const std::size_t i : report.groups[g].runs)
      for (const SweepRecord& r : report.runs[i].result.records)
        has_oop = has_oop || (r.op == op && r.timing && r.placement == Placement::out_of_place);
    for (const std::size_t i : report.groups[g].runs)
      for (const SweepRecord& r : report.runs[i].result.records)
        if (r.op == op && r.timing && r.bytes > 0 && (r.placement == Placement::out_of_place || !has_oop))
          by_size[r.bytes].push_back(r.timing->busbw_gbs);
    Series s;
    s.label =
        report.groups.size() > 1 ? report.groups[g].label + ": " + report.groups[g].cluster : report.groups[g].cluster;
    for (const auto& [bytes, values] : by_size)
      s.points.emplace_back(static_cast<double>(bytes), spread_of(values).mean);
    if (!s.points.empty()) series.push_back(std::move(s));
  }
  if (series.empty()) return;
  double xmin = 1e300, xmax = 0, ymax = 0;
  for (const Series& s : series)
    for (const auto& [x, y] : s.points) {
      xmin = std::min(xmin, x);
      xmax = std::max(xmax, x);
      ymax = std::max(ymax, y);
    }
  if (ymax <= 0) ymax = 1;
  xmin = std::max(xmin, 1.0);  // a 0-byte record would put the axis at log2(0)
  xmax = std::max(xmax, xmin);
  const double lx0 = std::floor(std::log2(xmin)), lx1 = std::max(lx0 + 1, std::ceil(std::log2(xmax)));
  const int W = 640, H = 300, L = 60, R = 20, T = 20, B = 50;
  const auto px = [&](double x) { return L + (std::log2(x) - lx0) / (lx1 - lx0) * (W - L - R); };
  const auto py = [&](double y) { return H - B - y / (ymax * 1.1) * (H - T - B); };
  out << fmt::format(
      "<figure class=\"chart busbw-chart\" id=\"busbw-{}\"><svg xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{} busbw against "
      "message size\">\n",
      name(op), W, H + 18 * static_cast<int>(series.size()), W, H + 18 * static_cast<int>(series.size()), name(op));
  out << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n", L, T,
                     W - L - R, H - T - B);
  const int step = static_cast<int>(std::ceil((lx1 - lx0) / 10));
  for (double e = lx0; e <= lx1; e += step) {
    const double x = px(std::exp2(e));
    out << fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e4e4e4\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" font-size=\"10\" text-anchor=\"middle\">{4}</text>\n",
        x, T, H - B, H - B + 14, esc(size_label(std::exp2(e))));
  }
  for (int k = 0; k <= 4; ++k) {
    const double y = ymax * 1.1 * k / 4;
    out << fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e4e4e4\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" font-size=\"10\" text-anchor=\"end\">{5}</text>\n",
        L, py(y), W - R, L - 4, py(y) + 3, num(y));
  }
  out << fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">message size (log scale)</text>\n",
      (L + W - R) / 2, H - B + 30);
  out << fmt::format(
      "<text x=\"14\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" transform=\"rotate(-90 14 {})\">"
      "busbw (GB/s)</text>\n",
      (T + H - B) / 2, (T + H - B) / 2);
  for (std::size_t s = 0; s < series.size(); ++s) {
    std::string pts;
    for (const auto& [x, y] : series[s].points) pts += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    out << fmt::format("<polyline class=\"series\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n",
                       palette(s), pts);
    for (const auto& [x, y] : series[s].points)
      out << fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}: {} GB/s</title></circle>\n", px(x), py(y),
          palette(s), esc(size_label(x)), num(y));
    const int ly = H + 4 + 18 * static_cast<int>(s);
    out << fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" "
        "font-size=\"11\">{}</text>\n",
        L, ly, palette(s), L + 18, ly + 10, esc(series[s].label));
  }
  out << fmt::format("</svg><figcaption>{}: bus bandwidth against message size{}</figcaption></figure>\n", name(op),
                     report.runs.size() > 1 ? " (mean over each group's runs)" : "");
}

// Bars of median busbw per ladder level, one colour per op.
void ladder_chart(const ReportRun& run, std::size_t index, std::ostream& out) {
  const ScaleResult& s = *run.result.scaling;
  std::vector<std::string> levels;
  std::vector<Op> ops;
  double ymax = 0;
  for (const LevelResult& l : s.levels) {
    const std::string label = l.kind == LevelKind::rail ? "rail" : fmt::format("{} nodes", l.nodes_per_group);
    if (std::find(levels.begin(), levels.end(), label) == levels.end()) levels.push_back(label);
    if (std::find(ops.begin(), ops.end(), l.op) == ops.end()) ops.push_back(l.op);
    ymax = std::max(ymax, l.busbw_median_gbs);
  }
  if (levels.empty()) return;
  if (ymax <= 0) ymax = 1;
  const int W = 640, H = 260, L = 60, R = 20, T = 20, B = 40;
  const double slot = static_cast<double>(W - L - R) / static_cast<double>(levels.size());
  const double bar = slot * 0.8 / static_cast<double>(ops.size());
  const int height = H + 18 * static_cast<int>(ops.size());
  out << fmt::format(
      "<figure class=\"chart ladder-chart\" id=\"ladder-{}\"><svg xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"scaling ladder\">\n",
      index, W, height, W, height);
  out << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n", L, T,
                     W - L - R, H - T - B);
  const auto py = [&](double y) { return H - B - y / (ymax * 1.15) * (H - T - B); };
  for (int k = 0; k <= 4; ++k) {
    const double y = ymax * 1.15 * k / 4;
    out << fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\">{}</text>\n", L - 4, py(y) + 3,
                       num(y));
  }
  for (std::size_t i = 0; i < levels.size(); ++i)
    out << fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n",
                       L + slot * (static_cast<double>(i) + 0.5), H - B + 16, esc(levels[i]));
  for (const LevelResult& l : s.levels) {
    const std::string label = l.kind == LevelKind::rail ? "rail" : fmt::format("{} nodes", l.nodes_per_group);
    const auto li = static_cast<double>(std::find(levels.begin(), levels.end(), label) - levels.begin());
    const auto oi = static_cast<std::size_t>(std::find(ops.begin(), ops.end(), l.op) - ops.begin());
    const double x = L + slot * li + slot * 0.1 + bar * static_cast<double>(oi);
    const double y = py(l.busbw_median_gbs);
    out << fmt::format(
        "<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\">"
        "<title>{} {}: {} GB/s</title></rect>\n",
        x, y, bar * 0.95, H - B - y, palette(oi), name(l.op), esc(label), num(l.busbw_median_gbs));
    if (l.efficiency)
      out << fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"middle\">{:.0f}%</text>\n",
                         x + bar * 0.475, y - 3, *l.efficiency * 100);
  }
  for (std::size_t o = 0; o < ops.size(); ++o) {
    const int ly = H + 4 + 18 * static_cast<int>(o);
    out << fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" "
        "font-size=\"11\">{} (median busbw, GB/s; % = efficiency vs 1 node)</text>\n",
        L, ly, palette(o), L + 18, ly + 10, name(ops[o]));
  }
  out << fmt::format("</svg><figcaption>{}: scaling ladder at {}</figcaption></figure>\n", esc(run.path),
                     esc(format_size(s.bytes)));
}

// A heat-map of a pair matrix: colour by bandwidth relative to the median,
// findings outlined and marked.
void heatmap(const PairMatrix& m, const std::vector<std::string>& labels, const std::vector<Finding>& findings,
             const std::string& id, const std::string& caption, std::ostream& out) {
  std::vector<double> values;
  for (int i = 0; i < m.size; ++i)
    for (int j = 0; j < m.size; ++j)
      if (i != j && m.bw(i, j)) values.push_back(*m.bw(i, j));
  if (values.empty()) return;
  std::sort(values.begin(), values.end());
  const double median = values[values.size() / 2];
  std::set<int> slow_nodes;
  std::set<std::pair<int, int>> slow_links;
  for (const Finding& f : findings) {
    if (f.kind == FindingKind::slow_node && !f.nodes.empty()) slow_nodes.insert(f.nodes[0]);
    if (f.kind == FindingKind::slow_link && f.nodes.size() == 2) {
      slow_links.insert({f.nodes[0], f.nodes[1]});
      slow_links.insert({f.nodes[1], f.nodes[0]});
    }
  }
  const int cell = std::max(18, std::min(56, 480 / std::max(1, m.size)));
  const int L = 110, T = 24;
  const int W = L + cell * m.size + 20, H = T + cell * m.size + 40;
  out << fmt::format(
      "<figure class=\"chart heatmap\" id=\"{}\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" "
      "height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"pair bandwidth heat-map\">\n",
      esc(id), W, H, W, H);
  for (int i = 0; i < m.size; ++i) {
    const std::string& label = labels[static_cast<std::size_t>(i)];
    const bool slow = slow_nodes.contains(i);
    out << fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\"{}>{}{}</text>\n", L - 6,
                       T + cell * i + cell / 2 + 4, slow ? " fill=\"#c23b3b\" font-weight=\"bold\"" : "", esc(label),
                       slow ? " !" : "");
    out << fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>\n",
                       L + cell * i + cell / 2, T - 6, i);
  }
  // One grey background for the cells without a figure, so the page grows
  // with the links the file holds, not with the square of its host list.
  out << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#eee\"/>\n", L, T, cell * m.size,
                     cell * m.size);
  for (int i = 0; i < m.size; ++i)
    for (int j = 0; j < m.size; ++j) {
      const int x = L + cell * j, y = T + cell * i;
      if (i == j || !m.bw(i, j)) continue;
      const double v = *m.bw(i, j);
      const double rel = std::clamp(median > 0 ? v / median : 1.0, 0.0, 1.0);
      // Red (slow) to green (at the median or above), through yellow.
      const int red = rel < 0.5 ? 220 : static_cast<int>(220 - (rel - 0.5) * 2 * 174);
      const int green = rel < 0.5 ? static_cast<int>(60 + rel * 2 * 120) : static_cast<int>(180 - (1 - rel) * 40);
      const bool flagged = slow_links.contains({i, j}) || slow_nodes.contains(i) || slow_nodes.contains(j);
      out << fmt::format(
          "<rect class=\"cell{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"rgb({},{},80)\" "
          "stroke=\"{}\" stroke-width=\"{}\"><title>{} → {}: {} GB/s{}</title></rect>\n",
          flagged ? " finding" : "", x, y, cell, cell, red, green, flagged ? "#000" : "#fff", flagged ? 3 : 1,
          esc(labels[static_cast<std::size_t>(i)]), esc(labels[static_cast<std::size_t>(j)]), num(v),
          flagged ? " (finding)" : "");
      if (cell >= 30)
        out << fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"9\" text-anchor=\"middle\">{}{}</text>\n", x + cell / 2,
                           y + cell / 2 + 3, num(v), flagged ? "!" : "");
    }
  out << fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"11\">row sends to column; colour: bandwidth relative to the "
      "median {} GB/s; outlined: findings</text>\n",
      10, H - 10, num(median));
  out << "</svg><figcaption>" << esc(caption) << "</figcaption></figure>\n";
}

void verdict_list(const std::vector<Verdict>& verdicts, std::ostream& out) {
  out << "<table class=\"verdicts\"><tr><th>verdict</th><th class=\"l\">kind</th><th class=\"l\">subject</th>"
         "<th class=\"l\">reason</th></tr>\n";
  for (const Verdict& v : verdicts) {
    out << fmt::format(
        "<tr><td><span class=\"badge {}\">{}</span></td><td class=\"l\">{}</td><td class=\"l\">{}</td>"
        "<td class=\"l\">{}",
        level_class(v.level), name(v.level), esc(v.kind), esc(v.subject), esc(v.reason));
    if (!v.source.empty()) out << "<div class=\"src\">source: " << esc(v.source) << "</div>";
    out << "</td></tr>\n";
  }
  out << "</table>\n";
}

std::string opt_gbs(const std::optional<double>& v) { return v ? fmt::format("{:.1f}", *v) : "-"; }

void topology_section(const ReportRun& run, std::size_t index, std::ostream& out) {
  const ClusterTopology& t = *run.result.topology;
  out << fmt::format(
      "<h3>{}</h3>\n<table class=\"topology\" id=\"topology-{}\"><tr><th class=\"l\">host</th>"
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
        nics += fmt::format("{}{} ({}{})", nics.empty() ? "" : ", ", nic.name, nic.kind,
                            rate.empty() ? fmt::format(" {:.0f}G", *nic.speed_gbps) : rate);
      else
        nics += fmt::format("{}{} ({})", nics.empty() ? "" : ", ", nic.name, nic.kind);
    }
    out << fmt::format(
        "<tr><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td>"
        "<td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>\n",
        esc(n.host.hostname), n.gpus.size(), esc(model), esc(pcie), h2d, d2h, esc(nics.empty() ? "-" : nics),
        esc(n.gpudirect.status));
  }
  out << "</table>\n";
  if (t.anomalies.empty()) {
    out << "<p class=\"anomalies muted\">No anomalies: the nodes agree.</p>\n";
  } else {
    out << "<ul class=\"anomalies\">\n";
    for (const Anomaly& a : t.anomalies)
      out << fmt::format("<li><b>{}</b> {} {}: {}</li>\n", esc(a.kind), esc(a.host), esc(a.device), esc(a.detail));
    out << "</ul>\n";
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
          esc(g.label), esc(report.runs[i].path), esc(g.cluster), esc(r.run.start_utc), esc(r.tool.version),
          esc(r.tool.git), r.duration_s ? fmt::format("{:.1f}", *r.duration_s) : "-");
    }
  out << "</table>\n</section>\n";

  std::vector<Op> ops;
  for (const ReportRun& run : report.runs)
    for (const SweepRecord& r : run.result.records)
      if (r.timing && std::find(ops.begin(), ops.end(), r.op) == ops.end()) ops.push_back(r.op);
  std::sort(ops.begin(), ops.end());
  if (!ops.empty()) {
    out << "<section id=\"busbw\">\n<h2>Bus bandwidth against message size</h2>\n";
    for (const Op op : ops) busbw_chart(report, op, out);
    out << "</section>\n";
  }

  if (report.runs.size() > 1 && !report.compare.empty()) {
    out << "<section id=\"comparison\">\n<h2>Comparison</h2>\n<p>busbw in GB/s, mean ± standard deviation over each "
           "group's runs (min–max in the tooltip); ratio to A.</p>\n<table><tr><th class=\"l\">op</th><th>dtype</th>"
           "<th>placement</th><th>size</th>";
    for (const ReportGroup& g : report.groups) out << "<th>" << esc(g.label) << "</th>";
    for (std::size_t g = 1; g < report.groups.size(); ++g) out << "<th>" << esc(report.groups[g].label) << "/A</th>";
    out << "</tr>\n";
    for (const CompareRow& row : report.compare) {
      out << fmt::format("<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td>", name(row.op), name(row.dtype),
                         name(row.placement), esc(format_size(row.bytes)));
      for (const auto& s : row.busbw) {
        if (!s)
          out << "<td>-</td>";
        else
          out << fmt::format("<td title=\"min {} max {}, {} run(s)\">{}{}</td>", num(s->min), num(s->max), s->runs,
                             num(s->mean), s->runs > 1 ? fmt::format(" ± {}", num(s->sd)) : "");
      }
      for (std::size_t g = 1; g < row.busbw.size(); ++g) {
        if (row.busbw[0] && row.busbw[g] && row.busbw[0]->mean > 0)
          out << fmt::format("<td>{:.2f}</td>", row.busbw[g]->mean / row.busbw[0]->mean);
        else
          out << "<td>-</td>";
      }
      out << "</tr>\n";
    }
    out << "</table>\n";
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
    for (std::size_t i = 0; i < report.runs.size(); ++i)
      if (report.runs[i].result.scaling && !report.runs[i].result.scaling->levels.empty())
        ladder_chart(report.runs[i], i, out);
    out << "</section>\n";
  }
  if (any_pairs) {
    out << "<section id=\"pairs\">\n<h2>Node pairs</h2>\n";
    for (std::size_t i = 0; i < report.runs.size(); ++i) {
      const ReportRun& run = report.runs[i];
      if (!run.result.pairs) continue;
      const PairsResult& p = *run.result.pairs;
      if (p.nodes.size > 1)
        heatmap(p.nodes, p.hosts, run.result.findings, fmt::format("pairs-{}", i),
                fmt::format("{}: node-to-node send/recv bandwidth at {}", run.path, format_size(p.bytes)), out);
      std::vector<std::string> locals;
      for (int l = 0; l < p.ranks_per_node; ++l) locals.push_back(fmt::format("local {}", l));
      for (std::size_t n = 0; n < p.intra.size() && p.ranks_per_node > 1; ++n)
        heatmap(p.intra[n], locals, {}, fmt::format("pairs-{}-node-{}", i, n),
                fmt::format("{}: within {}, send/recv bandwidth at {}", run.path,
                            n < p.hosts.size() ? p.hosts[n] : std::to_string(n), format_size(p.bytes)),
                out);
      if (!run.result.findings.empty()) {
        out << "<ul class=\"findings\">\n";
        for (const Finding& f : run.result.findings) out << "<li>" << esc(f.message) << "</li>\n";
        out << "</ul>\n";
      } else if (p.nodes.size > 1) {
        out << "<p class=\"findings muted\">No finding: no node or link stands out.</p>\n";
      }
    }
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
      out << fmt::format("<h3>{}</h3>\n<p>Price: {}. This run: {}.</p>\n", esc(run.path),
                         c.price.per_gpu_hour ? fmt::format("{} per GPU-hour", num(*c.price.per_gpu_hour))
                                              : fmt::format("{} per node-hour", num(*c.price.per_node_hour)),
                         c.run_cost ? num(*c.run_cost) : esc("unknown (" + c.why_no_run_cost + ")"));
      if (!c.training.empty()) {
        out << "<table class=\"training-cost\"><tr><th>nodes</th><th>GPUs</th><th>step (ms)</th><th>cost per 1000 "
               "steps</th></tr>\n";
        for (const CostPoint& p : c.training)
          out << fmt::format("<tr><td>{}</td><td>{}</td><td>{:.3f}</td><td>{}</td></tr>\n", p.nodes, p.gpus, p.step_ms,
                             num(p.per_1000_steps));
        out << "</table>\n";
      }
    }
    out << "</section>\n";
  }
  out << "</body>\n</html>\n";
}

}  // namespace fabricbench
