// headcount/results/adapter.h: a LoRA adapter (PEFT, MLX or llama.cpp's GGUF) read from a
// checkpoint's tensor names and shapes and the adapter's config. Written by read_adapter
// (src/adapter.cpp); read by the composition and the renderers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headcount {

// One module the adapter changes (q_proj, c_attn, attn_q ...), over every layer it is in.
struct AdapterTarget {
  std::string module;
  std::string reaches;          // what a packed module holds ("Q, K and V"); "" otherwise
  int layers = 0;               // the layers it is in; 0 outside the layers (an embedding, a head)
  std::vector<int64_t> ranks;   // the ranks its factors have, distinct, smallest first
  int64_t in = 0, out = 0;      // the module's input and output widths; 0 when they differ
  uint64_t parameters = 0;      // its A and B factors and DoRA magnitudes, every layer
  uint64_t magnitudes = 0;      // of them, DoRA's magnitude vectors
};

// One module of one layer the adapter changes, as its factors' shapes say.
struct AdapterModule {
  std::string path;         // without the tool's wrapping: "model.layers.0.self_attn.q_proj", "blk.0.attn_q"
  int64_t in = 0, out = 0;  // 0 when its factors do not say
  std::string problem;      // why its factors make no matrix (one missing, ranks that disagree); "" when they do
  bool embedding = false;   // an embedding's factors: its base weight is [in (the vocabulary), out]
};

// The adapter against the base it is for (--base): whether each module it changes is in the base
// with the adapter's widths.
struct AdapterFit {
  std::string base;              // the base as given
  std::optional<uint64_t> base_parameters;  // its framework count; unknown for a config no family counts
  int fitted = 0;                // modules found in the base with the adapter's widths
  std::vector<std::string> misfits;   // proven: another width, or no such module in a checkpoint's names
  std::vector<std::string> unchecked; // an export's module that no tensor name shows (names are not kept)
};

struct Adapter {
  std::string format;       // "PEFT", "MLX" or "GGUF"
  std::string method;       // "LoRA" or "DoRA"
  std::string config;       // where its settings were read: the adapter_config.json, or "GGUF metadata"; "" none
  std::optional<int64_t> declared_rank;
  std::optional<double> alpha, scale;
  std::string scale_from;   // how the scale follows: "lora_alpha / r", "lora_parameters.scale" ...
  std::string base;         // the base model it names; "" when it names none
  // PEFT's fan_in_fan_out: whether the base's layers store [in, out] (GPT-2's Conv1D; PEFT sets it
  // so, and saves it, for such layers) or [out, in]; unknown when the config does not say.
  std::optional<bool> fan_in_fan_out;
  std::vector<std::string> declared_targets;
  std::vector<AdapterTarget> targets;
  std::vector<int> factors;        // weight indices of its A, B and magnitude tensors
  std::vector<int> saved_modules;  // weight indices of whole modules saved beside it
  uint64_t lora = 0;        // A and B factors
  uint64_t magnitudes = 0;  // DoRA's magnitude vectors
  uint64_t saved = 0;       // whole modules saved beside (modules_to_save, a classifier's head)
  uint64_t total = 0;       // lora + magnitudes + saved
  std::vector<std::string> notes;  // what does not agree: a factor without its pair, a rank or a target the config does not declare
  std::vector<AdapterModule> modules;  // every module of every layer it changes
  std::optional<AdapterFit> fit;       // with --base
};

}  // namespace headcount
