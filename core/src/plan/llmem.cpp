#include "gpumem/plan/llmem.hpp"

#include <cmath>

#include "gpumem/parallel/gemini_chunks.hpp"
#include "gpumem/runtime/allocator.hpp"

namespace gpumem {

namespace {

constexpr double two_mib = 2.0 * 1024 * 1024;

// The families LLMem was evaluated on (paper, Section 5).
bool evaluated_family(const std::string& type) {
  for (const char* t : {"opt", "bloom", "codegen", "gpt_neo", "biogpt", "gpt_bigcode"}) {
    if (type == t) return true;
  }
  return false;
}

// Model buffers that live on the GPU beside the parameters, as transformers 4.29.2 (LLMem's
// pinned version) registers them: the boolean causal masks of [max_positions, max_positions].
std::vector<std::uint64_t> model_buffers(const model_spec& spec) {
  const std::uint64_t mask = spec.max_positions * spec.max_positions;
  std::vector<std::uint64_t> out;
  if (spec.model_type == "gpt_neo" || spec.model_type == "codegen") {
    // GPTNeoSelfAttention.bias (+ the fp32 scalar masked_bias) and CodeGenAttention.causal_mask:
    // one mask per block.
    for (std::uint64_t i = 0; i < spec.num_layers; ++i) {
      out.push_back(mask);
      if (spec.model_type == "gpt_neo") out.push_back(4);
    }
  } else if (spec.model_type == "gpt_bigcode") {
    out.push_back(mask);  // GPTBigCodeModel.bias, one for the model
  }
  return out;
}

}  // namespace

std::uint64_t llmem_round(double bytes) {
  // size_estimator.py: `if b % base != 0: b = int(b / base) * base + base`. Dividing by 2^21
  // and multiplying back are exact in binary floating point, so the test is fmod's, exactly.
  const double whole = std::floor(bytes / two_mib) * two_mib;
  if (whole != bytes) bytes = whole + two_mib;
  return static_cast<std::uint64_t>(bytes);
}

result<llmem_model> prepare_llmem(const model_spec& spec) {
  if (!spec.causal || spec.encoder_decoder) {
    return error{"mode.unsupported_model", "model",
                 "[model] LLMem mode covers decoder-only causal language models; " +
                     spec.architecture + " is not one"};
  }
  llmem_model m;
  m.parameters.reserve(spec.tensors.size());
  m.selected.reserve(spec.tensors.size() + 1);
  for (std::size_t i = 0; i < spec.tensors.size(); ++i) {
    const auto& t = spec.tensors[i];
    const bool selected = t.module == module_kind::linear || t.module == module_kind::embedding;
    const llmem_model::selected_tensor s{t.numel(), t.shape.back(), selected && !t.is_bias,
                                         static_cast<int>(i)};
    m.parameters.push_back(s);
    if (selected) m.selected.push_back(s);
  }
  if (spec.tied_embeddings) {
    // The LM head Linear shares the embedding's weight; model.modules() lists it again, last.
    m.selected.push_back({spec.vocab_size * spec.embedding_dim, spec.embedding_dim, true, -1});
  }
  m.blocks = spec.num_layers;
  m.hidden = spec.hidden_size;
  m.embedding_width = spec.embedding_dim;
  m.vocab = spec.vocab_size;
  m.logits_bytes = spec.logits_fp32 ? 4 : 2;
  m.buffers = model_buffers(spec);
  if (!evaluated_family(spec.model_type)) {
    m.warnings.push_back(
        "LLMem was evaluated on OPT, BLOOM, CodeGen, GPT-Neo, BioGPT and "
        "GPTBigCode; its rules are applied to " +
        spec.model_type + " as written, and its model buffers are not counted");
  }
  bool conv1d = false;
  bool bare = false;
  for (const auto& t : spec.tensors) {
    conv1d |= t.module == module_kind::conv1d;
    bare |= t.module == module_kind::parameter;
  }
  if (conv1d) {
    m.warnings.push_back(
        "LLMem selects only nn.Linear and Embedding modules, so GPT-2's Conv1D "
        "layers get no optimizer or parameter terms (LLMem's weakness 3)");
  }
  if (bare) {
    m.warnings.push_back(
        "LLMem selects only nn.Linear and Embedding modules, so bare parameters "
        "(fused MoE experts) get no optimizer or parameter terms");
  }
  return m;
}

llmem_model::chunk_memory llmem_model::chunks_at(std::uint64_t tp, std::uint64_t dp) const {
  for (const auto& known : chunk_memories_) {
    if (known.tp == tp && known.dp == dp) return known;
  }
  chunk_memory m;
  m.tp = tp;
  m.dp = dp;
  std::vector<std::uint64_t> numels;
  numels.reserve(parameters.size());
  for (const auto& s : parameters) numels.push_back(s.tp_sharded ? s.numel / tp : s.numel);
  const gemini_layout layout = gemini_chunk_layout(numels, dp);
  // LLMem's Colossal-AI keeps chunks gathered when the DP degree is 1.
  m.keep_gathered = layout.keep_gathered || dp == 1;
  m.chunk_size_elements = layout.chunk_size;
  m.chunk_count = layout.chunks.size();
  caching_allocator allocator;
  for (auto bytes : buffers) {
    allocator.allocate(bytes);
    m.model_buffers += bytes;
  }
  for (auto chunk : layout.chunks) {
    const std::uint64_t shard = m.keep_gathered ? chunk : ceil_div(chunk, dp);
    allocator.allocate(2 * shard);
    allocator.allocate(4 * shard);
    m.fp16_chunks += 2 * shard;
    m.fp32_chunks += 4 * shard;
  }
  m.reserved = allocator.reserved();
  chunk_memories_.push_back(m);
  return m;
}

llmem_model::parameter_terms llmem_model::parameter_terms_at(parallel_method method,
                                                             std::uint64_t shards, std::uint64_t tp,
                                                             bool exact_dp_tp_fraction) const {
  for (const auto& known : parameter_terms_) {
    if (known.method == method && known.shards == shards && known.tp == tp &&
        known.exact_dp_tp_fraction == exact_dp_tp_fraction) {
      return known;
    }
  }
  parameter_terms terms;
  terms.method = method;
  terms.shards = shards;
  terms.tp = tp;
  terms.exact_dp_tp_fraction = exact_dp_tp_fraction;
  const auto gpu_n = static_cast<double>(shards);
  const auto t = static_cast<double>(tp);
  for (std::size_t i = 0; i < selected.size(); ++i) {
    const auto& s = selected[i];
    const std::uint64_t numel = s.tp_sharded ? s.numel / tp : s.numel;  // p.size() is local
    const std::uint64_t b16 = llmem_round(static_cast<double>(numel * 2));
    if (i + 1 == selected.size()) {
      terms.lm_head_weight = b16;
      continue;
    }
    if (method == parallel_method::adp) {
      terms.gathered_params += llmem_round(static_cast<double>(b16 * (shards - 1)) / gpu_n);
    } else if (method == parallel_method::dp_tp) {
      const double fraction =
          exact_dp_tp_fraction ? (gpu_n - t) / gpu_n : (gpu_n - t) / gpu_n - 1.0 / gpu_n;
      terms.gathered_params += llmem_round(static_cast<double>(b16) * fraction);
    }
    // Adam's exp_avg and exp_avg_sq in fp32, sharded over all GPUs.
    terms.optimizer_states += 2 * llmem_round(static_cast<double>(numel * 2 * 2) / gpu_n);
  }
  parameter_terms_.push_back(terms);
  return terms;
}

result<llmem_fixed> llmem_fixed_terms(const model_spec& spec, const llmem_model& model,
                                      const cluster_spec& cluster, const parallel_config& parallel,
                                      std::uint64_t seq_len) {
  const std::uint64_t n = cluster.gpus;
  const auto method = parallel.method;
  std::uint64_t t = 1;
  if (method == parallel_method::single && n != 1) {
    return error{
        "parallel.invalid_method", "parallel.method",
        "[parallel.method] single runs on one GPU, but cluster.gpus is " + std::to_string(n)};
  }
  if (method != parallel_method::single && n < 2) {
    return error{"parallel.invalid_method", "parallel.method",
                 "[parallel.method] " + std::string(method_name(method)) +
                     " needs at least 2 GPUs (cluster.gpus), got " + std::to_string(n)};
  }
  if (method == parallel_method::tp) t = n;
  if (method == parallel_method::dp_tp) {
    t = parallel.tp;
    if (t < 2 || t >= n || n % t != 0) {
      return error{"parallel.invalid_tp", "parallel.tp",
                   "[parallel.tp] for dp_tp must divide cluster.gpus (" + std::to_string(n) +
                       ") with 1 < tp < gpus, got " + std::to_string(t)};
    }
  }
  for (const auto& s : model.parameters) {
    if (t > 1 && s.tp_sharded && s.last_dim % t != 0) {
      return error{"parallel.invalid_tp", "parallel.tp",
                   "[parallel.tp] " + std::to_string(t) + " must divide the last dimension (" +
                       std::to_string(s.last_dim) + ") of " +
                       spec.tensors[static_cast<std::size_t>(s.tensor)].name +
                       ", which Colossal-AI's 1D tensor parallelism splits"};
    }
  }

  llmem_fixed f;
  f.parallel = parallel;
  f.parallel.tp = t;
  f.gpus = n;
  // CDP keeps a full replica per GPU: LLMem's terms with nothing sharded.
  const std::uint64_t shards = method == parallel_method::cdp ? 1 : n;
  const auto terms = model.parameter_terms_at(method, shards, t, parallel.exact_dp_tp_fraction);
  f.gathered_params = terms.gathered_params;
  f.optimizer_states = terms.optimizer_states;
  f.lm_head_weight = terms.lm_head_weight;
  // The int64 ids of the two-sample probe batch.
  f.input = llmem_round(static_cast<double>(2 * seq_len * 8));

  // m_init: Gemini's fp16 and fp32 chunks (ZeroDDP._init_chunks registers both per parameter).
  f.dp_degree = method == parallel_method::cdp ? 1 : n / t;
  const auto chunks = model.chunks_at(t, f.dp_degree);
  f.keep_gathered = chunks.keep_gathered;
  f.chunk_size_elements = chunks.chunk_size_elements;
  f.chunk_count = chunks.chunk_count;
  f.model_buffers = chunks.model_buffers;
  f.fp16_chunks = chunks.fp16_chunks;
  f.fp32_chunks = chunks.fp32_chunks;
  f.allocator_rounding = chunks.reserved - (f.model_buffers + f.fp16_chunks + f.fp32_chunks);
  f.cuda_context = cluster.cuda_context_bytes;
  f.m_init = f.cuda_context + chunks.reserved;
  return f;
}

rank_estimate llmem_estimate(const llmem_model& model, const llmem_fixed& fixed,
                             const cluster_spec& cluster, std::uint64_t micro_batch,
                             std::uint64_t seq_len) {
  const std::uint64_t b = micro_batch;
  const std::uint64_t s = seq_len;
  const bool projected = model.embedding_width != model.hidden;  // OPT-350m's project_out
  const std::uint64_t last_width = projected ? model.embedding_width : model.hidden;
  const auto r = [](std::uint64_t bytes) { return llmem_round(static_cast<double>(bytes)); };

  // Kept by gradient checkpointing: the embedding output (counted twice), the input of blocks
  // 2..L, and the last hidden state (after project_out where there is one).
  const std::uint64_t activations = 2 * r(2 * b * s * model.embedding_width) +
                                    (model.blocks - 1) * r(2 * b * s * model.hidden) +
                                    r(2 * b * s * last_width);
  // Logits, their shifted copy and cross-entropy's buffer.
  const std::uint64_t e = model.logits_bytes;
  const std::uint64_t logits = r(e * b * s * model.vocab) + 2 * r(e * b * (s - 1) * model.vocab);
  // Backward all-gathers of the split activation gradient, one per block boundary.
  std::uint64_t tp_gather = 0;
  const std::uint64_t t = fixed.parallel.tp;
  if (fixed.parallel.method == parallel_method::tp ||
      fixed.parallel.method == parallel_method::dp_tp) {
    const auto part = [&](std::uint64_t width) {
      return llmem_round(static_cast<double>(b * s * width * 2 * (t - 1)) / static_cast<double>(t));
    };
    tp_gather =
        (model.blocks - 1) * part(model.hidden) + (projected ? part(model.embedding_width) : 0);
  }

  rank_estimate out;
  out.first_rank = 0;
  out.last_rank = fixed.gpus - 1;
  out.components = {{"m_init", fixed.m_init},
                    {"optimizer_states", fixed.optimizer_states},
                    {"gathered_params", fixed.gathered_params},
                    {"lm_head_weight", fixed.lm_head_weight},
                    {"input", fixed.input},
                    {"activations", activations},
                    {"logits_and_loss", logits},
                    {"tp_gather_buffers", tp_gather}};
  for (const auto& c : out.components) out.peak_bytes += c.bytes;
  const std::uint64_t usable = cluster.gpu.memory_bytes > cluster.headroom_bytes
                                   ? cluster.gpu.memory_bytes - cluster.headroom_bytes
                                   : 0;
  out.fits = out.peak_bytes <= usable;
  out.verdict = judge_fit(out.peak_bytes, cluster.gpu.memory_bytes, usable, true);
  return out;
}

std::uint64_t llmem_max_batch(const llmem_model& model, const llmem_fixed& fixed,
                              const cluster_spec& cluster, std::uint64_t seq_len,
                              std::uint64_t limit) {
  // The estimate grows with the batch, so LLMem's linear scan from 1 is a search for the last
  // fitting batch: double until it no longer fits, then bisect.
  const auto fits = [&](std::uint64_t b) {
    return llmem_estimate(model, fixed, cluster, b, seq_len).fits;
  };
  if (limit == 0 || !fits(1)) return 0;
  std::uint64_t good = 1;
  std::uint64_t bad = 2;
  while (bad <= limit && fits(bad)) {
    good = bad;
    bad *= 2;
  }
  if (bad > limit) {
    if (fits(limit)) return limit;
    bad = limit;
  }
  while (bad - good > 1) {
    const std::uint64_t mid = good + (bad - good) / 2;
    (fits(mid) ? good : bad) = mid;
  }
  return good;
}

}  // namespace gpumem
