"""crsim for Python: robot programs over crsim's environment protocol, and environments for
reinforcement learning (``crsim.env``, with gymnasium and pettingzoo installed)."""

from .client import PROTOCOL, VERSION, BinaryStep, Client, ProtocolError, Step
from .launch import Crsim, find_crsim

__all__ = ["PROTOCOL", "VERSION", "BinaryStep", "Client", "Crsim", "ProtocolError", "Step", "find_crsim"]
