"""Per-kernel digests of the SASS in a built extension, to check a restructuring commit without a GPU.

    python tools/sass_digest.py torch_reduce/lib/libtorch_reduce.so > before.txt
    (change, rebuild)
    python tools/sass_digest.py torch_reduce/lib/libtorch_reduce.so > after.txt
    diff before.txt after.txt

Each line is "<sha1 of the kernel's SASS> <mangled name>", sorted by name. Identical digests mean
identical machine code, so the results' bits cannot have moved; a kernel that appears, disappears
or changes still needs the H200 bit-equality suite. Needs cuobjdump: CUDA's, or the copy that
triton ships.
"""

import hashlib
import os
import shutil
import subprocess
import sys


def find_cuobjdump() -> str:
    found = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if os.path.exists(found):
        return found
    try:
        import triton  # noqa: PLC0415

        found = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/cuobjdump")
    except ImportError:
        pass
    if not os.path.exists(found):
        sys.exit("sass_digest: no cuobjdump (install the CUDA toolkit's, or triton)")
    return found


def digests(path: str) -> dict[str, str]:
    proc = subprocess.Popen(
        [find_cuobjdump(), "-sass", path],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    out: dict[str, str] = {}
    name, h = None, hashlib.sha1()
    for line in proc.stdout:
        stripped = line.strip()
        if stripped.startswith("Function :"):
            if name is not None:
                out[name] = h.hexdigest()
            name, h = stripped.split(":", 1)[1].strip(), hashlib.sha1()
        elif name is not None and stripped.startswith("/*"):
            # Runs of spaces collapsed: cuobjdump pads the columns to the longest instruction of
            # the cubin, so the padding depends on which kernels share a translation unit.
            h.update(" ".join(stripped.split()).encode())
    if name is not None:
        out[name] = h.hexdigest()
    if proc.wait() != 0:
        sys.exit(f"sass_digest: cuobjdump failed on {path}")
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for kernel, digest in sorted(digests(sys.argv[1]).items()):
        print(digest, kernel)
