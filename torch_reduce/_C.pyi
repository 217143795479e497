# torch_reduce._C: importing it registers torch.ops.treduce (csrc/ops.cpp); it has no attributes.
