// checkpoint/readers.h: the checkpoint readers over byte sources (source.h). checkpoint.h's path
// readers open a FileSource and a LocalFolder and call these; a remote reader passes its own.
#pragma once

#include <string>

#include "headcount/checkpoint_index.h"
#include "source.h"

namespace headcount {

// One .safetensors file.
Checkpoint read_safetensors(const ByteSource& file);
// A model.safetensors.index.json and the shards it names, opened through `folder`.
Checkpoint read_safetensors_index(const ByteSource& index, const SourceFolder& folder);
// One GGUF file that is not split.
Checkpoint read_gguf(const ByteSource& file);
// A GGUF file by its name in `folder`: a split one's parts (NAME-0000N-of-0000M.gguf) are all
// opened through the folder, in order.
Checkpoint read_gguf(const SourceFolder& folder, const std::string& name);

}  // namespace headcount
