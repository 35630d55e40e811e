"""Which of the probe's vendor bindings import here: the guard of ``probe`` and ``measure``.

The bindings are the ``probe`` extra (issue 33 item 8): ``pip install topomap`` is every view on a
laptop (cuda-bindings has no macOS wheels), and ``pip install 'topomap[probe]'`` adds PyPI's
``nvidia-ml-py`` (module ``pynvml``) and ``cuda-bindings`` (module ``cuda.bindings``) on the GPU
machine. The imports themselves stay in their choke points (:mod:`.nvml`, :mod:`.cuda`).
"""

from __future__ import annotations

from topomap.probe.cuda import load_driver
from topomap.probe.nvml import import_pynvml

#: What to install when a binding is missing: from a checkout (as the README installs) or from PyPI.
PROBE_HINT = "pip install -e '.[probe]' in the topomap checkout, or pip install 'topomap[probe]'"


def missing_bindings() -> list[str]:
    """The PyPI names of the bindings that do not import here, in the order NVML, CUDA; empty when
    both do. An import that fails for another reason than absence (a broken build) counts as missing."""
    out: list[str] = []
    try:
        import_pynvml()
    except ImportError:
        out.append("nvidia-ml-py")
    try:
        load_driver()
    except ImportError:
        out.append("cuda-bindings")
    return out


def missing_sentence(missing: list[str], command: str, outcome: str) -> str:
    """One line: ``command`` needs the ``missing`` bindings (PyPI names), so ``outcome``."""
    names = " and ".join(missing)
    verb = "is" if len(missing) == 1 else "are"
    return f"{command} needs the NVIDIA bindings: {names} {verb} not installed here, so {outcome}"
