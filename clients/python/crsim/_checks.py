"""Checks of what callers pass to crsim's environments: each raises ``TypeError`` (a value of the
wrong kind) or ``ValueError`` (the right kind, out of range), naming the argument and what it
takes. Nothing is truncated or parsed on the caller's behalf: ``2.7`` worlds or ``"4"`` worlds
are an error, not 2 or 4."""

import math
import numbers
import os

import numpy as np

#: The most worlds one ``VecEnv`` holds (crsim's ``vecenv::MAX_WORLDS``).
MAX_WORLDS = 65_536
#: About what one world of a small scene takes (docs/programs.md: 4,096 one-robot worlds in
#: 298 MiB), for the figure a refusal gives.
WORLD_BYTES = 58_000
#: Seeds are unsigned 64-bit integers, as crsim's scenes take them.
MAX_SEED = 2**64 - 1


def integer(name, value, low, high=None):
    """``value`` as an int in ``low..=high`` (no upper bound when ``high`` is None); Python and
    numpy integers are ints, bools and floats are not."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__} {value!r}")
    value = int(value)
    if value < low or (high is not None and value > high):
        allowed = f"at least {low:,}" if high is None else f"{low:,} to {high:,}"
        raise ValueError(f"{name}: expected {allowed}, got {value:,}")
    return value


def worlds(name, value):
    """A number of worlds, with what a refused size would need."""
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)) and int(value) > MAX_WORLDS:
        need = int(value) * WORLD_BYTES / 2**30
        raise ValueError(f"{name}: {int(value):,} worlds is more than the {MAX_WORLDS:,} one VecEnv holds "
                         f"(they would need about {need:,.0f} GiB or more); use several VecEnvs or processes")
    return integer(name, value, 1, MAX_WORLDS)


def seed(name, value):
    """A seed: an int in 0..2**64."""
    return integer(name, value, 0, MAX_SEED)


def seeds(name, value, count):
    """None, one seed (an int), or ``count`` seeds (a sequence of ints); a list of ints or None."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        return seed(name, value)
    value = list(value)
    if len(value) != count:
        raise ValueError(f"{name}: {len(value)} seeds for {count} worlds")
    return [seed(f"{name}[{i}]", s) for i, s in enumerate(value)]


def names(name, value, allow_none=True):
    """None (when allowed), a string, or a sequence of strings; a list of strings."""
    if value is None and allow_none:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (bytes, dict)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{name}: expected a string or a list of strings, got {type(value).__name__} {value!r}")
    out = list(value)
    for i, v in enumerate(out):
        if not isinstance(v, str):
            raise TypeError(f"{name}[{i}]: expected a string, got {type(v).__name__} {v!r}")
    return out


def scene_path(value):
    """A scene file: a string or a path."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"scene: expected a file path (str or os.PathLike), got {type(value).__name__} {value!r}")
    return os.fspath(value)


def weights(value):
    """Reward weights: None or a dict of count names to finite numbers; a list of pairs."""
    if value is None:
        return []
    if not isinstance(value, dict):
        raise TypeError(f"reward_weights: expected a dict of count names to numbers, got {type(value).__name__}")
    out = []
    for k, w in value.items():
        if not isinstance(k, str):
            raise TypeError(f"reward_weights: keys are count names, got {type(k).__name__} {k!r}")
        if isinstance(w, (bool, np.bool_)) or not isinstance(w, numbers.Real):
            raise TypeError(f"reward_weights[{k!r}]: expected a number, got {type(w).__name__} {w!r}")
        if not math.isfinite(float(w)):
            raise ValueError(f"reward_weights[{k!r}]: {w} is not a finite number")
        out.append((k, float(w)))
    return out


def parts(value):
    """None (every part) or a non-empty list of part names."""
    if value is None:
        return None
    out = names("observation", value, allow_none=False)
    if not out:
        raise ValueError("observation: name at least one part (or None for all of them)")
    return out


def actions(name, value, shape):
    """An array of exactly ``shape`` (no reshaping, no broadcasting), as float32."""
    a = np.asarray(value)
    if a.dtype.kind not in "fiu":
        raise TypeError(f"{name}: expected numbers, got an array of dtype {a.dtype}")
    if a.shape != tuple(shape):
        raise ValueError(f"{name}: shape {a.shape}; expected {tuple(shape)}")
    return a.astype(np.float32, copy=False)


def mask(name, value, count):
    """A mask of ``count`` bools (a numpy bool array or a sequence of bools)."""
    m = np.asarray(value)
    if m.dtype != np.bool_:
        raise TypeError(f"{name}: expected bools, got an array of dtype {m.dtype}")
    if m.shape != (count,):
        raise ValueError(f"{name}: shape {m.shape}; expected ({count},)")
    return m
