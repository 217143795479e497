"""DTensor sharding rules for the treduce ops (torch.distributed.tensor).

Registered through DTensor's own extension point (`register_sharding`), so that a DTensor passed
to `torch_reduce.sum` (or `torch.ops.treduce.sum`) is handled as DTensor handles `torch.sum`:
redistribution, `full_tensor()` and autograd work as for aten ops. Per mesh dim:

- Replicate stays Replicate;
- Shard(d) on a kept dim stays sharded (on d, moved down past the dims that a reduction without
  keepdim removes);
- Shard(d) on a reduced dim: each rank reduces its shard with our kernels, and the result is a
  `ReducePartial` of the op. Turning it into Replicate or Shard gathers the ranks' partial
  results (output-sized, not input-sized) and reduces them with the same op over the ranks, in
  rank order. So amax/amin propagate NaN as torch does, bitwise ops work on NCCL (which has no
  bitwise reduce), integer products wrap as one product does, and a sum's bits depend on the
  values and the number of ranks only, never on the collective's order. mean combines the ranks'
  means weighted by their element counts, taken from the global shape (uneven shards included),
  except the wrappers' narrow float means below (wide_sum: float64 sums over the count);
- products with a floating result over a sharded dim take the input replicated on that dim
  (_float_prod): a rank's rounded partial product could overflow, or underflow, where the
  whole product does not, which the single-device product never does;
- argmax/argmin over a sharded dim take the input replicated on that dim (DTensor all-gathers it).

A Partial input (a pending sum, say) is redistributed by DTensor first (made Replicate, or
reduce-scattered onto a dim), except that sum accepts Partial(sum) as torch.sum does (the sum
of partial sums is the sum), and the wrappers' narrow float mean of a Partial(sum) input sums
its parts in float64 (wide_sum).

What is and is not bit-identical to the single-device result (README, DTensor): sharding over
kept dims gives its bits. Over a sharded dim, the wrappers' float32/float16/bfloat16 sum and mean
take float64 partials and round once (wide_sum), which gave the single-device bits in every case
measured; through torch.ops.treduce directly the partials are rounded first and may differ in
the last bits. The wrappers' argmax/argmin over a sharded dim gather (value, index) pairs
(arg_sharded) instead of the input.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist
from torch.distributed.tensor import Partial, Replicate, Shard
from torch.distributed.tensor._op_schema import RuntimeSchemaInfo
from torch.distributed.tensor.experimental import register_sharding
from torch.distributed.tensor.placement_types import Placement

import torch_reduce

__all__ = ["ReducePartial", "register"]

# The ops whose partial results combine with the same op; the Partial reduce_op names the
# closest collective (it is not used: ReducePartial gathers and reduces itself).
_COMBINE = {
    "sum": "sum",
    "mean": "sum",
    "prod": "product",
    "amax": "max",
    "amin": "min",
    "bitwise_and": "band",
    "bitwise_or": "bor",
    "bitwise_xor": "bxor",
}
_INDEX_OPS = ("argmax", "argmin")


class ReducePartial(Partial):
    """Partial results of a treduce op on each rank of a mesh dim, pending their combination:
    all-gather (output-sized), then the op over the ranks in rank order. For mean, `sizes` holds
    the reduced element count of each rank's shard and the partials are combined as the sum of
    mean_r * size_r / total."""

    op: str
    sizes: tuple[int, ...] | None

    def __init__(self, op: str, sizes: tuple[int, ...] | None = None):
        super().__init__(_COMBINE[op] if op != "mean" else "avg")
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "sizes", sizes)

    def _combine(self, tensor: torch.Tensor, mesh, mesh_dim: int) -> torch.Tensor:
        import torch.distributed._functional_collectives as funcol

        parts = funcol.wait_tensor(
            funcol.all_gather_tensor(tensor.unsqueeze(0).contiguous(), 0, (mesh, mesh_dim))
        )
        if self.op == "mean":
            sizes = self.sizes
            assert sizes is not None  # set by the mean rule
            w = torch.tensor(sizes, dtype=torch.float64, device=parts.device) / sum(sizes)
            w = w.reshape((-1,) + (1,) * tensor.dim())
            # an empty shard's mean is NaN (0/0) and weighs nothing
            contrib = torch.where(w > 0, parts.double() * w, torch.zeros((), dtype=torch.float64))
            return torch_reduce.sum(contrib, 0).to(tensor.dtype)
        return getattr(torch_reduce, self.op)(parts, 0)

    def _reduce_value(self, tensor: torch.Tensor, mesh, mesh_dim: int) -> torch.Tensor:
        return self._combine(tensor, mesh, mesh_dim)

    def _reduce_shard_value(self, tensor: torch.Tensor, mesh, mesh_dim: int, shard_spec):
        full = self._combine(tensor, mesh, mesh_dim)
        return shard_spec._replicate_to_shard(
            full, mesh, mesh_dim, mesh._sym_get_coordinate(mesh_dim)
        )

    def _partition_value(self, tensor: torch.Tensor, mesh, mesh_dim: int) -> torch.Tensor:
        raise ValueError(f"Replicate to ReducePartial({self.op}) is not supported")

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ReducePartial) and self.op == other.op and self.sizes == other.sizes
        )

    def __hash__(self) -> int:
        return hash(("ReducePartial", self.op, self.sizes))

    def __repr__(self) -> str:
        return f"ReducePartial({self.op})"

    __str__ = __repr__


def _reduced(ndim: int, dim) -> list[int]:
    """The reduced dims as the ops normalise them (None or [] is every dim); 0-dim inputs reduce
    nothing. Out-of-range dims raise later, in the local op, with torch's message."""
    if ndim == 0:
        return []
    if dim is None:
        return list(range(ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    if not dims:
        return list(range(ndim))
    return sorted({d % ndim for d in dims})


def _rank_sizes(shape, d: int, mesh_size: int) -> tuple[int, ...]:
    """Each rank's extent of dim d under Shard(d) on a mesh dim of mesh_size ranks."""
    return tuple(
        Shard.local_shard_size_and_offset(shape[d], mesh_size, r)[0] for r in range(mesh_size)
    )


# Ops that raise on an empty reduction (torch's rule), so a rank with an empty shard of a reduced
# dim cannot take part in a ReducePartial of them.
_NEED_ELEMENTS = ("amax", "amin")


def _float_prod(op: str, x, dtype) -> bool:
    """A product with a floating result: its partials, rounded to that dtype, could overflow or
    underflow where the whole product does not (or meet an overflow with a zero), which the
    single-device product never does; so its reduced dims are gathered, not combined."""
    if op != "prod":
        return False
    if dtype is None and x.tensor_meta is None:
        return True  # the input's dtype unknown: gathering is right for any dtype
    out = dtype if dtype is not None else x.tensor_meta.dtype
    return out.is_floating_point


def _strategies(op: str, x, dim, keepdim: bool, mesh_size: int | None, mesh_sizes, dtype=None):
    nd = x.ndim
    red = _reduced(nd, dim)
    float_prod = _float_prod(op, x, dtype)
    out: list[tuple[list[Placement], list[Placement]]] = [([Replicate()], [Replicate()])]
    if op == "sum":
        out.append(([Partial("sum")], [Partial("sum")]))
    for d in range(nd):
        if d not in red:
            dd = d if keepdim else d - sum(r < d for r in red)
            out.append(([Shard(dd)], [Shard(d)]))
        elif op not in _INDEX_OPS:
            if op in _NEED_ELEMENTS and any(0 in _rank_sizes(x.shape, d, m) for m in mesh_sizes):
                continue  # some rank's shard is empty: replicate dim d instead
            if float_prod:
                continue  # replicate dim d (_float_prod)
            sizes = None
            if op == "mean":
                if mesh_size is None:
                    continue
                others = 1
                for r in red:
                    if r != d:
                        others *= x.shape[r]
                sizes = tuple(s * others for s in _rank_sizes(x.shape, d, mesh_size))
            out.append(([ReducePartial(op, sizes)], [Shard(d)]))
    return out


_NARROW_FLOATS = (torch.float32, torch.float16, torch.bfloat16)
# Conversions that change no value: the input need not be converted before the float64 sum.
_EXACT_WIDENING = {(torch.float16, torch.float32), (torch.bfloat16, torch.float32)}


def wide_sum(op: str, x, dims, keepdim: bool, dtype):
    """sum or mean (the wrappers') of a DTensor with a reduced dim sharded, for float32, float16
    and bfloat16 results (of any input dtype): the ranks' partial sums in float64 (dtype=
    float64), combined in float64; a mean then divides by the global element count in float64,
    as the single-device mean divides its float64 sum (reduce_ops.h, WideMeanOp); the result
    rounded once to its dtype. So it is
    correctly rounded in practice as the single-device one is, and so has its bits, rather than a
    sum of rounded partials. (Partial means weighted by their shard's share, rounded in float64,
    could land on either side of an exact float32 midpoint, which small means hit often.) A mean
    of a Partial("sum") input takes the same path: the sum of its parts in float64, over the
    count. The result is Replicate on those mesh dims. None where this does not apply."""
    out_dtype = dtype if dtype is not None else x.dtype
    if out_dtype not in _NARROW_FLOATS:
        return None
    # dtype= converts the input first (as torch's does): elements that the conversion rounds are
    # converted here too, before the float64 sum; the parts of a pending sum cannot be.
    exact = x.dtype == out_dtype or (x.dtype, out_dtype) in _EXACT_WIDENING
    partial = any(p.is_partial() for p in x.placements)
    if partial and not exact:
        return None
    red = _reduced(x.ndim, dims)
    sharded = any(p.is_shard() and getattr(p, "dim", None) in red for p in x.placements)
    # A pending sum: DTensor would reduce-scatter it onto a reduced dim for the mean (whose rules
    # take no Partial), and the ranks' rounded means would then be weighted.
    pending = op == "mean" and any(p == Partial("sum") for p in x.placements)
    if not (sharded or pending):
        return None
    src = x if exact else x.to(out_dtype)
    wide = torch.ops.treduce.sum.default(src, dims, keepdim, dtype=torch.float64)
    target = [Replicate() if p.is_partial() else p for p in wide.placements]
    wide = wide.redistribute(wide.device_mesh, target)
    if op == "mean":  # 0 / 0 is NaN: the mean of nothing, as torch's
        wide = wide / math.prod(x.shape[d] for d in red)
    return wide.to(out_dtype)


def arg_sharded(op: str, x, dim, keepdim: bool):
    """argmax/argmin (the wrappers') of a DTensor sharded along `dim` on one mesh dim: each rank
    finds its shard's (value, global index) pair, the pairs are all-gathered (output-sized), and
    the op over the ranks' values, in rank order, picks the pair. The first rank with the best
    value (or with a NaN) holds the smallest such global index, so torch's rules hold: the first
    index among ties, the first NaN. The result is Replicate on that mesh dim. None where this
    does not apply (no dim, the dim sharded on several mesh dims or not at all, a Partial
    placement, an empty shard)."""
    import torch.distributed._functional_collectives as funcol
    from torch.distributed.tensor import DTensor

    if dim is None or x.ndim == 0:
        return None
    d = dim % x.ndim
    placements = list(x.placements)
    if any(p.is_partial() for p in placements):
        return None
    if any(p.is_shard() and type(p) is not Shard for p in placements):
        return None  # strided shards: left to DTensor
    along = [i for i, p in enumerate(placements) if p.is_shard() and p.dim == d]
    if len(along) != 1:
        return None
    m = along[0]
    mesh = x.device_mesh
    ranks = mesh.size(m)
    if 0 in _rank_sizes(x.shape, d, ranks):
        return None
    local = x.to_local()
    idx = getattr(torch_reduce, op)(local, d, True)
    val = torch.gather(local, d, idx)
    offset = Shard.local_shard_size_and_offset(x.shape[d], ranks, mesh.get_local_rank(m))[1]
    group = (mesh, m)
    vals = funcol.wait_tensor(funcol.all_gather_tensor(val.unsqueeze(0).contiguous(), 0, group))
    idxs = funcol.wait_tensor(
        funcol.all_gather_tensor((idx + offset).unsqueeze(0).contiguous(), 0, group)
    )
    best = getattr(torch_reduce, op)(vals, 0, True)
    out = torch.gather(idxs, 0, best).squeeze(0)
    shape = list(x.shape)
    if keepdim:
        shape[d] = 1
    else:
        out = out.squeeze(d)
        del shape[d]
    new: list[Placement] = []
    for i, p in enumerate(placements):
        if i == m:
            new.append(Replicate())
        elif type(p) is Shard:
            new.append(Shard(p.dim if keepdim or p.dim < d else p.dim - 1))
        else:
            new.append(p)
    stride = torch.empty(shape, device="meta").stride()
    return DTensor.from_local(
        out, mesh, new, run_check=False, shape=torch.Size(shape), stride=stride
    )


_registered = False


def register() -> None:
    """Registers the sharding rules (once; `import torch_reduce.distributed` calls it)."""
    global _registered
    if _registered:
        return
    from torch.distributed.tensor import DTensor

    propagator = DTensor._op_dispatcher.sharding_propagator

    def make(op: str):
        def rule(x, dim=None, keepdim=False, dtype=None):
            mesh = x.mesh
            size = mesh.size() if mesh.ndim == 1 else None  # mean's weights: 1-D meshes
            return _strategies(op, x, dim, keepdim, size, mesh.shape, dtype)

        def index_rule(x, dim=None, keepdim=False):
            return _strategies(op, x, dim, keepdim, None, x.mesh.shape)

        return index_rule if op in _INDEX_OPS else rule

    for op in list(_COMBINE) + list(_INDEX_OPS):
        overload = getattr(torch.ops.treduce, op).default
        register_sharding(overload)(make(op))
        # register_sharding hashes only int and int? arguments into the cache key of its
        # sharding decisions; `dim` is int[]? here, so two calls that differ only in dim would
        # share one decision. Every argument after the input counts.
        kw = [a.name for a in overload._schema.arguments[1:]]
        propagator.op_to_schema_info[overload] = RuntimeSchemaInfo(
            1, static_kwargkey=kw, needs_pytree=True
        )
    _registered = True


if dist.is_available():
    register()
