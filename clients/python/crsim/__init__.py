"""crsim for Python: many worlds inside this process, stepped together into numpy arrays
(``crsim.VecEnv``); robot programs over crsim's environment protocol; and environments for
reinforcement learning (``crsim.env``, with gymnasium and pettingzoo installed)."""

from .client import PROTOCOL, VERSION, BinaryStep, Client, ProtocolError, Step
from .launch import Crsim, find_crsim


def __getattr__(name):
    # The in-process worlds need the native module, which only an installed package has (a
    # source checkout on sys.path has the pure-Python client alone).
    if name == "VecEnv":
        from .vector import VecEnv

        return VecEnv
    raise AttributeError(f"module 'crsim' has no attribute {name!r}")


__all__ = ["PROTOCOL", "VERSION", "BinaryStep", "Client", "Crsim", "ProtocolError", "Step", "VecEnv", "find_crsim"]
