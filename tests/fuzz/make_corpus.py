#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets.

Seeds come from the golden files (tests/golden) and from reproducers of the
defects found by the reliability review (a pair-link endpoint of 2^63-1,
hosts=[] with intra-node links, deep nesting, huge strings, 1e309,
overflowing integers, forged folder-group files, ...). Each file goes to
corpus/<target>/, which ctest replays: every reproducer of a fixed defect
stays a regression test. Should a reproducer of a defect not fixed yet be
kept in known-crash/<target>/ (see scripts/fuzz.sh), a file of the same name
there is rewritten in place instead.

Usage: tests/fuzz/make_corpus.py   (rewrites the files; the output is committed)
"""
import copy
import json
import pathlib
import struct

HERE = pathlib.Path(__file__).resolve().parent
GOLDEN = HERE.parent / "golden"
EXPECTATIONS = HERE.parents[1] / "src" / "data" / "expectations.json"


def put(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    known = HERE / "known-crash" / target / name
    path = known if known.exists() else HERE / "corpus" / target / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def dumps(doc):
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def result_reader():
    t = "result_reader"
    for name in ("result.json", "run_a.json", "run_a2.json", "run_b.json", "broken_result.json"):
        put(t, "golden-" + name, (GOLDEN / name).read_bytes())
    base = json.loads((GOLDEN / "run_a.json").read_text())
    text = (GOLDEN / "result.json").read_text()
    put(t, "truncated.json", text[: len(text) // 2])
    put(t, "not-json.txt", "fabricbench\n")
    put(t, "empty.json", "")
    put(t, "array.json", "[]\n")
    put(t, "foreign-schema.json", '{"schema": "fabricbench.result/2"}\n')

    def variant(name, change):
        doc = copy.deepcopy(base)
        change(doc)
        put(t, name, dumps(doc))

    big = 2**63 - 1
    # Finding 1: endpoints read with get<int> wrap and index outside the matrix.
    variant("pair-link-from-2p63m1.json", lambda d: d["pairs"]["links"][0].update({"from": big}))
    variant("pair-link-to-2p63m1.json", lambda d: d["pairs"]["links"][0].update({"to": big}))
    variant("intra-node-to-2p63m1.json", lambda d: d["pairs"].update(
        {"intra_node": [{"node": 0, "host": "a-node-1",
                         "links": [{"from": 0, "to": big, "bandwidth_gbs": 1.0, "latency_us": 1.0}]}]}))
    variant("pair-link-from-4294967296.json", lambda d: d["pairs"]["links"][0].update({"from": 2**32}))
    # Finding 8: no hosts, yet links within a node.
    variant("pairs-hosts-empty-intra-node.json", lambda d: d["pairs"].update(
        {"hosts": [], "links": [], "intra_node": [{"node": 0, "host": "a-node-1",
                                                   "links": [{"from": 0, "to": 1, "bandwidth_gbs": 1.0,
                                                              "latency_us": 1.0}]}]}))
    variant("intra-node-node-7.json", lambda d: d["pairs"].update(
        {"intra_node": [{"node": 7, "host": "a-node-1",
                         "links": [{"from": 0, "to": 1, "bandwidth_gbs": 1.0, "latency_us": 1.0}]}]}))
    # Finding 6: deep nesting in a free-form field; a long string under a pattern.
    deep = 100000
    doc = copy.deepcopy(base)
    doc["run"]["environment"]["NCCL_DEEP"] = "@DEEP@"
    put(t, "nested-100000.json", dumps(doc).replace('"@DEEP@"', "[" * deep + "]" * deep))
    doc = copy.deepcopy(base)
    doc["run"]["environment"]["NCCL_DEEP"] = "@DEEP@"
    put(t, "nested-50.json", dumps(doc).replace('"@DEEP@"', "[" * 50 + "]" * 50))
    variant("version-100k-digits.json", lambda d: d["tool"].update({"version": "9" * 100000}))
    # Finding 7: uniqueItems over 100,000 distinct items.
    variant("transports-100000-items.json", lambda d: d["tool"].update({"transports": list(range(100000))}))
    variant("transports-duplicate.json", lambda d: d["tool"].update({"transports": ["mpi", "mpi"]}))
    # Finding 9: per-record wrong elements; integers beyond the reader's types.
    variant("record-wrong-7-status-0.json", lambda d: d["records"][0].update({"wrong": 7}))
    variant("run-ranks-4294967297.json", lambda d: d["run"].update({"ranks": 2**32 + 1}))
    variant("record-bytes-1e20.json", lambda d: d["records"][0].update({"bytes": 1e20}))
    variant("record-iterations-2p32.json", lambda d: d["records"][0].update({"iterations": 2**32}))
    variant("hosts-2000.json", lambda d: d["pairs"].update({"hosts": [f"h{i}" for i in range(2000)]}))
    # Finding 10: spreadsheet formulas and terminal escapes from the file.
    def formula(d):
        r = d["records"][0]
        for k in ("time_us", "time_min_us", "time_max_us", "p50_us", "p99_us", "cv", "algbw_gbs", "busbw_gbs",
                  "iterations", "wrong"):
            r.pop(k, None)
        r["skipped"] = '=HYPERLINK("http://example.invalid","x")'
    variant("record-skipped-formula.json", formula)
    variant("hostname-escape.json", lambda d: d["run"]["hostnames"].__setitem__(0, "a-node-1\u001b[2J\u0007"))
    # Finding 11: a number beyond double.
    put(t, "time-1e309.json", dumps(base).replace('"time_us": 43.690666666666665', '"time_us": 1e309', 1))
    # Round three: a file denser in memory than any result (empty objects,
    # which once took 38 bytes per byte); long keys and strings, whose grown
    # capacity the parser's accounting once left out; a busbw near the
    # largest double, which once drew "-nan" coordinates in the HTML.
    put(t, "dense-empty-objects.json", "[" + ",".join(["{}"] * 20000) + "]\n")
    put(t, "long-keys-and-strings.json", "{" + ",".join(
        f'"{"k" * 32}{i}": "{"v" * 39}"' for i in range(1000)) + "}\n")
    variant("busbw-1p79e308.json", lambda d: [r.update({"busbw_gbs": 1.79e308}) for r in d["records"]
                                              if "busbw_gbs" in r])
    # Strings that are bytes: a host name and an environment name listed
    # under byte_strings, and lists that point nowhere or at a non-byte.
    def byte_strings(d, listed):
        d["run"]["hostnames"][0] = "node-\u00ff\u00c3"
        d["run"]["environment"]["NCCL_\u00feX"] = "1"
        d["byte_strings"] = listed
    variant("byte-strings.json", lambda d: byte_strings(
        d, {"values": ["/run/hostnames/0"], "names": ["/run/environment/NCCL_\u00feX"]}))
    variant("byte-strings-nowhere.json", lambda d: byte_strings(d, {"values": ["/run/no/such"]}))
    variant("byte-strings-above-ff.json", lambda d: [byte_strings(d, {"values": ["/run/hostnames/0"]}),
                                                     d["run"]["hostnames"].__setitem__(0, "\u0100")])


def gate():
    t = "gate"
    seeds = [
        "allreduce.busbw>=350", "allreduce.algbw@64M>10", "allgather.time_us<=1000", "sendrecv.p50_us<5",
        "reducescatter.p99_us@1K==3", "scale.efficiency@2>=0.9", "scale.busbw>=1", "scale.busbw_min@4>1",
        "pairs.bandwidth>=100", "pairs.latency_us<=10", "pairs.findings==0", "topo.h2d_gbs>=20",
        "topo.d2h_gbs>20", "topo.local_copy_gbs>1", "topo.gpus==8", "topo.anomalies<=0",
        "allreduce.busbw>=1e309", "allreduce.busbw@18446744073709551615>=1", "allreduce.busbw@16E>=1",
        "scale.efficiency@0>=1", "scale.efficiency@-1>=1", "allreduce.busbw>=nan", "allreduce.busbw>=inf",
        "allreduce.bw>=3", "allreduce.busbw", "allreduce.busbw@>=1", ".>=1", "=", "",
    ]
    for i, s in enumerate(seeds):
        put(t, f"seed-{i:02d}.txt", s)


def size():
    t = "size"
    seeds = ["8", "1K", "64M", "2G", "1T", "2GB", "4kb", "0", "18446744073709551615", "18446744073709551616",
             "18446744073709551612", "16777216T", "17179869184G", "-1", "1.5M", "", " 8", "8 ", "1KiB", "1E"]
    for i, s in enumerate(seeds):
        put(t, f"seed-{i:02d}.txt", s)


def expectations():
    t = "expectations"
    text = EXPECTATIONS.read_text()
    put(t, "builtin.json", text)
    base = json.loads(text)

    def variant(name, change):
        doc = copy.deepcopy(base)
        change(doc)
        put(t, name, dumps(doc))

    variant("gpus-per-node-2p63.json", lambda d: d["references"][0]["match"].update({"gpus_per_node": 2**63}))
    variant("pcie-gen-1e20.json", lambda d: d["references"][-1]["match"].update({"pcie_gen": 1e20}))
    variant("no-source.json", lambda d: d["references"][0].update({"source": ""}))
    variant("no-references.json", lambda d: d.update({"references": []}))
    variant("warn-at-negative.json", lambda d: d.update({"warn_at": -1}))
    variant("point-bytes-negative.json", lambda d: d["references"][0]["points"][0].update({"bytes": -1}))
    variant("point-bytes-2p64.json", lambda d: d["references"][0]["points"][0].update({"bytes": 2**64}))
    variant("points-descending.json", lambda d: d["references"][0].update(
        {"points": [{"bytes": 2**30, "gbs": 10}, {"bytes": 2**20, "gbs": 5}]}))
    variant("points-empty.json", lambda d: d["references"][0].update({"points": []}))
    variant("points-object.json", lambda d: d["references"][0].update({"points": {"bytes": 1}}))
    variant("gbs-high-below-gbs.json", lambda d: d["references"][0]["points"][0].update({"gbs_high": 1}))
    variant("nodes-2p31.json", lambda d: d["references"][0]["match"].update({"nodes": 2**31}))
    variant("algorithm-number.json", lambda d: d["references"][0]["match"].update({"algorithm": 7}))
    # The format before reference curves: one figure per reference.
    variant("version-1.json", lambda d: d.update({"schema": "fabricbench.expectations/1", "references": [
        {k: v for k, v in r.items() if k not in ("points", "when_algorithm_unknown")} | {"min_bytes": r["points"][0]["bytes"],
                                                        "expected_gbs": r["points"][0]["gbs"]}
        for r in d["references"]]}))
    variant("min-bytes-negative.json", lambda d: d.update({"schema": "fabricbench.expectations/1", "references": [
        {k: v for k, v in d["references"][0].items() if k != "points"} | {"min_bytes": -1, "expected_gbs": 1}]}))
    put(t, "rate-1e309.json", text.replace('"warn_at": 0.9', '"warn_at": 1e309', 1))
    put(t, "foreign.json", '{"schema": "other"}\n')


def folder_group():
    t = "folder_group"

    def encode(n, chunks, abort=False):
        out = bytes([n - 2, 1 if abort else 0])
        for c in chunks:
            c = c.encode() if isinstance(c, str) else c
            out += struct.pack("<H", len(c)) + c
        return out

    def i32(*v):
        return struct.pack("<%di" % len(v), *v)

    def i64(*v):
        return struct.pack("<%dq" % len(v), *v)

    def f64(*v):
        return struct.pack("<%dd" % len(v), *v)

    def world(n, hosts, splits, leaders, locals_, extra_rounds=True):
        """Rounds 0..9 of ranks 1..n-1, in the order the target reads them."""
        rounds = [hosts, [i32(*s) for s in splits], hosts, leaders, locals_]
        if extra_rounds:
            rounds += [[""] * (n - 1), [i64(5) if r == 1 else "" for r in range(1, n)],
                       [f64(1.0, 2.0)] * (n - 1), [i64(7)] * (n - 1), ["done"] * (n - 1)]
        return [c for rnd in rounds for c in rnd]

    # Four ranks: 1 and 2 on host hb, 3 on hc; rank 0 alone on its host.
    good = world(4, ["hb", "hb", "hc"], [(1, 1), (1, 2), (3, 3)], ["1", "1", "3"], ["0", "1", "0"])
    put(t, "four-ranks-three-nodes.bin", encode(4, good))
    # Two ranks on one node: rank 1 joins rank 0's node group (index 1).
    two = world(2, ["hx"], [(0, 1)], ["0"], ["1"]) + [""]
    put(t, "two-ranks-one-node.bin", encode(2, two))
    put(t, "eight-ranks.bin", encode(8, world(8, [f"h{r}" for r in range(1, 8)], [(r, r) for r in range(1, 8)],
                                              [str(r) for r in range(1, 8)], ["0"] * 7)))
    put(t, "missing-round.bin", encode(4, good[:10]))
    put(t, "abort-plain.bin", encode(4, good[:3] + ["rank 2: out of memory\n"], abort=True))
    put(t, "split-record-short.bin", encode(2, ["hx", "\x01"]))
    put(t, "broadcast-wrong-size.bin", encode(2, world(2, ["hx"], [(1, 1)], ["1"], ["0"])[:5] + ["", "abc"]))
    # Finding 4: forged files.
    put(t, "leader-out-of-range.bin", encode(4, world(4, ["hb", "hb", "hc"], [(1, 1), (1, 2), (3, 3)],
                                                      ["1", "99", "3"], ["0", "1", "0"])))
    put(t, "leader-negative.bin", encode(4, world(4, ["hb", "hb", "hc"], [(1, 1), (1, 2), (3, 3)],
                                                  ["1", "-5", "3"], ["0", "1", "0"])))
    put(t, "leader-not-a-number.bin", encode(4, world(4, ["hb", "hb", "hc"], [(1, 1), (1, 2), (3, 3)],
                                                      ["1", "one", "3"], ["0", "1", "0"])))
    put(t, "local-rank-overflow.bin", encode(4, world(4, ["hb", "hb", "hc"], [(1, 1), (1, 2), (3, 3)],
                                                      ["1", "1", "3"], ["0", "99999999999", "0"])))
    put(t, "abort-escape.bin", encode(4, good[:3] + ["rank 2: \x1b[2J\x1b]0;owned\x07\n"], abort=True))


if __name__ == "__main__":
    result_reader()
    gate()
    size()
    expectations()
    folder_group()
