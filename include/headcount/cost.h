// headcount/cost.h: what the audited architecture costs at inference, from the graph itself: the
// key/value cache a decoder keeps per token, what grouped K/V heads saved, and the
// multiply-accumulates (MACs) one token costs.
//
// Every figure comes from the attention blocks (heads, head sizes, projection widths) and the
// weight shapes; no weight byte is read. A block whose K/V size cannot be known makes the total a
// lower bound, and says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headcount/results/cost.h"
#include "headcount/results/attention.h"
#include "headcount/results/experts.h"
#include "headcount/results/mixers.h"
#include "headcount/results/parts.h"
#include "headcount/model.h"

namespace headcount {

struct CostOptions {
  uint64_t context = 4096;  // tokens in the cache, and of a prompt (--context)
  uint64_t batch = 1;       // sequences (--batch)
  int kv_bits = 0;          // bits per cached K/V element; 0: the graph's own (--kv-dtype)
  std::string kv_dtype;     // the name given with --kv-dtype
};

// The K/V element sizes --kv-dtype accepts: name -> bits. Throws InputError for another name.
int kv_dtype_bits(const std::string& name);
const std::vector<std::pair<std::string, int>>& kv_dtypes();

Cost estimate_cost(const Model& model, const AttentionResult& attention, const ExpertResult& experts, const MixerResult& mixers,
                   const Composition& composition, const CostOptions& options);

}  // namespace headcount
