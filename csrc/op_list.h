// op_list.h: the ops of torch.ops.treduce, once. Everything that enumerates them (the OpKind
// codes, their names, the Python wrappers' codes through torch_reduce._fast.OPS) expands this.
#pragma once

// X(kind, name): the OpKind enumerator and the schema name. The order is the codes' order.
#define TREDUCE_OPS(X)   \
  X(kSum, "sum")         \
  X(kMean, "mean")       \
  X(kProd, "prod")       \
  X(kAmax, "amax")       \
  X(kAmin, "amin")       \
  X(kArgmax, "argmax")   \
  X(kArgmin, "argmin")   \
  X(kAnd, "bitwise_and") \
  X(kOr, "bitwise_or")   \
  X(kXor, "bitwise_xor")

namespace treduce {

enum class OpKind : long {
#define TREDUCE_OP_ENUM(kind, name) kind,
  TREDUCE_OPS(TREDUCE_OP_ENUM)
#undef TREDUCE_OP_ENUM
};

constexpr long kNumOps = 0
#define TREDUCE_OP_COUNT(kind, name) +1
    TREDUCE_OPS(TREDUCE_OP_COUNT)
#undef TREDUCE_OP_COUNT
    ;

inline const char* op_name(OpKind kind) {
  switch (kind) {
#define TREDUCE_OP_NAME(k, name) \
  case OpKind::k:                \
    return name;
    TREDUCE_OPS(TREDUCE_OP_NAME)
#undef TREDUCE_OP_NAME
  }
  return "?";
}

}  // namespace treduce
