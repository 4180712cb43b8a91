// json_fields.h: the names of the JSON report's fields that are written in one place and read in
// another (the baseline reader in gate.cpp): defined once, so the two cannot drift apart. The
// whole document is described by docs/headcount.schema.json.
#pragma once

namespace headcount::json_field {

inline constexpr const char* kSchema = "schema";
inline constexpr const char* kRecord = "record";  // jsonl lines: "model" or "error"
inline constexpr const char* kModels = "models";
inline constexpr const char* kErrors = "errors";
inline constexpr const char* kFile = "file";
inline constexpr const char* kMessage = "message";
inline constexpr const char* kParameters = "parameters";
inline constexpr const char* kStored = "stored";
inline constexpr const char* kUnique = "unique";
inline constexpr const char* kFramework = "framework";
inline constexpr const char* kAttention = "attention";
inline constexpr const char* kContentCompared = "content_compared";
inline constexpr const char* kBlocks = "attention_blocks";
inline constexpr const char* kForm = "form";
inline constexpr const char* kHeads = "heads";
inline constexpr const char* kKvHeads = "kv_heads";
inline constexpr const char* kWidth = "width";

}  // namespace headcount::json_field
