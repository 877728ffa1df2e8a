// transformers + PEFT (+ TRL, accelerate): the reference loop that most public recipes run.
#include "training/framework.hpp"

namespace gpumem {

const framework_traits& transformers_framework() {
  static const framework_traits traits = [] {
    framework_traits t;
    t.name = "transformers";
    // ForCausalLMLoss upcasts the whole logits to fp32 before cross-entropy
    // (transformers/loss/loss_utils.py).
    t.loss = loss_path::upcast_logits;
    // PEFT's IA3, prompt tuning, LoRA on embeddings and modules_to_save (peft/tuners/).
    t.peft = true;
    // BitsAndBytesConfig(load_in_4bit) loads bitsandbytes Linear4bit; the output layer is
    // skipped (transformers integrations/bitsandbytes.py).
    t.bitsandbytes_4bit = true;
    // peft/utils/other.py prepare_model_for_kbit_training, run by TRL's SFTTrainer on a 4-bit
    // model.
    t.kbit_preparation = true;
    // A loop that keeps `outputs` (training_config::keep_outputs), and the model's own loss
    // wrappers (T5, Gemma 3, Llama 4) or a plain nn.CrossEntropyLoss (training_config::loss).
    t.keep_outputs_option = true;
    t.model_losses = true;
    // Its modelling code covers T5, DeepSeek's latent attention and Llama 4's experts.
    t.all_architectures = true;
    t.torch1 = true;
    t.transformers_modelling = true;
    // Tensor parallelism: a tp_plan shards the model's nn.Linear weights as DTensors
    // (transformers 4.50+ from_pretrained(tp_plan="auto"), accelerate's
    // TorchTensorParallelPlugin); PEFT's adapter layers wrap those modules and have no plan, so it
    // is offered for full fine-tuning only. Context parallelism: accelerate 1.10's
    // ParallelismConfig(cp_size) under FSDP2 (ring attention over SDPA), full fine-tuning only.
    t.tensor_parallel = parallel_support::full_fine_tuning;
    t.context_parallel = parallel_support::full_fine_tuning;
    // No pipeline: device_map="auto" splits the blocks over the GPUs but runs them one at a
    // time (accelerate big_modeling, naive model parallelism).
    return t;
  }();
  return traits;
}

}  // namespace gpumem
