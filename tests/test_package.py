"""The package itself: import order, and the one clear error when the extension cannot load."""

import subprocess
import sys

import pytest
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
    # Make the library fail to load, as a build against another torch would (undefined symbols).
    r = run_python(
        "import torch\n"
        "def fail(path): raise OSError(path + ': undefined symbol: _ZN3c10')\n"
        "torch.ops.load_library = fail\n"
        "import torch_reduce"
    )
    assert r.returncode != 0
    err = r.stderr
    assert "ImportError: torch_reduce: the compiled library could not be loaded: " in err
    assert "libtorch_reduce.so" in err and "undefined symbol" in err
    assert "built against: torch " in err
    assert f"found at runtime: torch {torch.__version__}" in err
    assert "pip install --no-build-isolation --no-deps -e ." in err


def test_direct_entry_load_failure_is_as_clear():
    r = run_python("import sys; sys.modules['torch_reduce._fast'] = None\nimport torch_reduce")
    assert r.returncode != 0
    assert (
        "ImportError: torch_reduce: the compiled library could not be loaded: torch_reduce._fast"
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


def test_version_is_the_packages():
    """torch_reduce.__version__ is the version that setup.py gives the package (one place)."""
    import pathlib
    import re

    import torch_reduce

    text = (
        pathlib.Path(__file__).resolve().parents[1] / "torch_reduce" / "_version.py"
    ).read_text()
    assert torch_reduce.__version__ == re.search(r'__version__ = "([^"]+)"', text).group(1)
    try:
        from importlib.metadata import version

        installed = version("torch-reduce")
    except Exception:  # not installed as a distribution (a build in place)
        return
    assert installed == torch_reduce.__version__


def test_a_build_for_another_torch_is_refused_with_a_clear_message():
    import torch

    import torch_reduce

    assert torch_reduce._build_mismatch(torch.__version__, torch.version.cuda) is None
    message = torch_reduce._build_mismatch("2.10.0+cu128", "12.8")
    assert "built for torch 2.10.0+cu128" in message
    assert f"this process has torch {torch.__version__}" in message
    assert "pip install --no-build-isolation" in message


def test_a_gpu_outside_the_arch_list_is_named(monkeypatch):
    import torch

    import torch_reduce

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    assert torch_reduce._arch_mismatch("9.0") is None
    assert torch_reduce._arch_mismatch("8.0+PTX") is None  # PTX compiles for newer GPUs
    assert torch_reduce._arch_mismatch("8.0 8.6") is not None
    assert "sm_90" in torch_reduce._arch_mismatch("10.0")
    assert torch_reduce._arch_mismatch(None) is None  # a CPU-only build
    # arch-specific and family-specific targets (TORCH_CUDA_ARCH_LIST=9.0a on a Hopper host)
    assert torch_reduce._arch_mismatch("9.0a") is None
    assert torch_reduce._arch_mismatch("8.6;9.0a+PTX") is None
    assert torch_reduce._arch_mismatch("8.0a+PTX") is not None  # sm_80a's PTX runs on sm_80 only
    assert torch_reduce._arch_mismatch("10.0f") is not None
    assert torch_reduce._arch_mismatch("Hopper") is None  # a name: torch's to resolve
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (10, 3))
    assert torch_reduce._arch_mismatch("10.0f") is None  # the family from 10.0 on
    assert torch_reduce._arch_mismatch("10.0a") is not None


def test_sanitizer_coverage_script_runs_its_cases():
    """scripts/sanitize_cover.py, which compute-sanitizer runs on a GPU machine, walks its case loop
    without a GPU (--device cpu: every op, dtype and forced configuration of one case), so that
    an error in the script shows here and not only under the sanitizer."""
    import pathlib

    script = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "sanitize_cover.py"
    for shard in ("1/38", "30/38"):
        done = subprocess.run(
            [sys.executable, str(script), "--device", "cpu", "--shard", shard],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        calls = int(done.stdout.split("sanitize_cover:")[1].split()[0])
        assert calls > 100, done.stdout[-500:]


def test_ninja_times_reports_the_steps_of_one_build(tmp_path):
    """scripts/ninja_times.py, which the GPU machine's script runs after each build: the steps
    not in the copy from before the build are that build's, the longest first (also where ninja
    recompacted the log, dropping an old line); a build that added none compiled nothing."""
    import pathlib

    script = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "ninja_times.py"
    header, earlier = "# ninja log v5\n", "0\t9000\t1\t/b/old.o\th\n0\t7000\t1\t/b/gone.o\th\n"
    before = tmp_path / "before"
    before.write_text(header + earlier)
    log = tmp_path / ".ninja_log"
    log.write_text(
        header
        + "0\t9000\t1\t/b/old.o\th\n"  # an earlier build's step (gone.o's line recompacted away)
        + "0\t40000\t1\t/b/units/prod_half.o\th\n"
        + "100\t12500\t1\t/b/units/sum_float.o\th\n"
        + "40000\t41000\t1\t/b/lib.so\th\n"
    )

    def report(*args):
        done = subprocess.run(
            [sys.executable, str(script), str(log), *args], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    lines = report("--before", str(before))
    assert lines[0].startswith("ninja: 3 steps, 41 s from the first start to the last end")
    assert [line.split()[-1] for line in lines[1:]] == ["prod_half.o", "sum_float.o", "lib.so"]
    assert lines[1].split()[0] == "40.0"
    before.write_text(log.read_text())
    assert report("--before", str(before)) == ["ninja: nothing recompiled"]


def test_build_from_nothing_starts_the_longest_units_first():
    """ninja starts a build from nothing in the order of its build file: setup.py's
    LONGEST_FIRST order, not the name order distutils sorts the sources into (a build in name
    order took 77 s on the 16-core H100 host where its steps ranked longest first replay in 60)."""
    import ast
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1]
    ninja = root / "build" / "ninja" / "torch_reduce" / "build.ninja"
    if not ninja.exists():
        pytest.skip("no in-place build here (scripts/install.sh makes one)")
    tree = ast.parse((root / "setup.py").read_text())
    ranked = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "LONGEST_FIRST"
    )
    assert len(ranked) == len(set(ranked)) and all((root / s).exists() for s in ranked), ranked
    built = [
        line.split()[1].rstrip(":")
        for line in ninja.read_text().splitlines()
        if line.startswith("build ") and line.split()[1].endswith(".o:")
    ]
    names = [pathlib.Path(s).with_suffix(".o").name for s in ranked]
    order = [pathlib.Path(b).name for b in built]
    listed = [n for n in order if n in names]
    assert listed == [n for n in names if n in order], order
    assert order[: len(listed)] == listed, order  # the sources not named come after
