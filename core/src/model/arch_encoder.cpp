// Encoders (BERT with its task heads) and encoder-decoders (T5, mT5), after modeling_bert.py and
// modeling_t5.py / modeling_mt5.py; checked against tests/golden/hf_param_counts.json.

#include <array>
#include <vector>

#include "model/architectures.hpp"
#include "model/tensor_builder.hpp"

namespace gpumem {

namespace {

constexpr auto attn = tensor_role::attention;
constexpr auto mlp = tensor_role::mlp;

struct bert_head {
  const char* name;  // request value
  const char* cls;   // transformers class
  bool pooler;       // BertModel(add_pooling_layer=...)
};

// The heads users fine-tune or serve; `base` is the bare BertModel (with its pooler).
constexpr std::array<bert_head, 6> bert_heads{{
    {"base", "BertModel", true},
    {"masked_lm", "BertForMaskedLM", false},
    {"pretraining", "BertForPreTraining", true},
    {"sequence_classification", "BertForSequenceClassification", true},
    {"token_classification", "BertForTokenClassification", false},
    {"question_answering", "BertForQuestionAnswering", false},
}};

}  // namespace

bool is_task_head(const std::string& name) {
  for (const auto& head : bert_heads) {
    if (name == head.name) return true;
  }
  return false;
}

namespace {

const bert_head* find_head(const std::string& name_or_class) {
  for (const auto& head : bert_heads) {
    if (name_or_class == head.name || name_or_class == head.cls) return &head;
  }
  return nullptr;
}

// BertEmbeddings (and AlbertEmbeddings, `width` = embedding_size): word, position and
// token-type tables and their LayerNorm.
void add_bert_embeddings(tensor_builder& add, const model_spec& spec, const std::string& base,
                         std::uint64_t width, std::uint64_t token_types) {
  add.scope(base + "embeddings.");
  add.embedding("word_embeddings", spec.vocab_size, width, tensor_role::token_embedding);
  add.embedding("position_embeddings", spec.max_positions, width, tensor_role::position_embedding);
  add.embedding("token_type_embeddings", token_types, width, tensor_role::token_embedding);
  add.layer_norm("LayerNorm", width);
}

}  // namespace

void build_bert(config_reader& cfg, model_spec& spec, const model_options& options) {
  spec.causal = false;
  spec.hidden_size = cfg.required({"hidden_size"}, max_width);
  spec.embedding_dim = spec.hidden_size;
  spec.vocab_size = cfg.required({"vocab_size"}, max_vocab);
  spec.intermediate_size = cfg.required({"intermediate_size"}, max_width);
  const auto layers = cfg.required({"num_hidden_layers"}, max_layers);
  read_heads(cfg, spec, {"num_attention_heads"}, {"num_attention_heads"});
  spec.max_positions = cfg.optional({"max_position_embeddings"}, 512, max_positions);
  const auto token_types = cfg.optional({"type_vocab_size"}, 2, max_vocab, 0);
  spec.activation = cfg.text("hidden_act", "gelu");
  spec.attention_dropout = cfg.fraction({"attention_probs_dropout_prob"}, 0.1);  // BertConfig
  spec.hidden_dropout = cfg.fraction({"hidden_dropout_prob"}, 0.1);
  // BertEmbeddings drops out its LayerNorm's output at the same rate.
  if (spec.hidden_dropout > 0) spec.embedding_dropout_features = spec.hidden_size;
  spec.tied_embeddings = cfg.flag("tie_word_embeddings", true);
  add_uniform_layers(spec, stack_kind::encoder, layers);

  // The head: the request's (checked by the API), else the config's first architecture when it
  // names one, else masked LM (the pre-training objective every BERT checkpoint ships with).
  const auto archs = cfg.text_list("architectures");
  const bert_head* head = find_head(options.task_head);
  if (head == nullptr && !archs.empty()) head = find_head(archs.front());
  if (head == nullptr) head = find_head("masked_lm");
  spec.architecture = head->cls;
  std::uint64_t labels = options.num_labels;
  if (labels == 0) labels = cfg.optional({"num_labels"}, 2, max_vocab);

  const auto h = spec.hidden_size;
  const std::string base = head->name == std::string("base") ? "" : "bert.";
  tensor_builder add(spec);
  add_bert_embeddings(add, spec, base, h, token_types);
  for (std::uint64_t i = 0; i < layers; ++i) {
    add.scope(base + "encoder.layer." + std::to_string(i) + ".", static_cast<int>(i));
    add.linear("attention.self.query", h, h, true, attn);
    add.linear("attention.self.key", h, h, true, attn);
    add.linear("attention.self.value", h, h, true, attn);
    add.linear("attention.output.dense", h, h, true, attn);
    add.layer_norm("attention.output.LayerNorm", h);
    add.linear("intermediate.dense", h, spec.intermediate_size, true, mlp);
    add.linear("output.dense", spec.intermediate_size, h, true, mlp);
    add.layer_norm("output.LayerNorm", h);
  }
  const auto task = tensor_role::task_head;
  if (head->pooler) {
    add.scope(base + "pooler.");
    add.linear("dense", h, h, true, task);
  }
  add.scope("");
  const std::string name = head->name;
  if (name == "masked_lm" || name == "pretraining") {
    // BertLMPredictionHead: transform (dense + LayerNorm), decoder tied to the word embeddings
    // with its own bias, registered first as cls.predictions.bias.
    add.parameter("cls.predictions.bias", {spec.vocab_size}, task, true);
    add.linear("cls.predictions.transform.dense", h, h, true, task);
    add.layer_norm("cls.predictions.transform.LayerNorm", h);
    if (!spec.tied_embeddings)
      add.linear("cls.predictions.decoder", h, spec.vocab_size, false, task);
    if (name == "pretraining") add.linear("cls.seq_relationship", h, 2, true, task);
  } else if (name == "sequence_classification" || name == "token_classification") {
    add.linear("classifier", h, labels, true, task);
  } else if (name == "question_answering") {
    add.linear("qa_outputs", h, 2, true, task);  // start and end logits
  }
  // Only the MLM heads project back to the vocabulary.
  if (name != "masked_lm" && name != "pretraining") spec.tied_embeddings = false;
}

// ALBERT (modeling_albert.py): BERT's post-norm blocks over a factorised embedding (vocabulary
// x embedding_size, projected to the hidden size by embedding_hidden_mapping_in), with one set of
// block parameters per group, run by num_hidden_layers / num_hidden_groups consecutive blocks
// (AlbertTransformer: group_idx = int(i / (num_hidden_layers / num_hidden_groups))). The MLM
// head projects back to embedding_size before its tied decoder. AlbertConfig defaults: the
// xxlarge sizes, gelu_new, no dropout inside the blocks.
void build_albert(config_reader& cfg, model_spec& spec, const model_options& options) {
  spec.causal = false;
  spec.hidden_size = cfg.optional({"hidden_size"}, 4096, max_width);
  spec.embedding_dim = cfg.optional({"embedding_size"}, 128, max_width);
  spec.vocab_size = cfg.optional({"vocab_size"}, 30000, max_vocab);
  spec.intermediate_size = cfg.optional({"intermediate_size"}, 16384, max_width);
  const auto layers = cfg.optional({"num_hidden_layers"}, 12, max_layers);
  const auto groups = cfg.optional({"num_hidden_groups"}, 1, layers);
  if (cfg.optional({"inner_group_num"}, 1, max_layers) != 1) {
    cfg.fail("config.invalid_value", "inner_group_num",
             "[" + cfg.field("inner_group_num") +
                 "] must be 1 (one block per group, as every released ALBERT has)");
  }
  spec.num_heads = cfg.optional({"num_attention_heads"}, 64, max_heads);
  spec.num_kv_heads = spec.num_heads;
  if (spec.hidden_size % spec.num_heads != 0) {
    cfg.fail("config.inconsistent_heads", "num_attention_heads",
             "[" + cfg.field("num_attention_heads") + "] must divide hidden size " +
                 std::to_string(spec.hidden_size) + ", got " + std::to_string(spec.num_heads) +
                 " heads");
  } else {
    spec.head_dim = spec.hidden_size / spec.num_heads;
  }
  spec.v_head_dim = spec.head_dim;
  spec.max_positions = cfg.optional({"max_position_embeddings"}, 512, max_positions);
  const auto token_types = cfg.optional({"type_vocab_size"}, 2, max_vocab, 0);
  spec.activation = cfg.text("hidden_act", "gelu_new");
  spec.attention_dropout = cfg.fraction({"attention_probs_dropout_prob"}, 0.0);
  spec.hidden_dropout = cfg.fraction({"hidden_dropout_prob"}, 0.0);
  // AlbertEmbeddings drops out its LayerNorm's output, embedding_size wide.
  if (spec.hidden_dropout > 0) spec.embedding_dropout_features = spec.embedding_dim;
  spec.tied_embeddings = cfg.flag("tie_word_embeddings", true);
  add_uniform_layers(spec, stack_kind::encoder, layers);
  // Block i runs group i * groups / layers; a group's tensors belong to its first block.
  std::vector<int> first_of(static_cast<std::size_t>(groups), -1);
  for (std::uint64_t i = 0; i < layers; ++i) {
    const auto g = static_cast<std::size_t>(i * groups / layers);
    if (first_of[g] < 0) {
      first_of[g] = static_cast<int>(i);
    } else {
      spec.layers[static_cast<std::size_t>(i)].shares_params_of = first_of[g];
    }
  }

  const auto archs = cfg.text_list("architectures");
  const bert_head* head = find_head(options.task_head);
  // "AlbertForMaskedLM" names the head BERT's class table knows as "BertForMaskedLM".
  if (head == nullptr && !archs.empty() && archs.front().rfind("Albert", 0) == 0)
    head = find_head("Bert" + archs.front().substr(6));
  if (head == nullptr) head = find_head("masked_lm");
  spec.architecture = "Albert" + std::string(head->cls).substr(4);
  std::uint64_t labels = options.num_labels;
  if (labels == 0) labels = cfg.optional({"num_labels"}, 2, max_vocab);

  const auto h = spec.hidden_size;
  const auto e = spec.embedding_dim;
  const std::string base = head->name == std::string("base") ? "" : "albert.";
  tensor_builder add(spec);
  add_bert_embeddings(add, spec, base, e, token_types);
  add.scope(base + "encoder.");
  add.linear("embedding_hidden_mapping_in", e, h, true, tensor_role::token_embedding);
  for (std::size_t g = 0; g < first_of.size(); ++g) {
    add.scope(base + "encoder.albert_layer_groups." + std::to_string(g) + ".albert_layers.0.",
              first_of[g]);
    add.layer_norm("full_layer_layer_norm", h);
    add.linear("attention.query", h, h, true, attn);
    add.linear("attention.key", h, h, true, attn);
    add.linear("attention.value", h, h, true, attn);
    add.linear("attention.dense", h, h, true, attn);
    add.layer_norm("attention.LayerNorm", h);
    add.linear("ffn", h, spec.intermediate_size, true, mlp);
    add.linear("ffn_output", spec.intermediate_size, h, true, mlp);
  }
  const auto task = tensor_role::task_head;
  if (head->pooler) {
    add.scope(base);
    add.linear("pooler", h, h, true, task);
  }
  add.scope("");
  const std::string name = head->name;
  if (name == "masked_lm" || name == "pretraining") {
    // AlbertMLMHead: LayerNorm over the embedding size, the decoder's bias, dense back to the
    // embedding size, the decoder tied to the word embeddings.
    add.layer_norm("predictions.LayerNorm", e);
    add.parameter("predictions.bias", {spec.vocab_size}, task, true);
    add.linear("predictions.dense", h, e, true, task);
    if (!spec.tied_embeddings) add.linear("predictions.decoder", e, spec.vocab_size, false, task);
    if (name == "pretraining") add.linear("sop_classifier.classifier", h, labels, true, task);
  } else if (name == "sequence_classification" || name == "token_classification") {
    add.linear("classifier", h, labels, true, task);
  } else if (name == "question_answering") {
    add.linear("qa_outputs", h, 2, true, task);
  }
  if (name != "masked_lm" && name != "pretraining") spec.tied_embeddings = false;
}

void build_t5(config_reader& cfg, model_spec& spec) {
  spec.architecture =
      spec.model_type == "mt5" ? "MT5ForConditionalGeneration" : "T5ForConditionalGeneration";
  spec.encoder_decoder = true;
  spec.loss = model_loss::plain;  // T5ForConditionalGeneration: CrossEntropyLoss(ignore_index=-100)
  // T5Config.attribute_map lets a config name d_model, num_heads, num_layers and d_kv by their
  // common names too (hidden_size, num_attention_heads, num_hidden_layers, head_dim).
  spec.hidden_size = cfg.required({"d_model", "hidden_size"}, max_width);
  spec.embedding_dim = spec.hidden_size;
  spec.vocab_size = cfg.required({"vocab_size"}, max_vocab);
  spec.intermediate_size = cfg.required({"d_ff"}, max_width);
  spec.num_heads = cfg.required({"num_heads", "num_attention_heads"}, max_heads);
  spec.num_kv_heads = spec.num_heads;
  spec.head_dim =
      cfg.required({"d_kv", "head_dim"}, max_width);  // T5 heads need not divide d_model
  spec.v_head_dim = spec.head_dim;
  const auto encoder_layers = cfg.required({"num_layers", "num_hidden_layers"}, max_layers);
  const auto decoder_layers = cfg.optional({"num_decoder_layers"}, encoder_layers, max_layers);
  const auto buckets = cfg.optional({"relative_attention_num_buckets"}, 32, max_positions);
  const std::string ff = cfg.text("feed_forward_proj", "relu");
  spec.gated_mlp = ff.rfind("gated-", 0) == 0;  // T5Config: "gated-gelu" -> wi_0, wi_1
  // T5Config refuses anything but "{activation}" or "gated-{activation}".
  const std::string act = spec.gated_mlp ? ff.substr(6) : ff;
  if (act.empty() || act.find('-') != std::string::npos) {
    cfg.fail("config.invalid_value", "feed_forward_proj",
             "[" + cfg.field("feed_forward_proj") +
                 "] must be an activation or 'gated-' and an activation (T5Config), got '" + ff +
                 "'");
  }
  spec.activation = spec.gated_mlp ? ff.substr(6) : ff;
  // T5Config: "gated-gelu" runs the python-formula GELU (dense_act_fn = "gelu_new").
  if (ff == "gated-gelu") spec.activation = "gelu_new";
  spec.norm = norm_kind::rms_norm;  // T5LayerNorm: scale only, no mean subtraction
  // T5Config defaults to tied embeddings, MT5Config to untied.
  spec.tied_embeddings = cfg.flag("tie_word_embeddings", spec.model_type != "mt5");
  spec.hidden_dropout = cfg.fraction({"dropout_rate"}, 0.1);  // T5Config default
  spec.attention_dropout = spec.hidden_dropout;
  // T5Stack drops out its embeddings (and its final norm's output, at the end).
  if (spec.hidden_dropout > 0) spec.embedding_dropout_features = spec.hidden_size;
  // T5Attention: softmax(scores.float(), dim=-1).type_as(scores).
  spec.eager_softmax_fp32 = true;
  add_uniform_layers(spec, stack_kind::encoder, encoder_layers);
  for (std::uint64_t i = 0; i < decoder_layers; ++i) {
    layer_spec layer;
    layer.stack = stack_kind::decoder;
    layer.index = static_cast<int>(i);
    layer.cross_attention = true;
    layer.mlp_intermediate = spec.intermediate_size;
    spec.layers.push_back(layer);
  }
  spec.num_layers = spec.layers.size();

  const auto d = spec.hidden_size;
  const auto inner = spec.num_heads * spec.head_dim;
  tensor_builder add(spec);
  auto attention = [&](const std::string& name, bool relative_bias) {
    add.linear(name + ".q", d, inner, false, attn);
    add.linear(name + ".k", d, inner, false, attn);
    add.linear(name + ".v", d, inner, false, attn);
    add.linear(name + ".o", inner, d, false, attn);
    // Only the first block of each stack owns the relative-position bias table.
    if (relative_bias)
      add.embedding(name + ".relative_attention_bias", buckets, spec.num_heads, attn);
  };
  auto feed_forward = [&](const std::string& name) {
    if (spec.gated_mlp) {
      add.linear(name + ".wi_0", d, spec.intermediate_size, false, mlp);
      add.linear(name + ".wi_1", d, spec.intermediate_size, false, mlp);
    } else {
      add.linear(name + ".wi", d, spec.intermediate_size, false, mlp);
    }
    add.linear(name + ".wo", spec.intermediate_size, d, false, mlp);
    spec.tensors.back().kept_fp32 = true;  // T5PreTrainedModel._keep_in_fp32_modules = ["wo"]
  };
  add.scope("");
  add.embedding("shared", spec.vocab_size, d, tensor_role::token_embedding);
  for (const char* stack : {"encoder", "decoder"}) {
    const bool decoder = stack == std::string("decoder");
    const auto count = decoder ? decoder_layers : encoder_layers;
    for (std::uint64_t i = 0; i < count; ++i) {
      const auto block = decoder ? encoder_layers + i : i;  // index into spec.layers
      add.scope(std::string(stack) + ".block." + std::to_string(i) + ".", static_cast<int>(block));
      attention("layer.0.SelfAttention", i == 0);
      add.rms_norm("layer.0.layer_norm", d);
      if (decoder) {
        attention("layer.1.EncDecAttention", false);
        add.rms_norm("layer.1.layer_norm", d);
      }
      const std::string ff_layer = decoder ? "layer.2." : "layer.1.";
      feed_forward(ff_layer + "DenseReluDense");
      add.rms_norm(ff_layer + "layer_norm", d);
    }
    add.scope(std::string(stack) + ".");
    add.rms_norm("final_layer_norm", d);
  }
  add_lm_head(add, spec, "lm_head", false);
}

}  // namespace gpumem
