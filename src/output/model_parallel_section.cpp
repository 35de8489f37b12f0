#include <ostream>

#include <fmt/format.h>

#include "fabricbench/core/sizes.hpp"
#include "fabricbench/output/sections.hpp"

namespace fabricbench {

void print_model_parallel(const ModelParallelResult& m, std::ostream& out) {
  out << fmt::format(
      "#\n# Projected model-parallel training: tp {} x pp {} x dp {} on {} ranks ({} node{}); {} layers, hidden {}, "
      "seq {}, micro-batch {}, {} micro-batch{} per step; {} activations of {}; {} ms compute per step on one GPU\n",
      m.tp, m.pp, m.dp, m.gpus, m.nodes, m.nodes == 1 ? "" : "s", m.layers, m.hidden, m.seq, m.micro_batch,
      m.micro_batches, m.micro_batches == 1 ? "" : "es", name(m.dtype), format_size(m.activation_bytes), m.compute_ms);
  if (const auto& t = m.tp_allreduce) {
    out << fmt::format(
        "# TP all-reduce of {} ({}) on {} group{} of {} ranks within a node, all at once: {:.1f} us median, {:.1f} us "
        "slowest; 4 per layer (Megatron: 2 forward, 2 backward), not overlapped\n",
        format_size(t->bytes), name(t->dtype), t->groups, t->groups == 1 ? "" : "s", t->ranks, t->time_us,
        t->time_max_us);
  }
  if (const auto& l = m.pp_link) {
    out << fmt::format(
        "# PP stage link node {} -> node {} (the slowest between stages): {:.1f} us + {} at {:.3f} GB/s per rank = "
        "{:.1f} us per transfer; 2 per micro-batch (activation forward, gradient backward)\n",
        l->from, l->to, l->latency_us, format_size(m.activation_bytes), l->bandwidth_gbs, l->transfer_us);
  }
  if (!m.projection) {
    out << "# skipped: " << (m.skipped.empty() ? std::string("no projection") : m.skipped) << '\n' << std::flush;
    return;
  }
  const ModelParallelPoint& p = *m.projection;
  out << fmt::format("# {:>12} {:>12} {:>12} {:>12} {:>10} {:>10} {:>9} {:>10}\n", "compute (ms)", "TP comm (ms)",
                     "PP comm (ms)", "bubble (ms)", "bubble", "step (ms)", "speedup", "efficiency");
  out << fmt::format("  {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f} {:>9.1f}% {:>10.3f} {:>9.2f} {:>9.1f}%\n", p.compute_ms,
                     p.tp_comm_ms, p.pp_comm_ms, p.bubble_ms, p.bubble_fraction * 100.0, p.step_ms, p.speedup,
                     p.efficiency * 100.0);
  if (m.dp > 1)
    out << fmt::format("# not included: the data-parallel gradient synchronisation between the {} replicas\n", m.dp);
  out << std::flush;
}

}  // namespace fabricbench
