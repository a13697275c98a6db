#include "model/work.hpp"

#include "core/work_budget.hpp"

namespace kvlab {
namespace {

/// Multiply-adds of one token through every layer's matrices and the LM head.
double matrix_macs(const ModelConfig& c) {
  const double d = c.d_model, q_w = static_cast<double>(c.n_head) * c.head_dim, kv_w = c.kv_width();
  const double per_layer = d * (q_w + 2.0 * kv_w) + q_w * d + 2.0 * d * 4.0 * d;
  return c.n_layer * per_layer + d * c.vocab_size;
}

}  // namespace

double forward_flops(const ModelConfig& c, double tokens) {
  const double q_w = static_cast<double>(c.n_head) * c.head_dim;
  return 2.0 * matrix_macs(c) * tokens + 4.0 * c.n_layer * q_w * tokens * (tokens + 1.0) / 2.0;
}

double decode_step_flops(const ModelConfig& c, double ctx) {
  const double q_w = static_cast<double>(c.n_head) * c.head_dim;
  return 2.0 * matrix_macs(c) + 4.0 * c.n_layer * q_w * (ctx + 1.0);
}

double model_seconds(double flops) { return kBudgetMargin * flops / kRefModelFlopsPerSecond; }

double model_bytes_f32(const ModelConfig& c) {
  const double d = c.d_model;
  return 4.0 * (matrix_macs(c) + d * (c.vocab_size + c.block_size) + c.n_layer * 13.0 * d);
}

}  // namespace kvlab
