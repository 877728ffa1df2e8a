#include "api/request_reader.hpp"

#include <nlohmann/json.hpp>

#include "gpumem/model/preset_catalog.hpp"
#include "model/config_reader.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

const json& member_object(const json& parent, const char* key) {
  static const json empty = json::object();
  if (!parent.is_object()) return empty;
  auto it = parent.find(key);
  return it == parent.end() || it->is_null() ? empty : *it;
}

namespace {

const json& member(const json& request, const char* key) { return member_object(request, key); }

// request.invalid_type when `key` of `request` (at `where`, "" at the top) is neither an object
// nor absent (missing or null).
std::optional<error> check_object(const json& request, const char* key,
                                  const std::string& where = "") {
  const auto it = request.find(key);
  if (it == request.end() || it->is_null() || it->is_object()) return std::nullopt;
  const std::string path = where.empty() ? std::string(key) : where + "." + key;
  return error{"request.invalid_type", path,
               "[" + path + "] must be an object, got " + std::string(it->type_name())};
}

std::optional<std::string> choose(config_reader& in, const char* key, const std::string& fallback,
                                  std::initializer_list<const char*> accepted);

// Fields of a GPU preset, overridable in a request.
void read_gpu_fields(config_reader& in, gpu_spec& gpu) {
  gpu.memory_bytes =
      in.optional({"memory_bytes"}, gpu.memory_bytes, 1ULL << 44, 1ULL << 28);  // 256 MiB..16 TiB
  gpu.fp16_dense_flops = in.number("fp16_dense_flops", gpu.fp16_dense_flops, 1e9, 1e17);
  // 0: no bf16 tensor cores (Volta, Turing), where the fp16 figure is used.
  if (in.has("bf16_dense_flops") && in.number("bf16_dense_flops", 1, 0, 1e17) == 0) {
    gpu.bf16_dense_flops = 0;
  } else {
    gpu.bf16_dense_flops = in.number("bf16_dense_flops", gpu.bf16_dense_flops, 1e9, 1e17);
  }
  gpu.memory_bandwidth_bytes_per_s =
      in.number("memory_bandwidth_bytes_per_s", gpu.memory_bandwidth_bytes_per_s, 1e9, 1e15);
  gpu.link_bandwidth_bytes_per_s =
      in.number("link_bandwidth_bytes_per_s", gpu.link_bandwidth_bytes_per_s, 1e8, 1e14);
  gpu.host_link_bandwidth_bytes_per_s =
      in.number("host_link_bandwidth_bytes_per_s", gpu.host_link_bandwidth_bytes_per_s, 1e8, 1e14);
  // The generations whose CUDA context and cuBLAS workspace are known (hardware.cpp).
  if (in.has("architecture")) {
    gpu.architecture = choose(in, "architecture", "",
                              {"volta", "turing", "ampere", "ada", "hopper", "blackwell", "cdna2",
                               "cdna3", "unknown"})
                           .value_or(gpu.architecture);
  }
  gpu.name = in.text("name", gpu.name);
}

result<gpu_spec> read_gpu_preset(const std::string& id, const std::string& field) {
  const json preset = find_gpu_preset(id);
  if (preset.is_discarded()) {
    std::string ids;
    for (const auto& file : embedded_gpu_presets())
      ids += (ids.empty() ? "" : ", ") + std::string(file.name);
    return error{"cluster.unknown_gpu", field,
                 "[" + field + "] '" + id + "' is not a GPU preset; one of " + ids};
  }
  gpu_spec gpu;
  gpu.id = id;
  config_reader in(preset, "preset " + id, "preset");
  read_gpu_fields(in, gpu);
  if (auto problem = in.problem("in presets/gpus.json")) return *problem;
  return gpu;
}

// A GPU preset as read, kept: presets are data that do not change while the core runs (each
// request read its JSON again).
result<gpu_spec> gpu_from_preset(const std::string& id, const std::string& field) {
  static thread_local std::vector<gpu_spec> read;
  for (const auto& gpu : read) {
    if (gpu.id == id) return gpu;
  }
  auto gpu = read_gpu_preset(id, field);
  if (gpu.ok()) read.push_back(gpu.value());
  return gpu;
}

result<gpu_spec> read_gpu(const json& cluster) {
  if (!cluster.contains("gpu")) {
    return error{
        "request.missing_field", "cluster.gpu",
        "[cluster.gpu] is required: a GPU preset id such as \"a100-sxm4-80gb\" (`gpumem gpus`), "
        "or {\"memory_bytes\": ..., \"fp16_dense_flops\": ..., \"link_bandwidth_bytes_per_s\": "
        "...}"};
  }
  const json& gpu = cluster.at("gpu");
  if (gpu.is_string()) return gpu_from_preset(gpu.get<std::string>(), "cluster.gpu");
  if (!gpu.is_object()) {
    return error{"request.invalid_type", "cluster.gpu",
                 "[cluster.gpu] must be a preset id or an object"};
  }
  if (auto e = unknown_keys(gpu, "cluster.gpu",
                            {"preset", "name", "architecture", "memory_bytes", "fp16_dense_flops",
                             "bf16_dense_flops", "memory_bandwidth_bytes_per_s",
                             "link_bandwidth_bytes_per_s", "host_link_bandwidth_bytes_per_s"})) {
    return *e;
  }
  gpu_spec spec;
  spec.id = "custom";
  spec.name = "custom GPU";
  if (gpu.contains("preset")) {
    if (!gpu.at("preset").is_string()) {
      return error{"request.invalid_type", "cluster.gpu.preset",
                   "[cluster.gpu.preset] must be a GPU preset id"};
    }
    auto base = gpu_from_preset(gpu.at("preset").get<std::string>(), "cluster.gpu.preset");
    if (!base.ok()) return base.failure();
    spec = base.value();
  }
  config_reader in(gpu, "cluster.gpu", "request");
  read_gpu_fields(in, spec);
  if (auto problem = in.problem("")) return *problem;
  // Without a preset, the figures the estimate and the speed model need.
  for (const auto& [key, missing] :
       {std::pair<const char*, bool>{"memory_bytes", spec.memory_bytes == 0},
        {"fp16_dense_flops", spec.fp16_dense_flops <= 0},
        {"link_bandwidth_bytes_per_s", spec.link_bandwidth_bytes_per_s <= 0}}) {
    if (missing) {
      return error{
          "request.missing_field", std::string("cluster.gpu.") + key,
          "[cluster.gpu." + std::string(key) + "] is required for a custom GPU without a preset"};
    }
  }
  if (spec.architecture.empty()) spec.architecture = "unknown";
  return spec;
}

// One of `accepted` for `key` of the object `in` reads, else `fallback`; a value outside the
// list is recorded as an error naming them.
std::optional<std::string> choose(config_reader& in, const char* key, const std::string& fallback,
                                  std::initializer_list<const char*> accepted) {
  const std::string value = in.text(key, fallback);
  for (const char* a : accepted) {
    if (value == a) return value;
  }
  std::string list;
  for (const char* a : accepted) list += (list.empty() ? "" : ", ") + std::string(a);
  in.fail("request.invalid_value", key,
          "[" + in.field(key) + "] must be one of " + list + "; got '" + value + "'");
  return std::nullopt;
}

// Learned absolute positions stop at max_position_embeddings; rotary models only degrade.
std::optional<error> check_seq_len(const model_spec& model, std::uint64_t seq_len,
                                   std::vector<std::string>& warnings) {
  if (model.max_positions == 0 || seq_len <= model.max_positions) return std::nullopt;
  bool learned_positions = false;
  for (const auto& t : model.tensors)
    learned_positions |= t.role == tensor_role::position_embedding;
  const std::string text = "[workload.seq_len] " + std::to_string(seq_len) +
                           " exceeds the model's " + std::to_string(model.max_positions) +
                           " positions";
  if (learned_positions) return error{"request.invalid_value", "workload.seq_len", text};
  warnings.push_back(text + "; the estimate assumes the model runs at that length");
  return std::nullopt;
}

}  // namespace

std::optional<error> unknown_keys(const json& object, const std::string& where,
                                  std::initializer_list<const char*> accepted) {
  if (object.is_null()) return std::nullopt;  // absent
  if (!object.is_object()) {
    return error{"request.invalid_type", where.empty() ? "request" : where,
                 "[" + (where.empty() ? std::string("request") : where) +
                     "] must be an object, got " + std::string(object.type_name())};
  }
  for (const auto& item : object.items()) {
    bool known = false;
    for (const char* name : accepted) known = known || item.key() == name;
    if (known) continue;
    std::string list;
    for (const char* name : accepted) list += (list.empty() ? "" : ", ") + std::string(name);
    const std::string path = where.empty() ? item.key() : where + "." + item.key();
    return error{"request.unknown_field", path,
                 "[" + path + "] is not a field here; accepted: " + list};
  }
  return std::nullopt;
}

result<std::string> read_mode(const json& request) {
  const std::string mode = request.contains("mode") && request.at("mode").is_string()
                               ? request.at("mode").get<std::string>()
                               : (request.contains("mode") ? "" : "detailed");
  if (mode != "detailed" && mode != "llmem") {
    return error{"request.invalid_value", "mode",
                 "[mode] must be \"detailed\" or \"llmem\", got " + request.at("mode").dump()};
  }
  return mode;
}

result<cluster_spec> read_cluster(const json& request, double default_headroom) {
  if (auto e = check_object(request, "cluster")) return *e;
  const json& cluster = member(request, "cluster");
  if (auto e = unknown_keys(
          cluster, "cluster",
          {"gpu", "gpus", "gpus_per_node", "inter_node_bandwidth_bytes_per_s", "cuda_context_bytes",
           "headroom", "headroom_bytes", "host_ram_bytes", "nvme_bytes", "nvme_read_bytes_per_s",
           "nvme_write_bytes_per_s", "cpu_optimizer_params_per_s"})) {
    return *e;
  }
  auto gpu = read_gpu(cluster);
  if (!gpu.ok()) return gpu.failure();
  cluster_spec spec;
  spec.gpu = gpu.value();
  config_reader in(cluster, "cluster", "request");
  spec.gpus = in.optional({"gpus"}, 1, 65536);
  spec.gpus_per_node = in.optional({"gpus_per_node"}, spec.gpus, 65536);
  spec.inter_node_bandwidth_bytes_per_s = in.number(
      "inter_node_bandwidth_bytes_per_s", spec.inter_node_bandwidth_bytes_per_s, 1e8, 1e13);
  spec.cuda_context_bytes = in.optional(
      {"cuda_context_bytes"}, default_cuda_context_bytes(spec.gpu.architecture), 1ULL << 34, 0);
  // The memory a plan leaves free: stated in bytes or as a fraction of the GPU's memory, not both.
  if (in.has("headroom") && in.has("headroom_bytes")) {
    return error{
        "request.invalid_value", "cluster.headroom",
        "[cluster.headroom] and [cluster.headroom_bytes] both state the headroom: give one"};
  }
  const double fraction = in.number("headroom", default_headroom, 0.0, max_headroom_fraction);
  spec.headroom_bytes =
      in.optional({"headroom_bytes"},
                  static_cast<std::uint64_t>(fraction * static_cast<double>(spec.gpu.memory_bytes)),
                  spec.gpu.memory_bytes, 0);
  spec.host_ram_bytes = in.optional({"host_ram_bytes"}, 0, 1ULL << 50, 0);  // up to 1 PiB
  spec.nvme_bytes = in.optional({"nvme_bytes"}, 0, 1ULL << 53, 0);
  spec.host.nvme_read_bytes_per_s =
      in.number("nvme_read_bytes_per_s", spec.host.nvme_read_bytes_per_s, 1e7, 1e12);
  spec.host.nvme_write_bytes_per_s =
      in.number("nvme_write_bytes_per_s", spec.host.nvme_write_bytes_per_s, 1e7, 1e12);
  spec.host.cpu_optimizer_params_per_s =
      in.number("cpu_optimizer_params_per_s", spec.host.cpu_optimizer_params_per_s, 1e6, 1e13);
  if (auto problem = in.problem("")) return *problem;
  return spec;
}

result<parallel_config> read_parallel(const json& request) {
  if (auto e = check_object(request, "parallel")) return *e;
  const json& parallel = member(request, "parallel");
  if (auto e = unknown_keys(parallel, "parallel", {"method", "tp", "dp_tp_fraction"})) return *e;
  config_reader in(parallel, "parallel", "request");
  parallel_config out;
  const std::string method = in.text("method", "single");
  bool known = false;
  for (auto m : {parallel_method::single, parallel_method::cdp, parallel_method::adp,
                 parallel_method::tp, parallel_method::dp_tp}) {
    if (method == method_name(m)) {
      out.method = m;
      known = true;
    }
  }
  if (!known) {
    return error{
        "request.invalid_value", "parallel.method",
        "[parallel.method] must be one of single, cdp, adp, tp, dp_tp; got '" + method + "'"};
  }
  out.tp = in.optional({"tp"}, 1, 65536);
  const std::string fraction = in.text("dp_tp_fraction", "llmem");
  if (fraction != "llmem" && fraction != "exact") {
    return error{
        "request.invalid_value", "parallel.dp_tp_fraction",
        "[parallel.dp_tp_fraction] must be \"llmem\" or \"exact\", got '" + fraction + "'"};
  }
  out.exact_dp_tp_fraction = fraction == "exact";
  if (auto problem = in.problem("")) return *problem;
  return out;
}

result<training_workload> read_training_workload(const json& request, const model_spec& model,
                                                 bool for_plan,
                                                 std::vector<std::string>& warnings) {
  if (auto e = check_object(request, "workload")) return *e;
  const json& workload = member(request, "workload");
  if (auto e = unknown_keys(workload, "workload", {"phase", "micro_batch", "seq_len"})) return *e;
  config_reader in(workload, "workload", "request");
  if (in.text("phase", "train") != "train") {
    return error{
        "request.invalid_value", "workload.phase",
        "[workload.phase] must be \"train\" in this mode (LLMem models fine-tuning steps)"};
  }
  training_workload out;
  if (for_plan && in.present("micro_batch")) {
    return error{"request.invalid_value", "workload.micro_batch",
                 "[workload.micro_batch] LLMem's planner (its Algorithm 1) searches the batch: "
                 "leave it out, or estimate one method at a fixed batch"};
  }
  out.micro_batch = for_plan ? 1 : in.required({"micro_batch"}, 1ULL << 20);
  out.seq_len = in.optional({"seq_len"}, out.seq_len, max_positions);
  if (auto problem = in.problem("required for an estimate")) return *problem;
  if (auto e = check_seq_len(model, out.seq_len, warnings)) return *e;
  return out;
}

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

result<training_parallel> read_training_parallel(const json& request, std::uint64_t gpus,
                                                 std::uint64_t gpus_per_node) {
  if (auto e = check_object(request, "parallel")) return *e;
  const json& parallel = member(request, "parallel");
  if (auto e = unknown_keys(parallel, "parallel",
                            {"method", "sequence_parallel", "micro_batches", "tp", "cp", "cp_kind",
                             "pp", "dp_method", "offload", "deepspeed"}))
    return *e;
  // Gemini's "auto" placement of its parameter chunks (gemini_placement.hpp): replayed as the
  // CPU placement, then the chunks the policy keeps on the GPU.
  json stated = parallel;
  const json method = parallel.value("method", json("single"));
  training_parallel out;
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
  auto offload = read_offload(stated);
  if (!offload.ok()) return offload.failure();
  if (parallel.contains("deepspeed")) {
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
  }
  const json sp = parallel.value("sequence_parallel", json(false));
  if (!sp.is_boolean()) {
    return error{"request.invalid_value", "parallel.sequence_parallel",
                 "[parallel.sequence_parallel] must be true or false, got " + sp.dump()};
  }
  const bool tensor = method == json("tensor_parallel");
  const bool pipeline = method == json("pipeline");
  // FSDP HYBRID_SHARD is FULL_SHARD within a node, replicated across nodes.
  const bool hybrid_shard = method == json("fsdp_hybrid_shard");
  if (hybrid_shard && (gpus_per_node >= gpus || gpus % gpus_per_node != 0)) {
    return error{"parallel.invalid_method", "parallel.method",
                 "[parallel.method] fsdp_hybrid_shard needs several whole nodes: "
                 "cluster.gpus_per_node (" +
                     std::to_string(gpus_per_node) + ") must divide cluster.gpus (" +
                     std::to_string(gpus) + ") and be smaller"};
  }
  config_reader in(parallel, "parallel", "request");
  const std::uint64_t micro_batches = in.optional({"micro_batches"}, 0, 1ULL << 20, 1);
  const std::uint64_t tp = in.optional({"tp"}, 1, gpus, 1);
  const std::uint64_t cp = in.optional({"cp"}, 1, gpus, 1);
  const std::string cp_kind = in.text("cp_kind", "ring");
  if (auto problem = in.problem("")) return *problem;
  const auto cp_kind_value = context_parallel_kind_named(cp_kind);
  if (!cp_kind_value) {
    return error{"request.invalid_value", "parallel.cp_kind",
                 "[parallel.cp_kind] must be ring or ulysses; got '" + cp_kind + "'"};
  }
  for (const char* key : {"micro_batches", "pp", "dp_method"}) {
    if (parallel.contains(key) && !pipeline) {
      return error{"request.invalid_value", std::string("parallel.") + key,
                   "[parallel." + std::string(key) + "] applies to method pipeline only"};
    }
  }
  const auto value = hybrid_shard         ? std::optional(data_parallel::fsdp_full_shard)
                     : method.is_string() ? data_parallel_named(method.get<std::string>())
                                          : std::nullopt;
  if (value || tensor || pipeline) {
    const bool single = value && *value == data_parallel::none;
    // One GPU may run ZeRO / FSDP / Gemini for their offloading (ZeRO-Offload, ZeRO-Infinity).
    const bool offloading_alone = gpus == 1 && value && offload.value().any();
    if (single != (gpus == 1) && !offloading_alone) {
      return error{"parallel.invalid_method", "parallel.method",
                   "[parallel.method] " + method.get<std::string>() +
                       (gpus == 1 ? " needs at least 2 GPUs" : " runs on one GPU") +
                       " (cluster.gpus is " + std::to_string(gpus) + ")"};
    }
    // Data parallelism may run over groups of `tp` tensor-parallel GPUs (DP+TP, Megatron-LM's
    // layout; ZeRO over the data-parallel ranks like its distributed optimizer).
    const bool hybrid = value && !single && parallel.contains("tp") && tp > 1;
    for (const char* key : {"cp", "cp_kind"}) {
      if (parallel.contains(key) && !(value && !single)) {
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
    if (cp > 1 && (hybrid_shard || *value == data_parallel::gemini)) {
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
    if (parallel.contains("tp") && !tensor && !pipeline && !(value && !single)) {
      return error{"request.invalid_value", "parallel.tp",
                   "[parallel.tp] applies to the data-parallel methods (DP+TP), tensor_parallel "
                   "and pipeline"};
    }
    if (hybrid && cp == 1 && (gpus % tp != 0 || tp == gpus)) {
      return error{"parallel.invalid_tp", "parallel.tp",
                   "[parallel.tp] must divide cluster.gpus (" + std::to_string(gpus) +
                       ") and leave at least 2 data-parallel groups; got " + std::to_string(tp)};
    }
    if (tensor && parallel.contains("tp") && tp != gpus) {
      return error{"parallel.invalid_tp", "parallel.tp",
                   "[parallel.tp] tensor_parallel runs over all " + std::to_string(gpus) +
                       " GPUs; for fewer use a data-parallel method with tp (DP+TP)"};
    }
    const bool staged_tp = pipeline && tp > 1;
    if (sp.get<bool>() && !tensor && !hybrid && !staged_tp) {
      return error{"request.invalid_value", "parallel.sequence_parallel",
                   "[parallel.sequence_parallel] applies to tensor parallelism only "
                   "(tensor_parallel, or a data-parallel method with tp > 1)"};
    }
    out.offload = offload.value();
    if (tensor) {
      out.tp = gpus;
      out.sequence_parallel = sp.get<bool>();
    } else if (pipeline) {
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
      out.sequence_parallel = sp.get<bool>();
      out.micro_batches = micro_batches;
    } else {
      if (hybrid_shard && hybrid) {
        return error{"request.invalid_value", "parallel.tp",
                     "[parallel.tp] fsdp_hybrid_shard does not take tensor parallelism here"};
      }
      out.sharding = *value;
      out.tp = hybrid ? tp : 1;
      out.cp = cp;
      out.cp_kind = *cp_kind_value;
      out.dp = gpus / (out.tp * cp);
      out.sequence_parallel = sp.get<bool>();
      if (hybrid_shard) out.shard_group = gpus_per_node;
    }
    return out;
  }
  return error{"mode.unavailable", "parallel.method",
               "[parallel.method] the detailed estimator takes single, ddp, zero1, zero2, zero3, "
               "gemini, fsdp_full_shard, fsdp_shard_grad_op (with tp: DP+TP), fsdp_hybrid_shard, "
               "tensor_parallel or pipeline; got " +
                   method.dump()};
}

result<std::string> read_metric(const json& request) {
  const std::string metric = request.value("metric", json("device_used")).is_string()
                                 ? request.value("metric", std::string("device_used"))
                                 : std::string();
  if (metric != "allocated" && metric != "reserved" && metric != "device_used") {
    return error{"request.invalid_value", "metric",
                 "[metric] must be \"allocated\", \"reserved\" or \"device_used\", got " +
                     request.value("metric", json()).dump()};
  }
  return metric;
}

namespace {

// A list of module names in a request: PEFT's lists name a handful of modules, so a few hundred,
// each of a few hundred characters, bound the work of matching them against every module of the
// model (30,000 names took tens of seconds).
inline constexpr std::size_t max_module_names = 256;
inline constexpr std::size_t max_module_name_length = 256;

std::optional<error> check_module_names(const std::vector<std::string>& names,
                                        const std::string& field) {
  if (names.size() > max_module_names) {
    return error{"request.invalid_value", field,
                 "[" + field + "] must name at most " + std::to_string(max_module_names) +
                     " modules, got " + std::to_string(names.size())};
  }
  for (const auto& name : names) {
    if (name.size() > max_module_name_length) {
      return error{"request.invalid_value", field,
                   "[" + field + "] module names must be at most " +
                       std::to_string(max_module_name_length) + " characters long, got one of " +
                       std::to_string(name.size())};
    }
  }
  return std::nullopt;
}

// An adapter's target modules (`targets` of workload.lora or workload.ia3): module names, or
// "all-linear" as a string or a list (PEFT takes both); `fallback`, PEFT's default, when absent.
result<std::vector<std::string>> read_targets(const json& adapter, config_reader& in,
                                              const std::string& field,
                                              const std::vector<std::string>& fallback) {
  const bool stated = adapter.is_object() && adapter.contains("targets");
  const bool all_linear = stated && adapter.at("targets") == "all-linear";
  auto targets = all_linear ? std::vector<std::string>{"all-linear"} : in.text_list("targets");
  if (auto problem = in.problem("")) return *problem;
  if (auto e = check_module_names(targets, field + ".targets")) return *e;
  if (stated && targets.empty()) {
    std::string defaults;
    for (std::size_t i = 0; i < fallback.size(); ++i)
      defaults += (i == 0 ? "" : i + 1 == fallback.size() ? " and " : ", ") + fallback[i];
    return error{"request.invalid_value", field + ".targets",
                 "[" + field +
                     ".targets] must name at least one module (or all-linear); leave it out for " +
                     defaults};
  }
  return targets.empty() ? fallback : targets;
}

// workload.software: the torch, bitsandbytes and PEFT releases, each a version string.
std::optional<error> read_software(const json& workload, software_stack& out) {
  const json& software = workload.value("software", json());
  if (software.is_null()) return std::nullopt;
  if (!software.is_object()) {
    return error{"request.invalid_type", "workload.software",
                 "[workload.software] must be an object of library releases, e.g. {\"torch\": "
                 "\"2.4.1\", \"bitsandbytes\": \"0.44.1\", \"peft\": \"0.11.1\"}"};
  }
  if (auto e = unknown_keys(software, "workload.software", {"torch", "bitsandbytes", "peft"}))
    return *e;
  for (const auto& [name, release] :
       {std::pair{"torch", &out.torch}, std::pair{"bitsandbytes", &out.bitsandbytes},
        std::pair{"peft", &out.peft}}) {
    const json& value = software.value(name, json());
    if (value.is_null()) continue;
    *release = value.is_string() ? parse_library_release(value.get<std::string>()) : std::nullopt;
    if (!*release) {
      const std::string field = std::string("workload.software.") + name;
      return error{"request.invalid_value", field,
                   "[" + field +
                       "] a release such as \"2.4.1\": numbers separated by dots, then "
                       "optionally a pre-, post- or dev-release or a +local part; got " +
                       value.dump()};
    }
  }
  return std::nullopt;
}

// PEFT's modules_to_save: embed_tokens (or the model's own name of its token embedding) and
// lm_head, the modules modelled as trained copies.
std::optional<error> read_modules_to_save(config_reader& in, const model_spec& model,
                                          training_config& out) {
  const auto names = in.text_list("modules_to_save");
  if (auto e = check_module_names(names, "workload.lora.modules_to_save")) return *e;
  if (auto problem = in.problem("")) return *problem;
  for (const auto& name : names) {
    if (name == "lm_head") {
      out.save_lm_head = true;
    } else if (names_token_embedding(model, name)) {
      out.save_embeddings = true;
    } else {
      return error{"request.invalid_value", "workload.lora.modules_to_save",
                   "[workload.lora.modules_to_save] trained copies of embed_tokens and lm_head "
                   "are modelled, got \"" +
                       name + "\""};
    }
  }
  return std::nullopt;
}

}  // namespace

result<training_config> read_detailed_workload(const json& request, const model_spec& model,
                                               bool for_plan, std::vector<std::string>& warnings) {
  if (auto e = check_object(request, "workload")) return *e;
  const json& workload = member(request, "workload");
  if (auto e = unknown_keys(workload, "workload",
                            {"phase",
                             "finetune",
                             "lora",
                             "ia3",
                             "prompt_tuning",
                             "weights",
                             "compute",
                             "optimizer",
                             "optimizer_impl",
                             "micro_batch",
                             "seq_len",
                             "target_len",
                             "grad_ckpt",
                             "grad_accumulation",
                             "attention",
                             "loss",
                             "keep_outputs",
                             "framework",
                             "kbit_preparation",
                             "software"})) {
    return *e;
  }
  config_reader in(workload, "workload", "request");
  training_config out;
  if (auto e = read_software(workload, out.software)) return *e;
  auto choice = [&](const char* key, const std::string& fallback,
                    std::initializer_list<const char*> accepted) {
    return choose(in, key, fallback, accepted);
  };
  const auto phase = choice("phase", "train", {"train", "forward_backward"});
  const auto finetune = choice(
      "finetune", "full",
      {"full", "lora", "dora", "ia3", "prompt_tuning", "llama_adapter_v1", "llama_adapter_v2"});
  const auto compute =
      choice("compute", "amp_bf16", {"fp32", "amp_fp16", "amp_bf16", "pure_fp16", "pure_bf16"});
  const auto optimizer =
      choice("optimizer", phase && *phase == "forward_backward" ? "none" : "adamw",
             {"adamw", "adam", "adamw_8bit", "adafactor", "sgd", "sgd_momentum", "none"});
  // torch 1.x has no SDPA: transformers runs eager attention there.
  const auto attention =
      choice("attention", out.software.has_sdpa() ? "sdpa" : "eager", {"eager", "sdpa", "flash"});
  const auto framework = choice("framework", "transformers",
                                {"transformers", "litgpt", "torchtune", "unsloth", "torchtitan"});
  const auto loss = choice("loss", "model", {"model", "plain_cross_entropy"});
  // A plan (or a solve) chooses the micro-batch unless the request fixes it: 0 then.
  out.micro_batch = for_plan ? in.optional({"micro_batch"}, 0, 1ULL << 20)
                             : in.required({"micro_batch"}, 1ULL << 20);
  out.seq_len = in.optional({"seq_len"}, out.seq_len, max_positions);
  out.target_len = in.optional({"target_len"}, 0, max_positions);  // 0: not given
  // grad_ckpt: true (every block recomputed), false, or "selective" (the attention core only;
  // torchtitan's per-op policy under torchtitan).
  const json& ckpt = workload.value("grad_ckpt", json(false));
  if (!ckpt.is_boolean() && !ckpt.is_null() && ckpt != json("selective")) {
    return error{"request.invalid_value", "workload.grad_ckpt",
                 "[workload.grad_ckpt] must be true, false or \"selective\", got " + ckpt.dump()};
  }
  out.selective_recompute = ckpt.is_string();
  out.grad_ckpt = ckpt == json(true);
  out.kbit_preparation = in.flag("kbit_preparation", true);
  out.keep_outputs = in.flag("keep_outputs", false);
  out.grad_accumulation = in.optional({"grad_accumulation"}, 1, 65536);
  if (auto problem = in.problem("required for an estimate")) return *problem;
  out.optimizer_step = *phase == "train" && *optimizer != "none";
  out.finetune = *finetune_kind_named(*finetune);  // `choice` accepted only these names
  out.dora = *finetune == "dora";
  out.compute = *compute_precision_named(*compute);  // `choice` accepted only these names
  out.optimizer = *optimizer == "adamw_8bit"     ? optimizer_kind::adamw_8bit
                  : *optimizer == "adafactor"    ? optimizer_kind::adafactor
                  : *optimizer == "sgd"          ? optimizer_kind::sgd
                  : *optimizer == "sgd_momentum" ? optimizer_kind::sgd_momentum
                  : *optimizer == "none"         ? optimizer_kind::none
                                                 : optimizer_kind::adamw;
  out.attention = attention_kernel_named(*attention);
  if (in.has("optimizer_impl")) {
    const auto impl = choice("optimizer_impl", "foreach", {"foreach", "for_loop", "fused"});
    if (auto problem = in.problem("")) return *problem;
    if (out.optimizer != optimizer_kind::adamw) {
      return error{"request.invalid_value", "workload.optimizer_impl",
                   "[workload.optimizer_impl] chooses torch.optim AdamW's implementation: "
                   "optimizer adamw or adam"};
    }
    out.adamw_impl = *impl == "fused"      ? adamw_implementation::fused
                     : *impl == "for_loop" ? adamw_implementation::for_loop
                                           : adamw_implementation::foreach;
  }
  out.framework = *framework == "litgpt"       ? framework_profile::litgpt
                  : *framework == "torchtune"  ? framework_profile::torchtune
                  : *framework == "unsloth"    ? framework_profile::unsloth
                  : *framework == "torchtitan" ? framework_profile::torchtitan
                                               : framework_profile::transformers;
  out.loss = *loss == "plain_cross_entropy" ? loss_kind::plain_cross_entropy : loss_kind::model;
  if (out.loss != loss_kind::model && out.framework != framework_profile::transformers) {
    return error{"request.invalid_value", "workload.loss",
                 "[workload.loss] chooses how a transformers run takes its loss; litgpt, "
                 "torchtune, unsloth and torchtitan take their own: leave it out or \"model\""};
  }
  if (out.keep_outputs && out.framework != framework_profile::transformers) {
    return error{"request.invalid_value", "workload.keep_outputs",
                 "[workload.keep_outputs] describes a transformers training loop; litgpt, "
                 "torchtune, unsloth and torchtitan run their own: leave it out or false"};
  }
  if (out.finetune == finetune_kind::full && in.has("weights")) {
    // The stored dtype of a fully fine-tuned model (default: full_model_weight_bytes): 16-bit
    // or fp32 under autocast, what the model computes in otherwise.
    const auto weights = choice("weights", "bf16", {"fp32", "bf16", "fp16"});
    if (auto problem = in.problem("")) return *problem;
    out.full_weight_bytes = *weights == "fp32" ? 4 : 2;
    if (!is_amp(out.compute) && out.full_weight_bytes != compute_bytes(out.compute)) {
      return error{"request.invalid_value", "workload.weights",
                   "[workload.weights] a fully fine-tuned model computing in " + *compute +
                       " is stored in " +
                       (out.compute == compute_precision::fp32 ? "fp32" : "16 bits") +
                       "; mixed precision (amp_bf16, amp_fp16) takes either"};
    }
  }
  if (out.finetune == finetune_kind::llama_adapter_v1 ||
      out.finetune == finetune_kind::llama_adapter_v2) {
    if (out.framework != framework_profile::litgpt) {
      return error{"request.invalid_value", "workload.finetune",
                   "[workload.finetune] " + *finetune +
                       " is litgpt's (adapter.py, adapter_v2.py): set workload.framework "
                       "\"litgpt\""};
    }
  }
  if (out.finetune != finetune_kind::lora && workload.contains("lora")) {
    return error{"request.invalid_value", "workload.lora",
                 "[workload.lora] applies to finetune lora or dora"};
  }
  if (out.finetune != finetune_kind::ia3 && workload.contains("ia3")) {
    return error{"request.invalid_value", "workload.ia3", "[workload.ia3] applies to finetune ia3"};
  }
  if (out.finetune != finetune_kind::prompt_tuning && workload.contains("prompt_tuning")) {
    return error{"request.invalid_value", "workload.prompt_tuning",
                 "[workload.prompt_tuning] applies to finetune prompt_tuning"};
  }
  if (out.finetune == finetune_kind::prompt_tuning) {
    const json& prompt = member(workload, "prompt_tuning");
    if (auto e = unknown_keys(prompt, "workload.prompt_tuning", {"num_virtual_tokens"})) return *e;
    config_reader prompt_in(prompt, "workload.prompt_tuning", "request");
    out.virtual_tokens = prompt_in.required({"num_virtual_tokens"}, max_positions);
    if (auto problem = prompt_in.problem("for prompt tuning (PEFT's num_virtual_tokens)"))
      return *problem;
  }
  if (out.finetune != finetune_kind::full) {
    if (out.finetune == finetune_kind::lora) {
      const json& lora = member(workload, "lora");
      if (auto e = unknown_keys(lora, "workload.lora",
                                {"r", "alpha", "dropout", "targets", "modules_to_save"}))
        return *e;
      config_reader lora_in(lora, "workload.lora", "request");
      out.lora_rank = lora_in.optional({"r"}, 8, 65536);
      if (lora_in.has("dropout")) out.lora_dropout = lora_in.number("dropout", 0, 0, 1);
      auto targets =
          read_targets(lora, lora_in, "workload.lora", peft_default_targets(finetune_kind::lora));
      if (!targets.ok()) return targets.failure();
      out.lora_targets = targets.value();
      if (auto e = read_modules_to_save(lora_in, model, out)) return *e;
    }
    if (out.finetune == finetune_kind::ia3) {
      const json& ia3 = member(workload, "ia3");
      if (auto e = unknown_keys(ia3, "workload.ia3", {"targets"})) return *e;
      config_reader ia3_in(ia3, "workload.ia3", "request");
      auto targets =
          read_targets(ia3, ia3_in, "workload.ia3", peft_default_targets(finetune_kind::ia3));
      if (!targets.ok()) return targets.failure();
      out.lora_targets = targets.value();
    }
    const std::string weights = in.text("weights", "bf16");
    if (auto problem = in.problem("")) return *problem;
    if (weights == "nf4" || weights == "fp4" || weights == "nf4_double_quant") {
      // QLoRA: bitsandbytes 4-bit block linears, the rest 16-bit.
      out.quantization = weights == "nf4_double_quant" ? base_quantization::nf4_double_quant
                                                       : base_quantization::nf4;
    } else if (weights == "int8") {
      out.quantization = base_quantization::int8;  // LLM.int8 block linears, the rest 16-bit
    } else if (weights != "fp32" && weights != "bf16" && weights != "fp16") {
      return error{
          "request.invalid_value", "workload.weights",
          "[workload.weights] must be fp32, bf16, fp16, int8, nf4, fp4 or nf4_double_quant"};
    }
    out.base_weight_bytes = weights == "fp32" ? 4 : 2;
  }
  const bool pure =
      out.compute == compute_precision::pure_bf16 || out.compute == compute_precision::pure_fp16;
  if (workload.contains("kbit_preparation") &&
      (out.quantization == base_quantization::none ||
       out.framework != framework_profile::transformers || (out.kbit_preparation && pure))) {
    return error{"request.invalid_value", "workload.kbit_preparation",
                 "[workload.kbit_preparation] applies to a quantised LoRA base (weights int8, nf4, "
                 "fp4 or nf4_double_quant) under the transformers framework, computing in fp32 "
                 "or mixed precision"};
  }
  if (auto e = check_seq_len(model, out.seq_len, warnings)) return *e;
  // Prompt tuning's virtual tokens take positions too (PEFT prepends them to every sequence).
  std::vector<std::string> ignored;  // the rotary case was warned about above
  if (out.virtual_tokens > 0 && check_seq_len(model, out.seq_len + out.virtual_tokens, ignored)) {
    return error{"request.invalid_value", "workload.prompt_tuning.num_virtual_tokens",
                 "[workload.prompt_tuning.num_virtual_tokens] seq_len " +
                     std::to_string(out.seq_len) + " + " + std::to_string(out.virtual_tokens) +
                     " virtual tokens exceed the model's " + std::to_string(model.max_positions) +
                     " learned positions"};
  }
  return out;
}

result<plan_settings> read_options(const json& request) {
  if (auto e = check_object(request, "options")) return *e;
  const json& options = member(request, "options");
  if (auto e = unknown_keys(options, "options", {"mfu", "max_micro_batch", "timeline"})) return *e;
  config_reader in(options, "options", "request");
  plan_settings out;
  out.speed.mfu = in.number("mfu", default_mfu, 0.01, 1.0);
  out.max_micro_batch = in.optional({"max_micro_batch"}, out.max_micro_batch, 1ULL << 20);
  out.timeline_samples =
      static_cast<std::size_t>(in.optional({"timeline"}, 0, max_timeline_samples, 2));
  if (auto problem = in.problem("")) return *problem;
  return out;
}

result<inference_request> read_inference_request(const json& request, const model_spec& model,
                                                 std::uint64_t gpus,
                                                 std::vector<std::string>& warnings) {
  if (auto e = check_object(request, "workload")) return *e;
  const json& workload = member(request, "workload");
  if (auto e =
          unknown_keys(workload, "workload",
                       {"phase", "weights", "fp8_scaling", "group_size", "compute", "micro_batch",
                        "seq_len", "new_tokens", "kv_cache", "attention", "framework"})) {
    return *e;
  }
  config_reader in(workload, "workload", "request");
  inference_request out;
  inference_config& c = out.config;
  const auto framework =
      choose(in, "framework", "transformers", {"transformers", "litgpt", "vllm", "llama_cpp"});
  const bool llama_cpp = framework && *framework == "llama_cpp";
  const auto weights =
      choose(in, "weights", llama_cpp ? "gguf_q4_k_m" : "bf16",
             {"fp32", "fp16", "bf16", "fp8", "int8", "nf4", "fp4", "nf4_double_quant",
              "fp4_double_quant", "gptq_4bit", "awq_4bit", "mxfp4", "gguf_q8_0", "gguf_q6_k",
              "gguf_q5_k_m", "gguf_q4_k_m", "gguf_q3_k_m", "gguf_q2_k"});
  const bool fp32_weights = weights && *weights == "fp32";
  const auto compute =
      choose(in, "compute", fp32_weights ? "fp32" : "bf16",
             {"fp32", "fp16", "bf16", "amp_fp16", "amp_bf16", "pure_fp16", "pure_bf16"});
  const auto scaling = choose(in, "fp8_scaling", "per_channel", {"per_tensor", "per_channel"});
  const auto attention = choose(in, "attention", "sdpa", {"eager", "sdpa", "flash"});
  c.weights.group_size = in.optional({"group_size"}, c.weights.group_size, 1ULL << 20);
  c.batch = in.optional({"micro_batch"}, c.batch, 1ULL << 20);
  c.prompt_tokens = in.optional({"seq_len"}, c.prompt_tokens, max_positions);
  c.new_tokens = in.optional({"new_tokens"}, c.new_tokens, max_positions);
  if (auto problem = in.problem("")) return *problem;
  c.weights.format = *weight_format_named(*weights);  // `choose` accepted only these names
  c.weights.fp8 = *scaling == "per_tensor" ? fp8_scaling::per_tensor : fp8_scaling::per_channel;
  c.activation_bytes = *compute == "fp32" ? 4 : 2;
  c.activation_bf16 = compute->find("bf16") != std::string::npos;
  c.weights.dense_bytes = c.activation_bytes;
  c.attention = attention_kernel_named(*attention);
  c.framework = *serving_framework_named(*framework);  // `choose` accepted only these names

  // The KV cache: each framework's own default kind.
  const json& kv = member(workload, "kv_cache");
  if (auto e = check_object(workload, "kv_cache", "workload")) return *e;
  if (auto e = unknown_keys(kv, "workload.kv_cache",
                            {"kind", "dtype", "tokens", "block_size", "gpu_memory_utilization",
                             "max_num_batched_tokens", "max_num_seqs"})) {
    return *e;
  }
  config_reader kv_in(kv, "workload.kv_cache", "request");
  const char* default_kind = c.framework == serving_framework::vllm           ? "paged"
                             : c.framework == serving_framework::transformers ? "dynamic"
                                                                              : "static";
  const auto kind = choose(kv_in, "kind", default_kind, {"dynamic", "static", "paged"});
  const auto dtype = choose(kv_in, "dtype", *compute == "fp32" ? "fp32" : "bf16",
                            {"fp32", "fp16", "bf16", "fp8", "int8"});
  c.kv_cache_tokens = kv_in.optional({"tokens"}, 0, max_positions);  // absent: the default
  c.block_size = kv_in.optional({"block_size"}, c.block_size, 1024);
  c.gpu_memory_utilization =
      kv_in.number("gpu_memory_utilization", c.gpu_memory_utilization, 0.01, 1.0);
  c.profile_tokens = kv_in.optional({"max_num_batched_tokens"}, c.profile_tokens, 1ULL << 20);
  c.profile_sequences = kv_in.optional({"max_num_seqs"}, c.profile_sequences, 1ULL << 16);
  if (auto problem = kv_in.problem("")) return *problem;
  c.kv = *kv_cache_kind_named(*kind);
  c.kv_bytes = *dtype == "fp32" ? 4 : (*dtype == "fp8" || *dtype == "int8") ? 1 : 2;
  if ((c.kv == kv_cache_kind::paged) != (c.framework == serving_framework::vllm)) {
    return error{"request.invalid_value", "workload.kv_cache.kind",
                 "[workload.kv_cache.kind] paged is vLLM's cache, and vLLM's cache is paged"};
  }
  const std::uint64_t context = c.prompt_tokens + c.new_tokens;
  // The last new token is sampled, never fed back: transformers' generate sizes a static cache
  // to prompt + new tokens - 1 (validation/measured_h100_batch2.json: 1,151 for 1,024 + 128).
  if (c.kv_cache_tokens != 0 && c.kv_cache_tokens + 1 < context) {
    return error{"request.invalid_value", "workload.kv_cache.tokens",
                 "[workload.kv_cache.tokens] a preallocated cache must hold the prompt and all "
                 "but the last new token (" +
                     std::to_string(context - 1) + "), got " + std::to_string(c.kv_cache_tokens)};
  }
  if (auto e = check_seq_len(model, context, warnings))
    return error{e->code, "workload.seq_len", e->message};

  // How the model is split over cluster.gpus: one GPU, tensor parallelism, or layers split.
  if (auto e = check_object(request, "parallel")) return *e;
  const json& parallel = member(request, "parallel");
  if (auto e = unknown_keys(parallel, "parallel", {"method"})) return *e;
  config_reader p_in(parallel, "parallel", "request");
  const auto method = choose(p_in, "method", gpus > 1 ? "tensor_parallel" : "single",
                             {"single", "tensor_parallel", "pipeline", "pipeline_layers"});
  if (auto problem = p_in.problem("")) return *problem;
  out.method = *method == "pipeline_layers" ? "pipeline" : *method;
  if (out.method == "single" && gpus != 1) {
    return error{
        "request.invalid_value", "parallel.method",
        "[parallel.method] single runs on one GPU; cluster.gpus is " + std::to_string(gpus)};
  }
  if (out.method == "tensor_parallel") c.tp_degree = gpus;
  if (out.method == "pipeline") c.pp_degree = gpus;

  // What to solve for, if anything.
  const json& solve = member(request, "solve");
  if (request.contains("solve")) {
    if (!solve.is_string() || (solve != "max_context" && solve != "max_batch")) {
      return error{"request.invalid_value", "solve",
                   "[solve] must be \"max_context\" or \"max_batch\", got " + solve.dump()};
    }
    out.solve = solve.get<std::string>();
  }
  return out;
}

}  // namespace gpumem
