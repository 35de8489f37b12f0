#!/usr/bin/env python3
"""End-to-end tests of `fabricbench report`: exit codes of each gate, schema
errors on wrong, foreign and truncated files, CSV and HTML outputs, and the
HTML page rendered in headless Chromium (no console errors, charts present).
"""
import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ARGS = None


def report(*args):
    return subprocess.run([ARGS.binary, "report", *args], capture_output=True, text=True, timeout=120)


def golden(name):
    return os.path.join(ARGS.golden, name)


class Gates(unittest.TestCase):
    CASES = [
        (["run_a.json"], 0),
        (["run_a.json", "--expect", "allreduce.busbw>=150"], 0),
        (["run_a.json", "--expect", "allreduce.busbw>=350"], 3),
        (["run_a.json", "--expect", "allgather.busbw@1M>=40"], 0),
        (["run_a.json", "--expect", "scale.efficiency@2>=0.9"], 3),
        (["run_a.json", "--expect", "pairs.bandwidth>=300", "--expect", "topo.h2d_gbs>=40"], 0),
        (["result.json", "--expect", "topo.h2d_gbs>=40"], 3),
        (["run_a.json", "--expect-reference"], 0),
        (["run_b.json", "--expect-reference"], 3),
        (["run_b.json"], 0),
        (["run_b.json", "--fail-on-warn"], 1),
        (["run_a.json", "--fail-on-warn"], 0),
        (["run_a.json", "--expect", "allreduce.speed>=1"], 2),
        (["run_a.json", "--expect", "allreduce.busbw>=x"], 2),
        (["run_a.json", "--price-per-gpu-hour", "1", "--price-per-node-hour", "8"], 2),
    ]

    def test_each_gate_exit_code(self):
        for args, code in self.CASES:
            with self.subTest(args=args):
                proc = report(golden(args[0]), *args[1:])
                self.assertEqual(proc.returncode, code, proc.stdout[-2000:] + proc.stderr)
                if code == 2:
                    lines = [l for l in proc.stderr.splitlines() if l.strip()]
                    self.assertEqual(len(lines), 1, proc.stderr)
                    self.assertTrue(lines[0].startswith("fabricbench: error: "))


class BadFiles(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def one_line(self, path, expected):
        proc = report(path)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        lines = [l for l in proc.stderr.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn(expected, lines[0])

    def test_wrong_foreign_truncated_missing(self):
        self.one_line(golden("broken_result.json"),
                      "not a fabricbench result (schema 'fabricbench.result/2', expected fabricbench.result/1)")
        foreign = os.path.join(self.dir.name, "foreign.json")
        with open(foreign, "w", encoding="utf-8") as f:
            f.write('{"schema": "foo/2"}')
        self.one_line(foreign, "foreign.json: not a fabricbench result (schema 'foo/2', expected fabricbench.result/1)")
        with open(golden("result.json"), encoding="utf-8") as f:
            text = f.read()
        truncated = os.path.join(self.dir.name, "cut.json")
        with open(truncated, "w", encoding="utf-8") as f:
            f.write(text[: len(text) // 2])
        self.one_line(truncated, "cut.json: truncated or not JSON: ")
        wrong = os.path.join(self.dir.name, "wrong.json")
        with open(wrong, "w", encoding="utf-8") as f:
            f.write(text.replace('"busbw_gbs": 3.145728', '"busbw_gbs": -1'))
        self.one_line(wrong, "wrong.json: records/0/busbw_gbs: -1 is less than the minimum 0")
        self.one_line(os.path.join(self.dir.name, "none.json"), "none.json: cannot read")

    def test_fifo_folder_oversized_and_dense_files_are_refused_at_once(self):
        # A fifo with no writer once hung report; a folder gave exit 4.
        fifo = os.path.join(self.dir.name, "pipe.json")
        os.mkfifo(fifo)
        self.one_line(fifo, "pipe.json: is a fifo, not a regular file; report reads result files only")
        self.one_line(self.dir.name, ": is a folder, not a regular file; report reads result files only")
        # Sparse: a size past the limit costs no disk.
        huge = os.path.join(self.dir.name, "huge.json")
        with open(huge, "wb") as f:
            f.truncate((1 << 30) + 1)
        self.one_line(huge, "huge.json: 1073741825 bytes, above the 1 GiB a result file may have")
        # Empty objects once took 38 bytes of memory per byte of file.
        dense = os.path.join(self.dir.name, "dense.json")
        with open(dense, "w", encoding="utf-8") as f:
            f.write("[" + ",".join(["{}"] * 1_000_000) + "]")
        self.one_line(dense, "dense.json: its JSON would take more than ")


class Outputs(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.html = os.path.join(self.dir.name, "report.html")
        self.csv = os.path.join(self.dir.name, "report.csv")

    def tearDown(self):
        self.dir.cleanup()

    def test_comparison_csv_and_html(self):
        proc = report(golden("run_a.json"), golden("run_a2.json"), golden("run_b.json"), "--csv", self.csv,
                      "--html", self.html)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("# Comparison", proc.stdout)
        self.assertIn("B/A", proc.stdout)
        with open(self.csv, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), 12)  # 6 points x 2 groups
        self.assertEqual(rows[0]["group"], "A")
        self.assertEqual(rows[0]["runs"], "2")
        self.assertEqual(rows[1]["label"], "cluster-b")
        self.assertAlmostEqual(float(rows[1]["busbw_ratio_to_first"]), 0.8 / 0.98, places=9)
        with open(self.html, encoding="utf-8") as f:
            page = f.read()
        for forbidden in ("<script", "<link", "url(", "src=", "href="):
            self.assertNotIn(forbidden, page)
        if shutil.which(ARGS.chromium) is None:
            self.skipTest(f"{ARGS.chromium} is not installed (scripts/setup.sh installs it)")
        profile = os.path.join(self.dir.name, "profile")
        shot = os.path.join(self.dir.name, "shot.png")
        base = [ARGS.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0"]
        dom = subprocess.run([*base, "--dump-dom", "file://" + self.html], capture_output=True, text=True, timeout=300)
        self.assertEqual(dom.returncode, 0, dom.stderr[-3000:])
        for marker in ("busbw-chart", "ladder-chart", "chart heatmap", 'id="verdict"', 'id="topology-0"', "<svg"):
            self.assertIn(marker, dom.stdout)
        self.assertGreaterEqual(dom.stdout.count("<svg"), 5)
        for bad in ("Uncaught", "CONSOLE"):
            self.assertNotIn(bad, dom.stderr, dom.stderr[-3000:])
        png = subprocess.run([*base, "--window-size=1200,1600", f"--screenshot={shot}", "file://" + self.html],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(png.returncode, 0, png.stderr[-3000:])
        self.assertGreater(os.path.getsize(shot), 10000)

    def test_charts_fit_their_boxes_at_1400_and_800_px(self):
        """Every chart text lies inside its chart, no caption or title is
        clipped and the page does not scroll sideways, measured by Chromium's
        own layout at a wide and a narrow window."""
        proc = report(golden("run_a.json"), golden("run_a2.json"), golden("run_b.json"), "--html", self.html)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        if shutil.which(ARGS.chromium) is None:
            self.skipTest(f"{ARGS.chromium} is not installed (scripts/setup.sh --test installs it)")
        with open(self.html, encoding="utf-8") as f:
            page = f.read()
        # The page has no script; a copy gets one that measures the layout
        # and writes what it finds into the DOM that --dump-dom prints.
        probe = os.path.join(self.dir.name, "probe.html")
        with open(probe, "w", encoding="utf-8") as f:
            f.write(page.replace("</body>", LAYOUT_PROBE + "</body>"))
        for width in (1400, 800):
            with self.subTest(width=width):
                profile = os.path.join(self.dir.name, f"profile-{width}")
                dom = subprocess.run(
                    [ARGS.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     f"--user-data-dir={profile}", f"--window-size={width},2000", "--dump-dom", "file://" + probe],
                    capture_output=True, text=True, timeout=300)
                self.assertEqual(dom.returncode, 0, dom.stderr[-3000:])
                start = dom.stdout.find('<pre id="layout-check">')
                self.assertNotEqual(start, -1, "the layout probe did not run")
                found = dom.stdout[start:dom.stdout.find("</pre>", start)].split(">", 1)[1]
                self.assertIn("checked", found)
                self.assertIn("problems 0\n", found, found)
                # The probe saw the charts it should: texts in every SVG.
                self.assertGreaterEqual(int(found.split("svgs ")[1].split()[0]), 5, found)


class Comparison(unittest.TestCase):
    """Several files: grouped by label, keyed by redop, no ratio in the
    noise, the comparison and its result line first; CSV of it and of every
    section."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def relabel(self, name, label):
        with open(golden(name), encoding="utf-8") as f:
            doc = json.load(f)
        doc["run"]["label"] = label
        path = os.path.join(self.dir.name, f"{label}-{name}")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        return path

    @staticmethod
    def groups(stdout):
        return [l for l in stdout.splitlines() if re.match(r"#   [A-Z]+: .*, \d+ runs? on ", l)]

    def test_two_labels_on_one_cluster_are_two_groups(self):
        proc = report(golden("run_healthy.json"), golden("run_slow.json"))
        self.assertIn(proc.returncode, (0, 1), proc.stderr)
        groups = self.groups(proc.stdout)
        self.assertEqual(len(groups), 2, proc.stdout[:3000])
        self.assertIn("A: healthy, 1 run on 2 nodes (mu-x, mu-y)", groups[0])
        self.assertIn("B: slow-node, 1 run on 2 nodes (mu-x, mu-y)", groups[1])

    def test_the_same_label_is_one_aggregated_group(self):
        proc = report(golden("run_a.json"), golden("run_a2.json"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        groups = self.groups(proc.stdout)
        self.assertEqual(len(groups), 1, proc.stdout[:3000])
        self.assertIn("A: cluster-a, 2 runs", groups[0])
        self.assertRegex(proc.stdout, r"\n  allreduce +float +sum +- +oop +1 MiB +44\.100±1\.273\n")
        # Relabelled, the same two files are two groups.
        proc = report(golden("run_a.json"), self.relabel("run_a2.json", "retest"))
        self.assertEqual(len(self.groups(proc.stdout)), 2, proc.stdout[:3000])

    def test_sum_and_max_rows_and_no_ratio_in_the_noise(self):
        proc = report(golden("run_healthy.json"), golden("run_slow.json"))
        rows = [l.split() for l in proc.stdout.splitlines() if l.startswith("  allreduce ") and l.split()[1] == "float"]
        sums = [r for r in rows if r[2] == "sum"]
        maxes = [r for r in rows if r[2] == "max"]
        self.assertEqual(len(sums), 4, rows)
        self.assertEqual(len(maxes), 3, rows)
        tiny = [r for r in sums if r[5] == "8" and r[6] == "B"]
        self.assertEqual(len(tiny), 1, rows)
        self.assertEqual(tiny[0][-1], "~")  # 0.0005 against 0.02 GB/s: noise, not "40x"
        for r in rows:
            if r is not tiny[0]:
                self.assertEqual(r[-1], "0.59", r)
        self.assertIn("# ~: within noise, no ratio", proc.stdout)

    def test_the_comparison_and_its_result_come_first(self):
        proc = report(golden("run_healthy.json"), golden("run_slow.json"))
        out = proc.stdout
        result = out.find("# Result: B (slow-node) vs A (healthy): allreduce 41% lower busbw, allgather 41% lower "
                          "busbw at >= 1 MiB (geometric mean); link mu-x -> mu-y 15.0x slower")
        self.assertNotEqual(result, -1, out[:3000])
        self.assertEqual(out.find("# Comparison of 2 groups"), 0, out[:500])
        first_file = out.find("# " + golden("run_healthy.json") + ": fabricbench")
        self.assertNotEqual(first_file, -1)
        self.assertLess(result, first_file)
        self.assertLess(out.find("# Topology comparison"), first_file)

    def test_comparison_csv_carries_group_label_and_key(self):
        path = os.path.join(self.dir.name, "cmp.csv")
        proc = report(golden("run_healthy.json"), golden("run_slow.json"), "--csv", path)
        self.assertIn(proc.returncode, (0, 1), proc.stderr)
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        keys = {"group", "label", "files", "op", "dtype", "redop", "root", "placement", "bytes", "runs",
                "busbw_gbs_mean", "busbw_ratio_to_first", "noise"}
        self.assertTrue(keys <= set(rows[0]), rows[0].keys())
        slow = [r for r in rows if r["group"] == "B"]
        self.assertEqual({r["label"] for r in slow}, {"slow-node"})
        self.assertEqual({r["redop"] for r in slow if r["op"] == "allreduce"}, {"sum", "max"})
        tiny = [r for r in slow if r["bytes"] == "8"]
        self.assertEqual(len(tiny), 1)
        self.assertEqual(tiny[0]["busbw_ratio_to_first"], "")
        self.assertEqual(tiny[0]["noise"], "below noise floor")
        # The rows' keys are unique per group: nothing merged, nothing doubled.
        key = lambda r: (r["group"], r["op"], r["dtype"], r["redop"], r["root"], r["placement"], r["bytes"])
        self.assertEqual(len({key(r) for r in rows}), len(rows))

    def test_one_file_csv_writes_every_section_beside_its_records(self):
        path = os.path.join(self.dir.name, "slow.csv")
        proc = report(golden("run_slow.json"), "--csv", path)
        self.assertIn(proc.returncode, (0, 1), proc.stderr)
        with open(path, newline="", encoding="utf-8") as f:
            records = list(csv.DictReader(f))
        self.assertEqual(len(records), 10)
        expected = {"ladder": 6, "pairs": 2, "findings": 1, "projection": 2}
        for section, count in expected.items():
            with self.subTest(section=section):
                with open(os.path.join(self.dir.name, f"slow.{section}.csv"), newline="", encoding="utf-8") as f:
                    rows = list(csv.DictReader(f))
                self.assertEqual(len(rows), count)
                for r in rows:
                    self.assertEqual(r["label"], "slow-node")
                    self.assertEqual(r["start_utc"], "2026-02-02T09:00:00Z")
                    self.assertEqual(r["hostnames"], "mu-x mu-y")
                    self.assertNotIn(None, r.values())  # as many cells as columns
        names = sorted(os.listdir(self.dir.name))
        self.assertEqual(names, sorted(["slow.csv"] + [f"slow.{s}.csv" for s in expected]))
        with open(os.path.join(self.dir.name, "slow.pairs.csv"), newline="", encoding="utf-8") as f:
            links = {(r["from_host"], r["to_host"]): float(r["bandwidth_gbs"]) for r in csv.DictReader(f)}
        self.assertAlmostEqual(links[("mu-x", "mu-y")], 376.0 / 15, places=9)

    def test_a_section_file_that_is_the_input_is_refused(self):
        source = os.path.join(self.dir.name, "s.pairs.csv")  # a result file under an odd name
        shutil.copy(golden("run_slow.json"), source)
        proc = report(source, "--csv", os.path.join(self.dir.name, "s.csv"))
        self.assertEqual(proc.returncode, 2, proc.stderr)
        lines = [l for l in proc.stderr.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn("--csv (pairs section) ", lines[0])
        self.assertIn("is an input of this report", lines[0])
        self.assertEqual(sorted(os.listdir(self.dir.name)), ["s.pairs.csv"])


# Checks, in the rendered page: each SVG text inside its SVG's box; each
# caption, chart title and legend not cut (scrollWidth within clientWidth);
# the document no wider than the window.
LAYOUT_PROBE = """<pre id="layout-check"></pre><script>
(function () {
  var problems = [];
  var svgs = document.querySelectorAll('svg');
  svgs.forEach(function (svg, i) {
    var box = svg.getBoundingClientRect();
    svg.querySelectorAll('text').forEach(function (t) {
      var r = t.getBoundingClientRect();
      if (r.width === 0) return;
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
        problems.push('svg ' + i + ' (' + (svg.closest('figure') || {}).id + '): text "' + t.textContent +
                      '" outside its chart');
    });
  });
  document.querySelectorAll('figcaption, .chart-title, .legend, figure').forEach(function (e) {
    if (e.scrollWidth > e.clientWidth + 1) problems.push(e.tagName + ' ' + (e.id || e.className) + ' clipped');
  });
  if (document.documentElement.scrollWidth > window.innerWidth + 1)
    problems.push('page wider than the window: ' + document.documentElement.scrollWidth + ' > ' + window.innerWidth);
  document.getElementById('layout-check').textContent =
      'checked svgs ' + svgs.length + '\\nproblems ' + problems.length + '\\n' + problems.join('\\n');
})();
</script>
"""


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--golden", required=True)
    parser.add_argument("--chromium", default="chromium")
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v", *rest])
