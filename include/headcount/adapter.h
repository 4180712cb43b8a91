// headcount/adapter.h: the adapter stage. A checkpoint whose tensors are a LoRA adapter's
// factors (PEFT's lora_A/lora_B, MLX's lora_a/lora_b, llama.cpp's .lora_a/.lora_b) is read as
// one: per target module its layers, rank, widths and parameters, with the adapter's config.
#pragma once

#include <optional>
#include <string>

#include <vector>

#include "headcount/model.h"
#include "headcount/results/adapter.h"
#include "headcount/results/model_config.h"

namespace headcount {

// The adapter `model` (a checkpoint) holds, or nothing when no tensor is a LoRA factor.
// `config_text` is its adapter_config.json ("" when there is none), shown as `config_name`.
std::optional<Adapter> read_adapter(const Model& model, const std::string& config_text, const std::string& config_name);

// A matrix of a base, by its module's path ("model.layers.0.self_attn.q_proj") and its dims.
struct BaseMatrix {
  std::string path;
  int64_t rows = 0, columns = 0;
  bool widths_known = true;  // false for a module stored quantized (packed bytes, GPTQ's qweight)
};

// A base model's matrices: its 2-d tensors named NAME.weight, and the modules it stores quantized
// (bitsandbytes' 4-bit NAME.weight [bytes, 1] with NAME.weight.absmax ..., GPTQ's and AWQ's
// NAME.qweight), whose widths are not read.
std::vector<BaseMatrix> base_matrices(const Model& base);
// The matrices a config's numbers give a LLaMA-named model (Hugging Face's names: q/k/v/o_proj,
// gate/up/down_proj, embed_tokens, lm_head): all of them, for a family known to name its modules
// so and a config declaring every field they need; else none (no module is proven either way).
std::vector<BaseMatrix> config_matrices(const ModelConfig& config);

// The adapter against a base's matrices (shown as `shown`, with `parameters` its framework count,
// when known): each module it changes is looked for by its path from the layer container on
// ("layers.0.self_attn.q_proj"), and its widths compared with the matrix's as `layout` says (an
// embedding's the other way round). A module the base does not hold is a misfit when
// `names_prove` (a checkpoint's names, a config's complete matrices), else unchecked; a module
// whose factors make no matrix (one missing, ranks that disagree) is a misfit.
enum class BaseLayout {
  OutIn,   // nn.Linear's [out, in]: a config's matrices, a checkpoint of PEFT's fan_in_fan_out false
  InOut,   // GPT-2's Conv1D [in, out]: a checkpoint of PEFT's fan_in_fan_out true
  Either,  // not known: an export's MatMul weights, a checkpoint the adapter says nothing of
};
AdapterFit fit_adapter(const Adapter& adapter, const std::vector<BaseMatrix>& base, bool names_prove, BaseLayout layout,
                       const std::string& shown, std::optional<uint64_t> parameters);

// The adapter config beside a local checkpoint (adapter_config.json in its folder), "" for none.
std::string find_adapter_config(const std::string& model_path);

}  // namespace headcount
