// Detailed mode's `parallel` for a training step: the method and its degrees (tp, cp, pp), where
// each kind of training state is offloaded and DeepSpeed's buckets, read in a fixed order (the
// first refusal is the answer) and weighed together against cluster.gpus.
#include <nlohmann/json.hpp>

#include "api/request_fields.hpp"
#include "api/request_reader.hpp"
#include "model/config_reader.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

// `parallel.offload`: where each kind of training state lives.
result<offload_placement> read_offload(const json& parallel) {
  offload_placement out;
  if (!parallel.contains("offload")) return out;
  const json& offload = parallel.at("offload");
  if (!offload.is_object()) {
    return error{"request.invalid_type", "parallel.offload",
                 "[parallel.offload] must be an object: {\"optimizer\", \"params\", "
                 "\"gradients\", \"activations\"}, each \"none\", \"cpu\" or \"nvme\""};
  }
  if (auto e = unknown_keys(offload, "parallel.offload",
                            {"optimizer", "params", "gradients", "activations"})) {
    return *e;
  }
  config_reader in(offload, "parallel.offload", "request");
  auto target = [&](const char* key) {
    const auto name = choose(in, key, "none", {"none", "cpu", "nvme"});
    return name ? *offload_target_named(*name) : offload_target::none;
  };
  out.optimizer = target("optimizer");
  out.params = target("params");
  out.gradients = target("gradients");
  out.activations = target("activations");
  if (auto problem = in.problem("")) return *problem;
  return out;
}

// Gemini's "auto" placement of its parameter chunks (gemini_placement.hpp): replayed as the
// CPU placement, then the chunks the policy keeps on the GPU.
std::optional<error> read_gemini_auto(const json& parallel, const json& method, json& stated,
                                      training_parallel& out) {
  if (parallel.contains("offload") && parallel.at("offload").is_object() &&
      parallel.at("offload").value("params", json()) == "auto") {
    if (method != json("gemini")) {
      return error{"request.invalid_value", "parallel.offload.params",
                   "[parallel.offload.params] \"auto\" is Colossal-AI Gemini's placement "
                   "(method gemini)"};
    }
    out.gemini_auto = true;
    stated["offload"]["params"] = "cpu";
  }
  return std::nullopt;
}

// `parallel.deepspeed`: DeepSpeed's bucket sizes, under zero2 or zero3.
std::optional<error> read_deepspeed_buckets(const json& parallel, const json& method,
                                            training_parallel& out) {
  if (!parallel.contains("deepspeed")) return std::nullopt;
  const bool zero3 = method == json("zero3");
  if (!zero3 && method != json("zero2")) {
    return error{"request.invalid_value", "parallel.deepspeed",
                 "[parallel.deepspeed] sets DeepSpeed's buckets under zero2 or zero3"};
  }
  const json& buckets = member(parallel, "deepspeed");
  if (!buckets.is_object()) {
    return error{"request.invalid_type", "parallel.deepspeed",
                 "[parallel.deepspeed] must be an object"};
  }
  if (auto e = unknown_keys(buckets, "parallel.deepspeed",
                            {"reduce_bucket_size", "stage3_prefetch_bucket_size",
                             "stage3_param_persistence_threshold"}))
    return *e;
  if (!zero3 && (buckets.contains("stage3_prefetch_bucket_size") ||
                 buckets.contains("stage3_param_persistence_threshold"))) {
    return error{"request.invalid_value", "parallel.deepspeed",
                 "[parallel.deepspeed] stage3_* keys apply to zero3"};
  }
  // Up to 1e11 elements: beyond any model's largest tensor.
  constexpr std::uint64_t most = 100000000000ULL;
  config_reader in(buckets, "parallel.deepspeed", "request");
  out.reduce_bucket_elements =
      in.optional({"reduce_bucket_size"}, out.reduce_bucket_elements, most);
  out.prefetch_bucket_elements =
      in.optional({"stage3_prefetch_bucket_size"}, out.prefetch_bucket_elements, most, 0);
  out.persistence_threshold =
      in.optional({"stage3_param_persistence_threshold"}, out.persistence_threshold, most, 0);
  if (auto problem = in.problem("")) return *problem;
  return std::nullopt;
}

// `parallel` as read, before its fields are weighed together.
struct parallel_fields {
  bool sequence_parallel = false;
  bool tensor = false;
  bool pipeline = false;
  bool hybrid_shard = false;
  std::uint64_t micro_batches = 0;
  std::uint64_t tp = 1;
  std::uint64_t cp = 1;
  context_parallel_kind cp_kind = context_parallel_kind::ring;
  // The data-parallel method (fsdp_full_shard under fsdp_hybrid_shard); none for the others.
  std::optional<data_parallel> value;
  bool single = false;  // method single
  bool hybrid = false;  // a data-parallel method over groups of tp GPUs (DP+TP)
};

// sequence_parallel, what the method is, micro_batches, tp, cp and cp_kind, each on its own.
std::optional<error> read_parallel_fields(const json& parallel, const json& method,
                                          std::uint64_t gpus, std::uint64_t gpus_per_node,
                                          parallel_fields& fields) {
  const json sp = parallel.value("sequence_parallel", json(false));
  if (!sp.is_boolean()) {
    return error{"request.invalid_value", "parallel.sequence_parallel",
                 "[parallel.sequence_parallel] must be true or false, got " + sp.dump()};
  }
  fields.sequence_parallel = sp.get<bool>();
  fields.tensor = method == json("tensor_parallel");
  fields.pipeline = method == json("pipeline");
  // FSDP HYBRID_SHARD is FULL_SHARD within a node, replicated across nodes.
  fields.hybrid_shard = method == json("fsdp_hybrid_shard");
  if (fields.hybrid_shard && (gpus_per_node >= gpus || gpus % gpus_per_node != 0)) {
    return error{"parallel.invalid_method", "parallel.method",
                 "[parallel.method] fsdp_hybrid_shard needs several whole nodes: "
                 "cluster.gpus_per_node (" +
                     std::to_string(gpus_per_node) + ") must divide cluster.gpus (" +
                     std::to_string(gpus) + ") and be smaller"};
  }
  config_reader in(parallel, "parallel", "request");
  fields.micro_batches = in.optional({"micro_batches"}, 0, 1ULL << 20, 1);
  fields.tp = in.optional({"tp"}, 1, gpus, 1);
  fields.cp = in.optional({"cp"}, 1, gpus, 1);
  const std::string cp_kind = in.text("cp_kind", "ring");
  if (auto problem = in.problem("")) return *problem;
  const auto cp_kind_value = context_parallel_kind_named(cp_kind);
  if (!cp_kind_value) {
    return error{"request.invalid_value", "parallel.cp_kind",
                 "[parallel.cp_kind] must be ring or ulysses; got '" + cp_kind + "'"};
  }
  fields.cp_kind = *cp_kind_value;
  for (const char* key : {"micro_batches", "pp", "dp_method"}) {
    if (parallel.contains(key) && !fields.pipeline) {
      return error{"request.invalid_value", std::string("parallel.") + key,
                   "[parallel." + std::string(key) + "] applies to method pipeline only"};
    }
  }
  fields.value = fields.hybrid_shard  ? std::optional(data_parallel::fsdp_full_shard)
                 : method.is_string() ? data_parallel_named(method.get<std::string>())
                                      : std::nullopt;
  fields.single = fields.value && *fields.value == data_parallel::none;
  // Data parallelism may run over groups of `tp` tensor-parallel GPUs (DP+TP, Megatron-LM's
  // layout; ZeRO over the data-parallel ranks like its distributed optimizer).
  fields.hybrid = fields.value && !fields.single && parallel.contains("tp") && fields.tp > 1;
  return std::nullopt;
}

// Whether the method runs on cluster.gpus, and takes the degrees and sequence parallelism stated.
std::optional<error> check_parallel_fields(const json& parallel, const json& method,
                                           const parallel_fields& fields, std::uint64_t gpus,
                                           const offload_placement& offload) {
  const std::uint64_t tp = fields.tp;
  const std::uint64_t cp = fields.cp;
  // One GPU may run ZeRO / FSDP / Gemini for their offloading (ZeRO-Offload, ZeRO-Infinity).
  const bool offloading_alone = gpus == 1 && fields.value && offload.any();
  if (fields.single != (gpus == 1) && !offloading_alone) {
    return error{"parallel.invalid_method", "parallel.method",
                 "[parallel.method] " + method.get<std::string>() +
                     (gpus == 1 ? " needs at least 2 GPUs" : " runs on one GPU") +
                     " (cluster.gpus is " + std::to_string(gpus) + ")"};
  }
  for (const char* key : {"cp", "cp_kind"}) {
    if (parallel.contains(key) && !(fields.value && !fields.single)) {
      return error{"request.invalid_value", std::string("parallel.") + key,
                   "[parallel." + std::string(key) +
                       "] applies to the data-parallel methods (ddp, zero1-3, fsdp_full_shard, "
                       "fsdp_shard_grad_op)"};
    }
  }
  if (parallel.contains("cp_kind") && cp == 1) {
    return error{"request.invalid_value", "parallel.cp_kind",
                 "[parallel.cp_kind] applies with parallel.cp > 1"};
  }
  if (cp > 1 && (fields.hybrid_shard || *fields.value == data_parallel::gemini)) {
    return error{"request.invalid_value", "parallel.cp",
                 "[parallel.cp] context parallelism runs under ddp, zero1-3, fsdp_full_shard or "
                 "fsdp_shard_grad_op (Colossal-AI's Gemini has none; hybrid sharding with it "
                 "is not modelled)"};
  }
  if (cp > 1 && gpus % (tp * cp) != 0) {
    return error{"parallel.invalid_degree", "parallel.cp",
                 "[parallel.cp] tp x cp (" + std::to_string(tp) + " x " + std::to_string(cp) +
                     ") must divide cluster.gpus (" + std::to_string(gpus) + ")"};
  }
  if (parallel.contains("tp") && !fields.tensor && !fields.pipeline &&
      !(fields.value && !fields.single)) {
    return error{"request.invalid_value", "parallel.tp",
                 "[parallel.tp] applies to the data-parallel methods (DP+TP), tensor_parallel "
                 "and pipeline"};
  }
  if (fields.hybrid && cp == 1 && (gpus % tp != 0 || tp == gpus)) {
    return error{"parallel.invalid_tp", "parallel.tp",
                 "[parallel.tp] must divide cluster.gpus (" + std::to_string(gpus) +
                     ") and leave at least 2 data-parallel groups; got " + std::to_string(tp)};
  }
  if (fields.tensor && parallel.contains("tp") && tp != gpus) {
    return error{"parallel.invalid_tp", "parallel.tp",
                 "[parallel.tp] tensor_parallel runs over all " + std::to_string(gpus) +
                     " GPUs; for fewer use a data-parallel method with tp (DP+TP)"};
  }
  const bool staged_tp = fields.pipeline && tp > 1;
  if (fields.sequence_parallel && !fields.tensor && !fields.hybrid && !staged_tp) {
    return error{"request.invalid_value", "parallel.sequence_parallel",
                 "[parallel.sequence_parallel] applies to tensor parallelism only "
                 "(tensor_parallel, or a data-parallel method with tp > 1)"};
  }
  return std::nullopt;
}

// Method pipeline: pp stages, dp_method across the replicas.
std::optional<error> read_pipeline_layout(const json& parallel, const parallel_fields& fields,
                                          std::uint64_t gpus, training_parallel& out) {
  const std::uint64_t tp = fields.tp;
  // Megatron-LM / DeepSpeed 3D layout: pp stages of tp tensor-parallel GPUs each, the whole
  // pipeline replicated over the rest (data parallelism: DDP, or ZeRO-1 — DeepSpeed's
  // pipeline engine takes no higher stage, Megatron's distributed optimizer shards the same).
  config_reader staged(parallel, "parallel", "request");
  out.tp = tp;
  out.pp = staged.optional({"pp"}, gpus / tp, gpus, 2);
  const std::string dp_method = staged.text("dp_method", "ddp");
  if (auto problem = staged.problem("")) return *problem;
  if (gpus % (out.pp * out.tp) != 0) {
    return error{"parallel.invalid_degree", "parallel.pp",
                 "[parallel.pp] stages x tp (" + std::to_string(out.pp) + " x " +
                     std::to_string(out.tp) + ") must divide cluster.gpus (" +
                     std::to_string(gpus) + ")"};
  }
  if (out.pp < 2) {
    return error{"parallel.invalid_degree", "parallel.pp",
                 "[parallel.pp] a pipeline needs at least 2 stages: " + std::to_string(2 * tp) +
                     " GPUs or more with tp " + std::to_string(tp)};
  }
  out.dp = gpus / (out.pp * out.tp);
  if (dp_method != "ddp" && dp_method != "zero1") {
    return error{"request.invalid_value", "parallel.dp_method",
                 "[parallel.dp_method] must be ddp or zero1 (pipelines take no higher ZeRO "
                 "stage); got '" +
                     dp_method + "'"};
  }
  // ZeRO-1 when asked for (its 16-bit module and fp32 masters), else DDP across replicas.
  out.sharding = dp_method == "zero1" ? data_parallel::zero1
                 : out.dp > 1         ? data_parallel::ddp
                                      : data_parallel::none;
  out.sequence_parallel = fields.sequence_parallel;
  out.micro_batches = fields.micro_batches;
  return std::nullopt;
}

// A data-parallel method: dp = gpus / (tp x cp) ranks, sharded within each node under
// fsdp_hybrid_shard.
std::optional<error> read_data_parallel_layout(const parallel_fields& fields, std::uint64_t gpus,
                                               std::uint64_t gpus_per_node,
                                               training_parallel& out) {
  if (fields.hybrid_shard && fields.hybrid) {
    return error{"request.invalid_value", "parallel.tp",
                 "[parallel.tp] fsdp_hybrid_shard does not take tensor parallelism here"};
  }
  out.sharding = *fields.value;
  out.tp = fields.hybrid ? fields.tp : 1;
  out.cp = fields.cp;
  out.cp_kind = fields.cp_kind;
  out.dp = gpus / (out.tp * fields.cp);
  out.sequence_parallel = fields.sequence_parallel;
  if (fields.hybrid_shard) out.shard_group = gpus_per_node;
  return std::nullopt;
}

}  // namespace

result<training_parallel> read_training_parallel(const json& request, std::uint64_t gpus,
                                                 std::uint64_t gpus_per_node) {
  if (auto e = check_object(request, "parallel")) return *e;
  const json& parallel = member(request, "parallel");
  if (auto e = unknown_keys(parallel, "parallel",
                            {"method", "sequence_parallel", "micro_batches", "tp", "cp", "cp_kind",
                             "pp", "dp_method", "offload", "deepspeed"}))
    return *e;
  json stated = parallel;  // as stated, but for Gemini's "auto" placement
  const json method = parallel.value("method", json("single"));
  training_parallel out;
  if (auto e = read_gemini_auto(parallel, method, stated, out)) return *e;
  auto offload = read_offload(stated);
  if (!offload.ok()) return offload.failure();
  if (auto e = read_deepspeed_buckets(parallel, method, out)) return *e;
  parallel_fields fields;
  if (auto e = read_parallel_fields(parallel, method, gpus, gpus_per_node, fields)) return *e;
  if (fields.value || fields.tensor || fields.pipeline) {
    if (auto e = check_parallel_fields(parallel, method, fields, gpus, offload.value())) return *e;
    out.offload = offload.value();
    if (fields.tensor) {
      out.tp = gpus;
      out.sequence_parallel = fields.sequence_parallel;
    } else if (fields.pipeline) {
      if (auto e = read_pipeline_layout(parallel, fields, gpus, out)) return *e;
    } else {
      if (auto e = read_data_parallel_layout(fields, gpus, gpus_per_node, out)) return *e;
    }
    return out;
  }
  return error{"mode.unavailable", "parallel.method",
               "[parallel.method] the detailed estimator takes single, ddp, zero1, zero2, zero3, "
               "gemini, fsdp_full_shard, fsdp_shard_grad_op (with tp: DP+TP), fsdp_hybrid_shard, "
               "tensor_parallel or pipeline; got " +
                   method.dump()};
}

}  // namespace gpumem
