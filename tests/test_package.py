"""The package itself: import order, and the one clear error when the extension cannot load."""

import subprocess
import sys

import torch


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_import_without_prior_torch_import():
    r = run_python(
        "import torch_reduce\nimport torch\nprint(torch_reduce.sum(torch.ones(3)).item())"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "3.0"


def test_extension_load_failure_names_both_torch_versions():
    # Make the compiled module unimportable, as a build against another torch would be.
    r = run_python("import sys; sys.modules['torch_reduce._C'] = None\nimport torch_reduce")
    assert r.returncode != 0
    err = r.stderr
    assert (
        "ImportError: torch_reduce: the compiled extension torch_reduce._C could not be loaded"
        in err
    )
    assert "built against: torch " in err
    assert f"found at runtime: torch {torch.__version__}" in err
    assert "pip install --no-build-isolation --no-deps -e ." in err


def test_direct_entry_load_failure_is_as_clear():
    r = run_python("import sys; sys.modules['torch_reduce._fast'] = None\nimport torch_reduce")
    assert r.returncode != 0
    assert (
        "ImportError: torch_reduce: the compiled extension torch_reduce._fast could not be loaded"
    ) in r.stderr
    assert "pip install --no-build-isolation --no-deps -e ." in r.stderr


def test_ops_are_registered_with_schemas():
    assert str(torch.ops.treduce.sum.default._schema) == (
        "treduce::sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)"
        " -> Tensor"
    )
    assert str(torch.ops.treduce.amax.default._schema) == (
        "treduce::amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor"
    )


def test_readme_use_example_runs():
    """The README's "Use" block runs as written, here on the CPU when there is no GPU."""
    import pathlib
    import re

    text = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    use = text[text.index("## Use") :]
    block = re.search(r"```python\n(.*?)```", use, re.S).group(1)
    exec(compile(block, "README.md (Use)", "exec"), {})
