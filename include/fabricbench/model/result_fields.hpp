#pragma once
// The field lists of the result records (core/json_fields.hpp says how they
// are walked): each member once, under its JSON key, in key order. The JSON
// writer and reader (model/result_json.hpp) and the CSV columns
// (model/result_csv.hpp) all follow them, so a new member of one of these
// records is one line here, plus its entry in src/schema/result.schema.json
// (a test checks the two agree).

#include <concepts>
#include <optional>
#include <string_view>
#include <type_traits>

#include "fabricbench/core/json_fields.hpp"
#include "fabricbench/core/types.hpp"
#include "fabricbench/model/result.hpp"

namespace fabricbench {

// ---- names of the closed sets, read back ----------------------------------

inline std::optional<Op> from_name(std::string_view text, fields::tag<Op>) { return parse_op(text); }
inline std::optional<DType> from_name(std::string_view text, fields::tag<DType>) {
  // Only the names this build writes: an alias ("double") is command-line spelling.
  const std::optional<DType> d = parse_dtype(text);
  return d && name(*d) == text ? d : std::nullopt;
}
inline std::optional<RedOp> from_name(std::string_view text, fields::tag<RedOp>) { return parse_redop(text); }
inline std::optional<Placement> from_name(std::string_view text, fields::tag<Placement>) {
  for (const Placement p : {Placement::out_of_place, Placement::in_place})
    if (text == name(p)) return p;
  return std::nullopt;
}
inline std::optional<LevelKind> from_name(std::string_view text, fields::tag<LevelKind>) {
  for (const LevelKind k : {LevelKind::nodes, LevelKind::rail})
    if (text == name(k)) return k;
  return std::nullopt;
}
inline std::optional<Phase> from_name(std::string_view text, fields::tag<Phase>) {
  for (const Phase p : {Phase::health, Phase::sweep, Phase::ladder, Phase::gpu_ladder, Phase::pairs})
    if (text == name(p)) return p;
  return std::nullopt;
}
inline std::optional<FindingKind> from_name(std::string_view text, fields::tag<FindingKind>) {
  for (const FindingKind k : {FindingKind::slow_node, FindingKind::slow_link})
    if (text == name(k)) return k;
  return std::nullopt;
}
inline std::optional<P2PTest> from_name(std::string_view text, fields::tag<P2PTest>) {
  // Only the names this build writes.
  const std::optional<P2PTest> t = parse_p2p_test(text);
  return t && name(*t) == text ? t : std::nullopt;
}
inline std::optional<GpuSetChoice> from_name(std::string_view text, fields::tag<GpuSetChoice>) {
  return parse_gpu_set_choice(text);
}
inline std::string_view name(RankTime choice) { return choice_name(choice); }
inline std::optional<RankTime> from_name(std::string_view text, fields::tag<RankTime>) {
  return parse_choice<RankTime>(text);
}

// ---- sweep ----------------------------------------------------------------

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, Timing>
void fields_of(Self& t, Field&& field) {
  field("time_us", t.time_us);
  field("time_min_us", t.time_min_us);
  field("time_max_us", t.time_max_us);
  field("p50_us", t.p50_us);
  field("p99_us", t.p99_us);
  field("cv", t.cv);
  field("algbw_gbs", t.algbw_gbs);
  field("busbw_gbs", t.busbw_gbs);
  field("iterations", t.iterations);
  field("precision", fields::omitted(t.precision));
  field("precision_met", fields::omitted(t.precision_met));
  field("wrong", t.wrong);
}

// Where a measured point's time went (rank 0's clock, ms).
template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, PointCost>
void fields_of(Self& c, Field&& field) {
  field("spent_fill_ms", c.fill_ms);
  field("spent_check_ms", c.check_ms);
  field("spent_warmup_ms", c.warmup_ms);
  field("spent_timed_ms", c.timed_ms);
  field("spent_samples_ms", c.samples_ms);
  field("spent_agree_ms", c.agree_ms);
  field("spent_total_ms", c.total_ms);
  field("warmups", c.warmups);
  field("batches", c.batches);
}

// Where the sweep's time went (rank 0, s); timed_share is derived.
template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, SweepCost>
void fields_of(Self& c, Field&& field) {
  field("wall_s", c.wall_s);
  field("points", c.points);
  field("fill_s", c.fill_s);
  field("check_s", c.check_s);
  field("warmup_s", c.warmup_s);
  field("timed_s", c.timed_s);
  field("samples_s", c.samples_s);
  field("agree_s", c.agree_s);
  field("output_s", c.output_s);
  field("other_s", c.other_s);
  field("timed_share", fields::written(c.timed_share()));
}

// A measured point carries its timing's members; a skipped one says why.
// Either may say the budget cut it (fewer iterations, or skipped).
template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, SweepRecord>
void fields_of(Self& r, Field&& field) {
  field("op", r.op);
  field("dtype", r.dtype);
  field("redop", r.redop);
  field("root", r.root);
  field("placement", r.placement);
  field("bytes", r.bytes);
  field("count", r.count);
  field("ranks", r.ranks);
  field(fields::inlined(r.timing));
  field("cut", fields::omitted(r.cut));
  field(fields::inlined(r.choice));
  field(fields::inlined(r.nic_wire));
  field(fields::inlined(r.cost));
  field("skipped", fields::omitted(r.skipped));
}

// NCCL's algorithm and protocol at a measured point: null with the reason in
// algorithm_note when not known (the MPI transport, point-to-point ops).
template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, AlgorithmChoice>
void fields_of(Self& c, Field&& field) {
  field("algorithm", c.algorithm);
  field("protocol", c.protocol);
  field("algorithm_note", fields::empty_as_null(c.note));
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, NicWireRate>
void fields_of(Self& w, Field&& field) {
  field("nic_wire_gbs", w.gbs);
  field("nic_wire_basis", w.basis);
  field("nic_wire_nics", w.nics_per_node);
}

// ---- scaling ladder -------------------------------------------------------

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, GroupResult>
void fields_of(Self& g, Field&& field) {
  field("group", g.group);
  field("nodes", g.nodes);
  field("hosts", g.hosts);
  field("ranks", g.ranks);
  field("time_us", g.time_us);
  field("busbw_gbs", g.busbw_gbs);
  field("wrong", g.wrong);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, LevelResult>
void fields_of(Self& l, Field&& field) {
  field("kind", l.kind);
  field("op", l.op);
  field("bytes", l.bytes);
  field("nodes_per_group", l.nodes_per_group);
  field("ranks_per_group", l.ranks_per_group);
  field("groups", l.groups);
  field("busbw_min_gbs", l.busbw_min_gbs);
  field("busbw_median_gbs", l.busbw_median_gbs);
  field("efficiency", l.efficiency);
  field("ceiling_gbs", l.ceiling_gbs);
  field("ceiling_fraction", l.ceiling_fraction);
  field("warning", fields::empty_as_null(l.warning));
}

// The projection's input; its points sit beside it in the "projection"
// object (model/result_json.cpp).
template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, ProjectionInput>
void fields_of(Self& p, Field&& field) {
  field("grad_bytes", p.grad_bytes);
  field("compute_ms", p.compute_ms);
  field("overlap", p.overlap);
  field("sharded", p.sharded);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, ProjectionPoint>
void fields_of(Self& p, Field&& field) {
  field("nodes", p.nodes);
  field("gpus", p.gpus);
  field("comm_ms", p.comm_ms);
  field("step_ms", p.step_ms);
  field("speedup", p.speedup);
  field("efficiency", p.efficiency);
}

// ---- GPU-count ladder inside a node ---------------------------------------

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, GpuSetResult>
void fields_of(Self& s, Field&& field) {
  field("node", s.node);
  field("host", s.host);
  field("gpus", s.gpus);
  field("path", s.path);
  field("time_us", s.time_us);
  field("busbw_gbs", s.busbw_gbs);
  field("wrong", s.wrong);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, GpuLevelResult>
void fields_of(Self& l, Field&& field) {
  field("gpus", l.gpus);
  field("choice", l.choice);
  field("op", l.op);
  field("bytes", l.bytes);
  field("path", l.path);
  field("sets", l.sets);
  field("busbw_min_gbs", l.busbw_min_gbs);
  field("busbw_median_gbs", l.busbw_median_gbs);
  field("efficiency", l.efficiency);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, GpuProjectionPoint>
void fields_of(Self& p, Field&& field) {
  field("gpus", p.gpus);
  field("choice", p.choice);
  field("comm_ms", p.comm_ms);
  field("step_ms", p.step_ms);
  field("speedup", p.speedup);
  field("efficiency", p.efficiency);
  field("job_hours", p.job_hours);
  field("cost_per_job", p.cost_per_job);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, ServerCost>
void fields_of(Self& c, Field&& field) {
  field("gpus", c.gpus);
  field("price_per_hour", c.price_per_hour);
  field("job_hours", c.job_hours);
  field("cost_per_job", c.cost_per_job);
  field("why_not", fields::empty_as_null(c.why_not));
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, GpuLadderResult>
void fields_of(Self& g, Field&& field) {
  field("gpus_per_node", g.gpus_per_node);
  field("bytes", g.bytes);
  field("from_topology", g.from_topology);
  field("note", fields::empty_as_null(g.note));
  field("levels", g.levels);
  field("projection_input", g.projection_input);
  field("steps", g.steps);
  field("projection", g.projection);
  field("price_per_gpu_hour", g.price_per_gpu_hour);
  field("servers", g.servers);
  field("cheapest_gpus", g.cheapest_gpus);
  field("fastest_gpus", g.fastest_gpus);
}

// ---- pair matrix ----------------------------------------------------------

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, Finding>
void fields_of(Self& f, Field&& field) {
  field("kind", f.kind);
  field("nodes", f.nodes);
  field("hosts", f.hosts);
  field("value_gbs", f.value_gbs);
  field("reference_gbs", f.reference_gbs);
  field("message", f.message);
}

// ---- p2p --sweep ---------------------------------------------------------

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, P2PRecord>
void fields_of(Self& r, Field&& field) {
  field("test", r.test);
  field("bytes", r.bytes);
  field("window", r.window);
  field("time_us", r.time_us);
  field("latency_us", r.latency_us);
  field("bandwidth_gbs", r.bandwidth_gbs);
  field("iterations", r.iterations);
  field("wrong", r.wrong);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, P2PSweepResult>
void fields_of(Self& p, Field&& field) {
  field("ranks", p.ranks);
  field("hosts", p.hosts);
  field("window", p.window);
  field("records", p.records);
  field("wrong", p.wrong);
}

// ---- placement: latency islands and the bisection test --------------------

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, LatencyIsland>
void fields_of(Self& i, Field&& field) {
  field("name", i.name);
  field("nodes", i.nodes);
  field("hosts", i.hosts);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, IslandsResult>
void fields_of(Self& r, Field&& field) {
  field("islands", r.islands);
  field("in_island_latency_us", r.in_island_latency_us);
  field("cross_island_latency_us", r.cross_island_latency_us);
  field("ratio", r.ratio);
  field("min_ratio", r.min_ratio);
  field("message", r.message);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, BisectionPair>
void fields_of(Self& p, Field&& field) {
  field("a", p.a);
  field("b", p.b);
  field("host_a", p.host_a);
  field("host_b", p.host_b);
  field("isolated_gbs", p.isolated_gbs);
  field("loaded_gbs", p.loaded_gbs);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, HalvingResult>
void fields_of(Self& h, Field&& field) {
  field("half_a", h.half_a);
  field("half_b", h.half_b);
  field("pairs", h.pairs);
  field("isolated_gbs", h.isolated_gbs);
  field("loaded_gbs", h.loaded_gbs);
  field("oversubscription", h.oversubscription);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, BisectionResult>
void fields_of(Self& b, Field&& field) {
  field("bytes", b.bytes);
  field("seed", b.seed);
  field("ranks_per_node", b.ranks_per_node);
  field("halvings", b.halvings);
  field("oversubscription", b.oversubscription);
  field("limit", b.limit);
  field("blocking", b.blocking);
  field("message", b.message);
  field("wrong", b.wrong);
}

// ---- storage --------------------------------------------------------------

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, StorageNode>
void fields_of(Self& n, Field&& field) {
  field("node", n.node);
  field("host", n.host);
  field("files", n.files);
  field("bytes", n.bytes);
  field("write_s", n.write_s);
  field("read_s", n.read_s);
  field("write_gbs", n.write_gbs);
  field("read_gbs", n.read_gbs);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, StorageResult>
void fields_of(Self& s, Field&& field) {
  field("path", s.path);
  field("io_mode", s.io_mode);
  field("io_note", fields::empty_as_null(s.io_note));
  field("file_bytes", s.file_bytes);
  field("block_bytes", s.block_bytes);
  field("per_node", s.per_node);
  field("files_written", s.files_written);
  field("files_removed", s.files_removed);
  field("bytes_written", s.bytes_written);
  field("bytes_read", s.bytes_read);
  field("write_s", s.write_s);
  field("read_s", s.read_s);
  field("write_gbs", s.write_gbs);
  field("read_gbs", s.read_gbs);
  field("nodes", s.nodes);
  field("slowest_write_node", s.slowest_write_node);
  field("slowest_read_node", s.slowest_read_node);
  field("wrong_blocks", s.wrong_blocks);
  field("files_left", fields::omitted(s.files_left));
  field("message", s.message);
}

// ---- the health pass and the budget --------------------------------------

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, HealthResult>
void fields_of(Self& h, Field&& field) {
  field("bytes", h.bytes);
  field("small_bytes", h.small_bytes);
  field("seconds", h.seconds);
  field("findings", h.findings);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, PhaseSpend>
void fields_of(Self& p, Field&& field) {
  field("phase", p.phase);
  field("share_s", p.share_s);
  field("used_s", p.used_s);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, Cut>
void fields_of(Self& c, Field&& field) {
  field("phase", c.phase);
  field("what", c.what);
  field("action", c.action);
  field("reason", c.reason);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, BudgetRecord>
void fields_of(Self& b, Field&& field) {
  field("seconds", b.seconds);
  field("shortened_at_s", fields::omitted(b.shortened_at_s));
  field("phases", b.phases);
  field("cuts", b.cuts);
}

// ---- model-parallel projection (--tp, --pp) -------------------------------

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, TpAllReduce>
void fields_of(Self& t, Field&& field) {
  field("bytes", t.bytes);
  field("dtype", t.dtype);
  field("ranks", t.ranks);
  field("groups", t.groups);
  field("time_us", t.time_us);
  field("time_max_us", t.time_max_us);
  field("wrong", t.wrong);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, PpLink>
void fields_of(Self& l, Field&& field) {
  field("from", l.from);
  field("to", l.to);
  field("latency_us", l.latency_us);
  field("bandwidth_gbs", l.bandwidth_gbs);
  field("transfer_us", l.transfer_us);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, ModelParallelPoint>
void fields_of(Self& p, Field&& field) {
  field("compute_ms", p.compute_ms);
  field("tp_comm_ms", p.tp_comm_ms);
  field("pp_comm_ms", p.pp_comm_ms);
  field("bubble_ms", p.bubble_ms);
  field("bubble_fraction", p.bubble_fraction);
  field("step_ms", p.step_ms);
  field("speedup", p.speedup);
  field("efficiency", p.efficiency);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, ModelParallelResult>
void fields_of(Self& m, Field&& field) {
  field("tp", m.tp);
  field("pp", m.pp);
  field("dp", m.dp);
  field("nodes", m.nodes);
  field("gpus", m.gpus);
  field("hidden", m.hidden);
  field("seq", m.seq);
  field("micro_batch", m.micro_batch);
  field("micro_batches", m.micro_batches);
  field("layers", m.layers);
  field("dtype", m.dtype);
  field("compute_ms", m.compute_ms);
  field("activation_bytes", m.activation_bytes);
  field("tp_allreduce", m.tp_allreduce);
  field("pp_link", m.pp_link);
  field("projection", m.projection);
  field("skipped", fields::omitted(m.skipped));
}

// ---- the run --------------------------------------------------------------

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, ToolInfo>
void fields_of(Self& t, Field&& field) {
  field("name", t.name);
  field("version", t.version);
  field("git", t.git);
  field("transports", t.transports);
  field("libraries", t.libraries);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, PriceInfo>
void fields_of(Self& p, Field&& field) {
  field("price_per_gpu_hour", fields::omitted(p.per_gpu_hour));
  field("price_per_node_hour", fields::omitted(p.per_node_hour));
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, RunInfo>
void fields_of(Self& r, Field&& field) {
  field("start_utc", r.start_utc);
  field("label", fields::omitted(r.label));
  field("command_line", r.command_line);
  field("ranks", r.ranks);
  field("nodes", r.nodes);
  field("ranks_per_node", r.ranks_per_node);
  field("hostnames", r.hostnames);
  field("transport", r.transport);
  field("environment", r.environment);
  field("devices", fields::omitted(r.devices));
  field("cost", fields::omitted(r.cost));
  field("rank_time", fields::omitted(r.rank_time));
}

}  // namespace fabricbench
