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
    return t;
  }();
  return traits;
}

}  // namespace gpumem
