#pragma once
// A model's architecture as the memory model needs it: the dimensions that size activations,
// and every parameter tensor in the order the Hugging Face modeling code registers it (the order
// `model.named_parameters()` yields, which Colossal-AI Gemini's chunking and LLMem's
// per-tensor rounding depend on). Built from a config.json by config_parser.hpp.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace gpumem {

// What a tensor is for; the parameter breakdown groups tensors by this.
enum class tensor_role {
  token_embedding,     // vocabulary embedding (and BERT's token-type table)
  position_embedding,  // learned absolute positions
  attention,           // q/k/v/o, MLA low-rank projections, biases, T5 relative-position bias
  mlp,                 // dense feed-forward
  router,              // MoE gate
  routed_experts,      // MoE experts (all of them; `experts` on the tensor)
  shared_experts,      // MoE always-active experts and their gate
  norm,                // LayerNorm / RMSNorm weights and biases
  projection,          // OPT-350m project_in / project_out
  lm_head,             // untied output projection and its bias
  task_head,           // BERT pooler, MLM transform, classifiers
  vision,              // a multimodal model's vision tower and projector (Gemma 3, Llama 4)
};

// The torch module class kind that owns the tensor. LLMem selects parameters by class name
// ("Linear" exactly, or containing "Embedding"), so GPT-2's Conv1D must be told apart.
enum class module_kind { embedding, linear, conv1d, norm, parameter };

// Up to three dimensions (fused MoE experts are [experts, out, in]), kept inline.
struct tensor_shape {
  std::uint64_t dims[3] = {0, 0, 0};
  std::size_t rank = 0;

  tensor_shape() = default;
  tensor_shape(std::initializer_list<std::uint64_t> list) {
    for (auto d : list) {
      if (rank < 3) dims[rank++] = d;
    }
  }
  std::size_t size() const { return rank; }
  std::uint64_t operator[](std::size_t i) const { return dims[i]; }
  std::uint64_t back() const { return rank > 0 ? dims[rank - 1] : 0; }
  const std::uint64_t* begin() const { return dims; }
  const std::uint64_t* end() const { return dims + rank; }
};

// Where a block's linear layer sits in the data flow, from its Hugging Face module path.
// Cross-attention (T5's EncDecAttention) takes its queries from the decoder and its keys and
// values from the encoder's output, the memory.
enum class linear_role {
  attention_in,
  attention_out,
  mlp_in,
  mlp_out,
  cross_query,
  cross_memory,
  cross_out,
  latent_q,
  latent_kv,
  unknown  // not read yet (index_block_tensors reads it once)
};

struct tensor_spec {
  std::string name;  // full Hugging Face parameter name, e.g. model.layers.0.mlp.up_proj.weight
  tensor_role role;
  module_kind module;
  tensor_shape shape;  // as torch reports it ([out, in] for Linear, [in, out] for Conv1D)
  int layer = -1;      // index into model_spec::layers (encoder blocks first), -1 outside blocks
  bool is_bias = false;
  // In the modeling class's _keep_in_fp32_modules (T5's `wo`): transformers' from_pretrained
  // keeps it fp32, unquantised, when the model is loaded in fp16 or by bitsandbytes.
  bool kept_fp32 = false;
  // A linear's place in its block's data flow, read from its name once (linear_role_of).
  linear_role flow = linear_role::unknown;
  // Its module's name (module_of: "q_proj" of "model.layers.0.self_attn.q_proj.weight"), read
  // once with the flow; empty for a tensor made later (module_name_of reads it then).
  std::string module_name{};

  std::uint64_t numel() const {
    std::uint64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

enum class norm_kind { layer_norm, rms_norm };
// The loss a model class takes itself under transformers instead of ForCausalLMLoss (which
// upcasts the logits to fp32 and shifts the labels): a plain nn.CrossEntropyLoss of the logits
// in their dtype (T5, its labels aligned with its logits; Llama4ForConditionalGeneration, its
// logits shifted by a contiguous copy), or of their fp32 upcast, shifted likewise
// (Gemma3ForConditionalGeneration).
enum class model_loss { causal_lm, plain, plain_fp32 };
enum class attention_pattern { global, sliding };
enum class stack_kind { decoder, encoder };

// Per block: what kind of attention and feed-forward it holds.
struct layer_spec {
  stack_kind stack = stack_kind::decoder;
  int index = 0;  // within its stack
  attention_pattern attention = attention_pattern::global;
  std::uint64_t sliding_window_tokens = 0;  // 0 = full attention
  bool cross_attention = false;             // T5 decoder blocks
  bool moe = false;                         // routed experts in this block
  // Llama 4's RoPE layers L2-normalise each head of q and k in fp32, without a weight
  // (Llama4TextL2Norm, use_qk_norm).
  bool l2_qk_norm = false;
  std::uint64_t mlp_intermediate = 0;  // dense MLP width (0 in MoE blocks without one)
  // ALBERT's cross-layer sharing: the block whose parameters this one runs again (-1: its own).
  // Shared tensors belong to the first block that runs them.
  int shares_params_of = -1;
};

struct moe_spec {
  std::uint64_t num_experts = 0;          // routed experts per MoE block
  std::uint64_t experts_per_token = 0;    // top-k
  std::uint64_t expert_intermediate = 0;  // width of one routed expert
  std::uint64_t shared_intermediate = 0;  // total width of the shared expert(s), 0 if none
  // The router scores in fp32 from an fp32 copy of its input (DeepseekV3TopkRouter: F.linear of
  // hidden_states.float(), then sigmoid).
  bool fp32_router = false;
  // Every token runs through every expert, its input scaled by the expert's sigmoid score (0
  // off its top-k): Llama4TextMoe repeats the tokens once per expert (hidden_states.repeat) and
  // batches the experts' matmuls over all of them.
  bool dense_dispatch = false;

  // The experts each token runs through: its top-k, or all of them under dense dispatch.
  std::uint64_t experts_run() const { return dense_dispatch ? num_experts : experts_per_token; }
};

// Multi-head latent attention (DeepSeek-V2/V3): low-rank q and compressed kv.
struct mla_spec {
  std::uint64_t q_lora_rank = 0;  // 0: full-rank q_proj
  std::uint64_t kv_lora_rank = 0;
  std::uint64_t qk_nope_head_dim = 0;
  std::uint64_t qk_rope_head_dim = 0;
  std::uint64_t v_head_dim = 0;
};

// A quantised checkpoint as its config.json's quantization_config states it: the method as stated
// (awq, gptq, bitsandbytes, fp8, compressed-tensors, mxfp4), the weights' format by its request
// name (awq_4bit, gptq_4bit, nf4, int8, fp8, mxfp4, ...), its group size (0: the format's
// default), fp8's scaling, and the modules it leaves unquantised (matched as parts of a tensor's
// name, as transformers matches modules_to_not_convert).
struct checkpoint_quantization {
  std::string method;
  std::string weights;
  std::uint64_t group_size = 0;
  bool fp8_per_tensor = false;
  bool act_order = false;  // GPTQ's desc_act: the input features reordered by g_idx
  std::vector<std::string> unconverted;
};

struct model_spec {
  std::string model_type;    // config.json model_type
  std::string architecture;  // transformers class counted, e.g. LlamaForCausalLM
  bool encoder_decoder = false;
  bool causal = true;  // false for encoders (BERT)

  std::uint64_t vocab_size = 0;
  std::uint64_t hidden_size = 0;
  std::uint64_t embedding_dim = 0;  // token-embedding width (OPT-350m: word_embed_proj_dim)
  std::uint64_t num_layers = 0;     // blocks in all stacks
  std::uint64_t num_heads = 0;
  std::uint64_t num_kv_heads = 0;
  std::uint64_t head_dim = 0;  // q/k head width
  std::uint64_t v_head_dim = 0;
  std::uint64_t intermediate_size = 0;  // dense MLP width
  std::uint64_t max_positions = 0;      // 0 when the config gives none
  bool gated_mlp = false;               // SwiGLU / GeGLU: three projections
  bool parallel_block = false;  // attention and MLP read the same input (GPT-J, Falcon, Phi)
  // A parallel block whose MLP normalises that input with a norm of its own (GPT-NeoX's
  // post_attention_layernorm, Falcon's ln_mlp) rather than sharing the attention's.
  bool parallel_mlp_norm = false;
  norm_kind norm = norm_kind::layer_norm;
  // The RMSNorm returns its input's dtype whatever its weight's (GemmaRMSNorm:
  // output.type_as(x)); Llama-style ones multiply by the weight in its dtype.
  bool norm_keeps_input_dtype = false;
  // RMSNorms on the attention's and the MLP's outputs before the residual add (Gemma 2 and 3,
  // OLMo 2: post_attention_layernorm, post_feedforward_layernorm).
  bool post_norms = false;
  // Norms before attention and before the MLP (all but OLMo 2, which normalises only after).
  bool pre_norms = true;
  // RMSNorms on the queries and keys before RoPE (Qwen3, Gemma 3, OLMo 2: q_norm, k_norm), over
  // each head, or (OLMo 2) over all heads at once.
  bool qk_norm = false;
  bool qk_norm_per_head = true;
  // One fused q/k/v projection whose output the values stay a view of, while RoPE makes the
  // queries and keys new tensors (transformers' GPT-NeoX and Phi-3; litgpt, which fuses every
  // model's, is the estimator's framework profile): attention keeps the whole fused output
  // beside the roped q and k.
  bool values_view_fused_qkv = false;
  // transformers' attention copies grouped-query keys and values to every query head
  // (repeat_kv: Llama's code and its copies; Falcon and GPTBigCode expand them their own way):
  // before eager attention in every release, before SDPA until 4.54 (software_stack).
  bool transformers_repeat_kv = false;
  std::string activation;
  bool tied_embeddings = false;
  bool logits_fp32 = false;  // modeling code upcasts logits to fp32 (CodeGen, GPT-Neo, Gemma ...)
  // Eager attention takes its softmax in fp32 whatever the activations' dtype (transformers'
  // Llama-style eager_attention_forward, BLOOM and Phi: softmax(..., dtype=torch.float32));
  // other models do so only under autocast.
  bool eager_softmax_fp32 = false;
  // Positions as ALiBi's per-head biases on the scores (BLOOM), no rotary embedding.
  bool alibi = false;
  // Gemma 2's soft cap of attention logits (attn_logit_softcapping; 0: none): cap * tanh(s / cap)
  // before the softmax, which the fused SDPA kernels cannot apply.
  double attention_softcap = 0.0;
  // gpt-oss: a learned sink logit per head joins each softmax (GptOssAttention.sinks), which
  // PyTorch's SDPA kernels do not take.
  bool attention_sinks = false;
  double attention_dropout = 0.0;
  double hidden_dropout = 0.0;
  // Features a token's embedding dropout masks (0: no dropout on the embeddings): GPT-2's
  // embd_pdrop, OPT's and BERT's dropout after the embeddings, T5's at each stack's start.
  std::uint64_t embedding_dropout_features = 0;
  model_loss loss = model_loss::causal_lm;

  moe_spec moe;
  bool mla = false;
  mla_spec mla_dims;

  std::vector<layer_spec> layers;
  std::vector<tensor_spec> tensors;   // registration order
  std::vector<std::string> warnings;  // how ambiguous or unknown input was read
  // Set when the config.json has a quantization_config (model/quantization_config.cpp).
  bool quantized_checkpoint = false;
  checkpoint_quantization checkpoint;
  // Each block's tensors, as indices into `tensors` in registration order (index_block_tensors;
  // empty until then, and for_each_block_tensor scans instead).
  std::vector<std::vector<std::uint32_t>> block_tensors;
};

// Builds model_spec::block_tensors, so that a step's replay visits each block's tensors without
// scanning the whole model for every block (which made it quadratic in the blocks), and reads
// each tensor's linear_role once.
void index_block_tensors(model_spec& spec);

// A linear's role in its block, from its module path (the cached tensor_spec::flow when read).
linear_role linear_role_of(const tensor_spec& t);

// A parameter's module name: "model.layers.0.self_attn.q_proj.weight" -> "q_proj".
std::string module_of(const std::string& name);

// Calls f(tensor) for each tensor of block `layer` (its own, not a shared block's), in order.
template <class F>
void for_each_block_tensor(const model_spec& spec, int layer, F&& f) {
  if (spec.block_tensors.size() == spec.layers.size() && layer >= 0 &&
      static_cast<std::size_t>(layer) < spec.layers.size()) {
    for (const std::uint32_t i : spec.block_tensors[static_cast<std::size_t>(layer)])
      f(spec.tensors[i]);
    return;
  }
  for (const auto& t : spec.tensors) {
    if (t.layer == layer) f(t);
  }
}

// The block whose tensors block `layer` runs: its own, or the one it shares them with.
inline int parameter_block(const model_spec& spec, int layer) {
  if (layer < 0 || static_cast<std::size_t>(layer) >= spec.layers.size()) return layer;
  const int shared = spec.layers[static_cast<std::size_t>(layer)].shares_params_of;
  return shared >= 0 ? shared : layer;
}

// a / b rounded up (b > 0).
inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace gpumem
