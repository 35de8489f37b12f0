#!/usr/bin/env python3
"""Writes the report fixtures run_a.json, run_a2.json, run_b.json,
run_healthy.json and run_slow.json.

Two runs of cluster A labelled "cluster-a" (2 nodes of 8 H100 GPUs, 8 NDR
NICs each; the second run a little slower, for mean and spread) and one run
of cluster B labelled "cluster-b" (other hosts, 400 Gb/s NICs at a lower
bandwidth, one slow link). Then one cluster run twice under two labels:
"healthy", and "slow-node" with one node's link 15x slower and busbw 41%
lower; both sweep all-reduce with sum and max and an 8-byte point whose busbw
is near zero (the slow run's 40x the healthy one's: noise, not a ratio). Values are
invented but consistent with the schema and with each other (busbw =
algbw x the nccl-tests factor). Run from this directory; the unit and e2e
tests read the files, and the schema tests validate them. The files are in
the writer's own form: ResultModel.GoldenFilesRoundTripByteForByte reads
each one and writes it back, and fails on any byte that differs (so a member
added to a record's field list is added here too, or that test says where).
"""
import copy
import json


def gpu(i, h2d):
    return {"index": i, "pci_bus_id": f"0000:{0x18 + i * 0x10:02x}:00.0", "name": "NVIDIA H100 80GB HBM3",
            "uuid": f"GPU-0000000{i}", "memory_bytes": 85520809984, "sm_count": 132, "numa_node": i // 4,
            "pcie": {"current_gen": 5, "max_gen": 5, "current_width": 16, "max_width": 16},
            "nvlinks": [{"link": k, "active": True, "version": 4, "remote_pci": None, "remote_kind": "switch"}
                        for k in range(2)],
            "mig_mode": "disabled", "ecc_mode": "enabled", "h2d_gbs": h2d, "d2h_gbs": h2d - 1.5,
            "local_copy_gbs": 1400.0}


def nic(i, rate):
    return {"name": f"mlx5_{i}", "kind": "infiniband", "pci_address": f"0000:{0x1a + i * 0x10:02x}:00.0",
            "bus": "pci", "driver": "mlx5_core", "numa_node": i // 4, "firmware": "28.39.1002",
            "ports": [{"port": 1, "state": "ACTIVE", "phys_state": "LinkUp", "rate_gbps": rate,
                       "link_layer": "InfiniBand"}],
            "netdevs": [f"ib{i}"], "speed_gbps": None, "mtu": 4096, "operstate": "up"}


def node(host, h2d, rate):
    return {"host": {"hostname": host, "cpu_model": "Intel Xeon Platinum 8480+", "sockets": 2, "cores": 112,
                     "threads": 224, "memory_bytes": 2164392968192, "numa_nodes": 2,
                     "os": "Ubuntu 22.04.4 LTS", "kernel": "5.15.0-105-generic", "gpu_driver": "550.54.15"},
            "gpu_status": None, "gpus": [gpu(i, h2d) for i in range(8)], "nics": [nic(i, rate) for i in range(8)],
            "gpudirect_rdma": {"status": "ready", "module": "nvidia_peermem", "dma_buf": True},
            "gpu_matrix": [], "nic_matrix": [], "nearest_nic": [], "p2p_access": [], "p2p_rank": [],
            "d2d_gbs": [], "method": "cudaMemcpyAsync, pinned host memory, 256 MiB", "notes": []}


def factor(op, n):
    return 2.0 * (n - 1) / n if op == "allreduce" else (n - 1) / n if op == "allgather" else 1.0


def record(op, size, busbw, n=16, redop="sum"):
    f = factor(op, n)
    algbw = busbw / f
    t = size / algbw / 1e3
    return {"op": op, "dtype": "float", "redop": redop if op == "allreduce" else None, "root": None,
            "placement": "out_of_place", "bytes": size, "count": size // 4 // (n if op == "allgather" else 1),
            "ranks": n, "time_us": t, "time_min_us": t * 0.98, "time_max_us": t * 1.02, "p50_us": t,
            "p99_us": t * 1.1, "cv": 0.02, "algbw_gbs": algbw, "busbw_gbs": busbw, "iterations": 50, "wrong": 0}


def run(hosts, scale, start, link_bw, slow_link=None, h2d=53.0, rate=400.0, duration=95.5, label=None,
        link_factor=0.4, redops=False, tiny_busbw=None):
    doc = {
        "schema": "fabricbench.result/1",
        "tool": {"name": "fabricbench", "version": "0.1.0", "git": "0123456789ab", "transports": ["mpi", "nccl"],
                 "libraries": {"nccl_runtime": "2.21.5"}},
        "run": {"start_utc": start, **({"label": label} if label else {}), "command_line": ["fabricbench", "run", "--price-per-gpu-hour", "2.5"],
                "ranks": 16, "nodes": 2, "ranks_per_node": [8, 8], "hostnames": hosts, "transport": "nccl",
                "environment": {"NCCL_IB_HCA": "mlx5"}, "cost": {"price_per_gpu_hour": 2.5}},
        "status": {"complete": True, "checked": True, "wrong_elements": 0, "data_ok": True, "duration_s": duration},
        "records": [],
    }
    sizes = [1 << 20, 16 << 20, 256 << 20]
    for op, peak in (("allreduce", 180.0), ("allgather", 170.0)):
        if tiny_busbw is not None and op == "allreduce":
            doc["records"].append(record(op, 8, tiny_busbw))
        for k, size in enumerate(sizes):
            doc["records"].append(record(op, size, peak * scale * (0.25, 0.7, 1.0)[k]))
        if redops and op == "allreduce":
            # max reduces at its own rate: a row of its own, never merged with sum.
            for k, size in enumerate(sizes):
                doc["records"].append(record(op, size, peak * scale * 0.9 * (0.25, 0.7, 1.0)[k], redop="max"))
    levels = []
    for op, one, two in (("allreduce", 370.0, 180.0), ("allgather", 330.0, 170.0)):
        for nodes, bw in ((1, one), (2, two)):
            b = bw * scale
            groups = [{"group": g, "nodes": [g] if nodes == 1 else [0, 1], "hosts": [hosts[g]] if nodes == 1 else hosts,
                       "ranks": 8 * nodes, "time_us": 1000.0 / scale, "busbw_gbs": b, "wrong": 0}
                      for g in range(2 // nodes)]
            levels.append({"kind": "nodes", "op": op, "bytes": 256 << 20, "nodes_per_group": nodes,
                           "ranks_per_group": 8 * nodes, "groups": groups, "busbw_min_gbs": b, "busbw_median_gbs": b,
                           "efficiency": b / (one * scale), "ceiling_gbs": 50.0 * 8 / 8 * 8,
                           "ceiling_fraction": b / 400.0, "warning": None})
    step1 = 120.0 + 0.9 / scale
    step2 = 120.0 + 14.0 / scale
    doc["scaling"] = {"bytes": 256 << 20, "ranks_per_node": 8, "nic_gbit_per_node": 3200.0, "levels": levels,
                      "projection": {"grad_bytes": 1 << 30, "compute_ms": 120.0, "overlap": 0.0, "sharded": False,
                                     "points": [{"nodes": 1, "gpus": 8, "comm_ms": step1 - 120.0, "step_ms": step1,
                                                 "speedup": 8 * 120.0 / step1, "efficiency": 120.0 / step1},
                                                {"nodes": 2, "gpus": 16, "comm_ms": step2 - 120.0, "step_ms": step2,
                                                 "speedup": 16 * 120.0 / step2, "efficiency": 120.0 / step2}]}}
    links = []
    for a in range(2):
        for b in range(2):
            if a != b:
                bw = link_bw * (link_factor if slow_link == (a, b) else 1.0)
                links.append({"from": a, "to": b, "bandwidth_gbs": bw, "latency_us": 4.5})
    doc["pairs"] = {"bytes": 64 << 20, "small_bytes": 8, "rounds": [0], "mode": "full", "rounds_planned": 1,
                    "ranks_per_node": 8, "hosts": hosts, "links": links, "intra_node": [], "rails": [], "wrong": 0}
    doc["findings"] = []
    if slow_link:
        a, b = slow_link
        doc["findings"].append({"kind": "slow_link", "nodes": [a, b], "hosts": [hosts[a], hosts[b]],
                                "value_gbs": link_bw * link_factor, "reference_gbs": link_bw,
                                "message": f"slow link {hosts[a]} -> {hosts[b]}: {link_bw * link_factor:.1f} GB/s, "
                                           f"median {link_bw:.1f} GB/s", "metric": "bandwidth",
                                "confirmed": True})
    nodes = [node(h, h2d, rate) for h in hosts]
    sig = "8x NVIDIA H100 80GB HBM3 | 8x infiniband 400 Gb/s | GPUDirect RDMA ready"
    doc["topology"] = {"nodes": nodes, "groups": [{"signature": sig, "hosts": hosts}], "anomalies": [], "notes": []}
    # The writer's key order, so the files read back and write out unchanged.
    order = ("schema", "tool", "run", "status", "records", "topology", "scaling", "pairs", "findings")
    return {key: doc[key] for key in order if key in doc}


LINE_LIMIT = 100


def scalar(v):
    return json.dumps(v, ensure_ascii=False)


def is_scalar(v):
    return not isinstance(v, (dict, list)) or not v


def layout(v, depth=0):
    """The writer's layout (src/core/json_layout.cpp): indented by 2, a container
    of scalars on one line when it fits in 100 characters, a longer array of
    scalars packed as many to a line as fit."""
    if is_scalar(v):
        return scalar(v)
    items = list(v.items()) if isinstance(v, dict) else list(v)
    if all(is_scalar(x[1] if isinstance(v, dict) else x) for x in items):
        parts = [f"{scalar(k)}: {scalar(x)}" for k, x in items] if isinstance(v, dict) else [scalar(x) for x in items]
        line = ("{" if isinstance(v, dict) else "[") + ", ".join(parts) + ("}" if isinstance(v, dict) else "]")
        if len(line) <= LINE_LIMIT:
            return line
    inner, outer = "  " * (depth + 1), "  " * depth
    if isinstance(v, list) and all(is_scalar(x) for x in v):
        lines, width = [], 0
        for x in (scalar(x) for x in v):
            if lines and width + len(x) + 2 <= LINE_LIMIT:
                lines[-1] += ", " + x
                width += len(x) + 2
            else:
                lines.append(x)
                width = len(x)
        return "[\n" + inner + (",\n" + inner).join(lines) + "\n" + outer + "]"
    if isinstance(v, dict):
        body = [f"{scalar(k)}: {layout(x, depth + 1)}" for k, x in items]
        return "{\n" + inner + (",\n" + inner).join(body) + "\n" + outer + "}"
    return "[\n" + inner + (",\n" + inner).join(layout(x, depth + 1) for x in items) + "\n" + outer + "]"


def main():
    a = run(["a-node-1", "a-node-2"], 1.0, "2026-01-05T10:00:00Z", 376.0, label="cluster-a")
    a2 = run(["a-node-1", "a-node-2"], 0.96, "2026-01-05T11:00:00Z", 372.0, duration=97.25, label="cluster-a")
    b = run(["b-node-1", "b-node-2"], 0.8, "2026-01-06T09:30:00Z", 300.0, slow_link=(1, 0), h2d=41.0,
            label="cluster-b")
    mu = ["mu-x", "mu-y"]
    healthy = run(mu, 1.0, "2026-02-02T08:00:00Z", 376.0, label="healthy", redops=True, tiny_busbw=0.0005)
    slow = run(mu, 0.59, "2026-02-02T09:00:00Z", 376.0, slow_link=(0, 1), link_factor=1 / 15, label="slow-node",
               redops=True, tiny_busbw=0.02)
    b["topology"]["anomalies"].append({"kind": "h2d_slow", "host": "b-node-2", "device": "GPU 3 (0000:48:00.0)",
                                       "detail": "host-to-device 41.0 GB/s, below 75% of the peers' median"})
    for name, doc in (("run_a.json", a), ("run_a2.json", a2), ("run_b.json", b), ("run_healthy.json", healthy),
                      ("run_slow.json", slow)):
        with open(name, "w", encoding="utf-8") as f:
            f.write(layout(doc) + "\n")


if __name__ == "__main__":
    main()
