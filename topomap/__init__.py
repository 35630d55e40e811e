"""topomap: what your data travels over on a GPU server — host memory, GPU link or network.

Importing the package touches no hardware and loads no heavy dependency.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
