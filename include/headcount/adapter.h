// headcount/adapter.h: the adapter stage. A checkpoint whose tensors are a LoRA adapter's
// factors (PEFT's lora_A/lora_B, MLX's lora_a/lora_b, llama.cpp's .lora_a/.lora_b) is read as
// one: per target module its layers, rank, widths and parameters, with the adapter's config.
#pragma once

#include <optional>
#include <string>

#include "headcount/model.h"
#include "headcount/results/adapter.h"

namespace headcount {

// The adapter `model` (a checkpoint) holds, or nothing when no tensor is a LoRA factor.
// `config_text` is its adapter_config.json ("" when there is none), shown as `config_name`.
std::optional<Adapter> read_adapter(const Model& model, const std::string& config_text, const std::string& config_name);

// The adapter against `base` (its model, shown as `shown`, with `parameters` its framework
// count): each module it changes is looked for in the base by its path from the layer container on
// ("layers.0.self_attn.q_proj"), and its widths compared with the base tensor's, either way round.
AdapterFit fit_adapter(const Adapter& adapter, const Model& base, const std::string& shown, uint64_t parameters);

// The adapter config beside a local checkpoint (adapter_config.json in its folder), "" for none.
std::string find_adapter_config(const std::string& model_path);

}  // namespace headcount
