#!/usr/bin/env python3
"""Record what `np.random.default_rng(seed)` draws, for sim/src/numpy_rng.rs to match bit for bit.

Gymnasium seeds `env.np_random` with exactly `np.random.default_rng(seed)`, so a sim that draws
its initial state the same way starts where Gymnasium's env does. One line of JSON per seed:

    seed      the seed, as a hex string (some do not fit in 64 bits)
    pool      SeedSequence(seed).pool, four u32
    state     SeedSequence(seed).generate_state(4, np.uint64), as hex
    pcg       PCG64's 128-bit state and increment right after seeding, as hex
    raw       bit_generator.random_raw() from a fresh generator
    random    Generator.random() from a fresh generator
    uniform   Generator.uniform(-0.1, 0.1, size=8) from a fresh generator
    normal    Generator.standard_normal() from a fresh generator (long runs for a few seeds,
              which hit the ziggurat's tail)
    integers  Generator.integers(low, high, size=n) for a few ranges, each from a fresh generator
    mixed     one generator, a random mix of calls (the above, and normal(loc, scale) and
              integers(low, high, endpoint=True)): [call, arguments..., result]

Floats are written as the hex of their IEEE-754 bits, so the comparison is exact.

    python3 -m venv venv && venv/bin/pip install numpy==2.4.6
    venv/bin/python scripts/numpy_rng_fixtures.py sim/tests/fixtures/numpy_rng/default_rng.jsonl

The seeds and calls are fixed, so every run writes the same file; the NumPy version is pinned
below. Where Gymnasium is installed too, each seed is also checked to give the generator its
`env.np_random` gets. The file is `.jsonl`, not `.json`: tests/parity.rs takes every `.json`
in the fixture folders for a Gymnasium episode.
"""

import json
import random
import struct
import sys

import numpy as np

try:
    from gymnasium.utils import seeding as gym_seeding
except ImportError:
    gym_seeding = None

NUMPY_VERSION = "2.4.6"
assert np.__version__ == NUMPY_VERSION, f"wants numpy {NUMPY_VERSION}, found {np.__version__}"

# Where the ziggurat's outermost layer ends and its tail begins.
NOR_R = 3.6541528853610087963519472518

SMALL_SEEDS = list(range(51))
LARGE_SEEDS = [
    2**31 - 1,
    2**32 - 1,
    2**32,
    2**32 + 5,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    2**96 + 12345,
    2**128 - 1,
    2**128,
    3**100,  # 159 bits: more entropy words than the pool holds
    0xDEADBEEF_0000_0001_CAFEBABE_0000_0002_FEEDFACE_0000_0003,
]
# Seeds whose first LONG_NORMALS standard normals are all recorded.
LONG_NORMAL_SEEDS = [0, 1, 2**64 - 1]
LONG_NORMALS = 5000
SHORT_NORMALS = 32

# (low, high) for integers(low, high, size=n): numpy picks a different path for each.
INTEGER_RANGES = [
    (0, 1),  # nothing to draw: consumes no randomness
    (0, 10),
    (-5, 5),
    (0, 3 * 2**30 + 1),  # 32-bit Lemire, rejecting about a quarter of the draws
    (0, 2**32),  # a full u32: next_uint32 as is
    (0, 2**32 + 1),  # 64-bit Lemire
    (-(2**63), 2**62 + 1),  # 64-bit Lemire, rejecting about a quarter of the draws
    (-(2**63), 2**63 - 1),
    (-(2**63), 2**63),  # the full i64 range: next_uint64 as is
]
INTEGERS_PER_RANGE = 12

UNIFORM_BOUNDS = [
    (-0.1, 0.1),
    (-0.05, 0.05),
    (-0.6, -0.4),
    (-np.pi, np.pi),
    (-1.0, 1.0),
    (0.0, 1.0),
]

NORMAL_PARAMETERS = [(0.0, 1.0), (0.0, 0.1), (-2.5, 3.0), (1e3, 1e-3)]

MIXED_CALLS = ["random", "normal", "normal_at", "uniform", "uniform_n", "integers", "closed", "raw"]


def f64_hex(x):
    return "%016x" % struct.unpack("<Q", struct.pack("<d", float(x)))[0]


def u64_hex(x):
    return "%016x" % int(x)


def mixed_calls(rng, seed):
    """A random mix of calls on one generator, so buffered u32 halves and call order matter."""
    choose = random.Random(seed)
    calls = []
    for _ in range(48):
        kind = choose.choice(MIXED_CALLS)
        if kind == "random":
            calls.append(["random", f64_hex(rng.random())])
        elif kind == "normal":
            calls.append(["normal", f64_hex(rng.standard_normal())])
        elif kind == "normal_at":
            loc, scale = choose.choice(NORMAL_PARAMETERS)
            x = rng.normal(loc, scale)
            calls.append(["normal_at", f64_hex(loc), f64_hex(scale), f64_hex(x)])
        elif kind == "uniform":
            low, high = choose.choice(UNIFORM_BOUNDS)
            calls.append(["uniform", f64_hex(low), f64_hex(high), f64_hex(rng.uniform(low, high))])
        elif kind == "uniform_n":
            low, high = choose.choice(UNIFORM_BOUNDS)
            n = choose.randint(1, 5)
            xs = rng.uniform(low, high, size=n)
            calls.append(["uniform_n", f64_hex(low), f64_hex(high), [f64_hex(x) for x in xs]])
        elif kind == "integers":
            low, high = choose.choice(INTEGER_RANGES)
            calls.append(["integers", low, high, int(rng.integers(low, high))])
        elif kind == "closed":
            low, high = choose.choice(INTEGER_RANGES)
            high -= 1
            calls.append(["closed", low, high, int(rng.integers(low, high, endpoint=True))])
        else:
            calls.append(["raw", u64_hex(rng.bit_generator.random_raw())])
    return calls


def record(seed):
    ss = np.random.SeedSequence(seed)
    bit_generator = np.random.PCG64(np.random.SeedSequence(seed))
    pcg = bit_generator.state["state"]
    # default_rng(seed) is Generator(PCG64(SeedSequence(seed))), which is what Gymnasium's
    # seeding builds; where Gymnasium is installed, check that too.
    fresh = lambda: np.random.default_rng(seed)  # noqa: E731
    assert fresh().bit_generator.state == bit_generator.state
    if gym_seeding is not None:
        assert gym_seeding.np_random(seed)[0].bit_generator.state == bit_generator.state

    n_normals = LONG_NORMALS if seed in LONG_NORMAL_SEEDS else SHORT_NORMALS
    line = {
        "seed": hex(seed),
        "pool": [int(w) for w in ss.pool],
        "state": [u64_hex(w) for w in ss.generate_state(4, np.uint64)],
        "pcg": ["%032x" % pcg["state"], "%032x" % pcg["inc"]],
        "raw": [u64_hex(w) for w in fresh().bit_generator.random_raw(8)],
        "random": [f64_hex(x) for x in fresh().random(16)],
        "uniform": [f64_hex(x) for x in fresh().uniform(-0.1, 0.1, size=8)],
        "normal": [f64_hex(x) for x in fresh().standard_normal(n_normals)],
        "integers": [
            [low, high, [int(v) for v in fresh().integers(low, high, size=INTEGERS_PER_RANGE)]]
            for low, high in INTEGER_RANGES
        ],
        "mixed": mixed_calls(fresh(), seed),
    }
    # Scalar calls draw what a sized call does, one after another.
    scalar = fresh()
    assert [f64_hex(scalar.standard_normal()) for _ in range(n_normals)] == line["normal"]
    if seed in LONG_NORMAL_SEEDS:
        assert np.any(np.abs(fresh().standard_normal(n_normals)) > NOR_R), seed
    return line


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} OUT.jsonl")
    lines = [record(seed) for seed in SMALL_SEEDS + LARGE_SEEDS]
    with open(sys.argv[1], "w") as out:
        out.write(json.dumps({"numpy": np.__version__, "seeds": len(lines)}) + "\n")
        for line in lines:
            out.write(json.dumps(line, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
