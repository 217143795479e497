"""Train a small MLP twice from the same start: once with plain torch, once inside
`torch_reduce.override()`, which routes torch.sum/mean/amax/... to treduce. The loss curves agree
to within rounding, and the mode reports what it routed."""

import torch

import torch_reduce


def train(steps: int, device: str, use_override: bool):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(512, 16, generator=gen).to(device)
    w = torch.randn(16, 4, generator=gen).to(device)
    y = torch.tanh(x @ w)
    losses = []
    mode = torch_reduce.override() if use_override else None
    if mode is not None:
        mode.__enter__()
    try:
        for _ in range(steps):
            pred = model(x)
            # mean over the batch of a per-sample loss, plus a small max-abs penalty
            loss = (pred - y).pow(2).sum(dim=1).mean() + 1e-3 * pred.abs().amax()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    finally:
        if mode is not None:
            mode.__exit__(None, None, None)
    return losses, mode


def main(steps: int = 50, device: str | None = None) -> float:
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    plain, _ = train(steps, device, use_override=False)
    routed, mode = train(steps, device, use_override=True)
    worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(routed, plain))
    print(f"== MLP training, {steps} steps on {device}: torch vs torch_reduce.override()")
    for i in list(range(0, steps, max(1, steps // 5))) + [steps - 1]:
        print(f"  step {i:3d}  torch {plain[i]:.6f}  override {routed[i]:.6f}")
    print(
        f"  largest relative difference {worst:.2e}; routed {dict(mode.routed)}, "
        f"fell back {dict(mode.fallback)}"
    )
    assert worst < 1e-4, "loss curves differ"
    assert mode.routed["sum"] > 0  # mean routes too where treduce has a mean kernel
    return worst


if __name__ == "__main__":
    main()
