// dtypes.cpp: the element types of safetensors and GGUF (headcount/dtypes.h).
#include "headcount/dtypes.h"

namespace headcount {

namespace {

// ggml's tensor types, by their number in ggml/include/ggml.h of llama.cpp. The block sizes are
// ggml.c's type_traits (blck_size, and type_size = sizeof the block struct of ggml-common.h,
// whose static_asserts spell each size out). @huggingface/gguf's GGML_QUANT_SIZES agrees on
// every row but Q8_1, where it keeps ggml's old block of two floats (40 bytes); ggml's
// block_q8_1 now holds two halves (36).
constexpr GgmlType kGgmlTypes[] = {
    {0, "F32", 1, 4},          {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},       {7, "Q5_1", 32, 24},      {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},     {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},    {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98},  {19, "IQ1_S", 256, 50},   {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},    {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},         {27, "I64", 1, 8},        {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},        {34, "TQ1_0", 256, 54},   {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
    {40, "NVFP4", 64, 36},     {41, "Q1_0", 128, 18},    {42, "Q2_0", 64, 18},
};

}  // namespace

const CheckpointDtype* checkpoint_dtype(const std::string& name) {
  static const CheckpointDtype table[] = {  // (name, bits, onnx.proto TensorProto.DataType)
      {"BOOL", 8, 9},    {"U8", 8, 2},      {"I8", 8, 3},      {"F8_E5M2", 8, 19}, {"F8_E4M3", 8, 17}, {"F8_E8M0", 8, 0},
      {"I16", 16, 5},    {"U16", 16, 4},    {"F16", 16, 10},   {"BF16", 16, 16},   {"I32", 32, 6},     {"U32", 32, 12},
      {"F32", 32, 1},    {"F64", 64, 11},   {"I64", 64, 7},    {"U64", 64, 13},    {"F4", 4, 23},      {"F6_E2M3", 6, 0},
      {"F6_E3M2", 6, 0}};
  for (const CheckpointDtype& t : table) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

const GgmlType* ggml_type(uint32_t id) {
  for (const GgmlType& t : kGgmlTypes) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

}  // namespace headcount
