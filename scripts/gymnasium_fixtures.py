#!/usr/bin/env python3
"""Record parity fixtures from Gymnasium (the pinned versions below).

Each fixture is one episode: how it starts, the actions taken, and what Gymnasium answered to
each (observation, reward, terminated, truncated, with the registered TimeLimit applied). A
state fixture, `NN.json`, starts from an exact state set on the unwrapped env right after
reset; a seeded fixture, `sNN.json`, starts from `env.reset(seed=seed)` and records the
observation it returned. The Rust sims must replay both step for step; see docs/sims.md for
the format and `ale sims replay` to check files made anywhere.

Besides the episodes, `resets.jsonl` holds the observation `env.reset(seed=seed)` returns for
every classic-control env and each of some thousand seeds, floats as the hex of their float32
bits (sims/tests/resets.rs checks the sims' `reset(seed)` against it bit for bit).

    python3 -m venv venv && venv/bin/pip install gymnasium==1.4.0 numpy==2.4.6
    venv/bin/python scripts/gymnasium_fixtures.py sims/tests/fixtures

Everything is deterministic (fixed seeds), so re-running reproduces the same files for the same
Gymnasium and NumPy versions, which are recorded in each fixture.
"""

import json
import math
import struct
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np

GYMNASIUM_VERSION = "1.4.0"
NUMPY_VERSION = "2.4.6"
assert gym.__version__ == GYMNASIUM_VERSION, f"wants gymnasium {GYMNASIUM_VERSION}, found {gym.__version__}"
assert np.__version__ == NUMPY_VERSION, f"wants numpy {NUMPY_VERSION}, found {np.__version__}"

CLASSIC_CONTROL = ["CartPole-v1", "Pendulum-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Acrobot-v1"]


def record(env_id, initial_state, policy, rng, note):
    """Play one episode from `initial_state` with `policy(obs, rng) -> action`."""
    env = gym.make(env_id)
    env.reset(seed=int(rng.integers(2**31)))
    env.unwrapped.state = np.array(initial_state, dtype=np.float64)
    # The observation right after setting the state, as the env would compute it.
    obs = _observe(env)
    start = {"initial_state": [float(x) for x in env.unwrapped.state]}
    return _play(env, env_id, start, obs, policy, rng, note)


def record_seeded(env_id, seed, policy, rng, note):
    """Play one episode from `env.reset(seed=seed)` with `policy(obs, rng) -> action`."""
    env = gym.make(env_id)
    obs, _ = env.reset(seed=seed)
    start = {"seed": seed, "initial_observation": [float(x) for x in obs]}
    return _play(env, env_id, start, obs, policy, rng, note)


def _play(env, env_id, start, obs, policy, rng, note):
    fixture = {
        "env": env_id,
        "note": note,
        "gymnasium": gym.__version__,
        "numpy": np.__version__,
        **start,
        "actions": [],
        "observations": [],
        "rewards": [],
        "terminated": [],
        "truncated": [],
    }
    while True:
        action = policy(obs, rng)
        if isinstance(env.action_space, gym.spaces.Discrete):
            step_action = int(action)
            fixture["actions"].append(step_action)
        else:
            step_action = np.array(action, dtype=np.float32).reshape(env.action_space.shape)
            fixture["actions"].append([float(x) for x in step_action])
        obs, reward, terminated, truncated, _ = env.step(step_action)
        fixture["observations"].append([float(x) for x in obs])
        fixture["rewards"].append(float(reward))
        fixture["terminated"].append(bool(terminated))
        fixture["truncated"].append(bool(truncated))
        if terminated or truncated:
            return fixture


def _observe(env):
    u = env.unwrapped
    if hasattr(u, "_get_obs"):
        return u._get_obs()
    if hasattr(u, "_get_ob"):
        return u._get_ob()
    return np.array(u.state, dtype=np.float32)


# ---- policies (observation only) ----

def random_discrete(n):
    return lambda obs, rng: int(rng.integers(n))


def constant(a):
    return lambda obs, rng: a


def uniform_box(low, high):
    return lambda obs, rng: [float(rng.uniform(low, high))]


def cartpole_pd(obs, rng):
    return int(0.5 * obs[0] + 1.0 * obs[1] + 10.0 * obs[2] + 2.0 * obs[3] > 0)


def mountaincar_pump(obs, rng):
    return 2 if obs[1] >= 0 else 0


def mountaincar_pump_continuous(scale):
    return lambda obs, rng: [scale if obs[1] >= 0 else -scale]


def pendulum_pump(obs, rng):
    cos, sin, vel = obs
    theta = math.atan2(sin, cos)
    if cos > 0.9:
        return [float(-10.0 * theta - 2.0 * vel)]  # outside the Box: clipped by the env
    energy = 0.5 * vel**2 + 10.0 * (cos - 1.0) * 1.5
    return [float(np.sign(vel) * 2.0 if energy < 0 else -vel)]


def acrobot_pump(obs, rng):
    return 2 if obs[4] >= 0 else 0


# ---- cases: (env id, initial state, policy, note) ----

def cases(rng):
    u = lambda lo, hi, n: [float(x) for x in rng.uniform(lo, hi, n)]
    c = []
    # CartPole-v1: terminations on angle and on both walls, and 500-step truncations.
    for _ in range(6):
        c.append(("CartPole-v1", u(-0.05, 0.05, 4), random_discrete(2), "random actions"))
    for _ in range(4):
        c.append(("CartPole-v1", u(-0.05, 0.05, 4), cartpole_pd, "balanced until the 500-step limit"))
    for a in (0, 1):
        for _ in range(2):
            c.append(("CartPole-v1", u(-0.05, 0.05, 4), constant(a), f"always action {a}: the pole falls"))
    for side in (-1, 1):
        for _ in range(3):
            start = [side * 2.3, side * 1.5, float(rng.uniform(-0.02, 0.02)), 0.0]
            c.append(("CartPole-v1", start, cartpole_pd, "runs into the track limit"))
    for _ in range(2):
        c.append(("CartPole-v1", [0.0, 0.0, 0.2, 0.0], random_discrete(2), "starts beyond the angle limit"))

    # Pendulum-v1: always truncated at 200; torques beyond the Box, speeds at the clip.
    for _ in range(5):
        c.append(("Pendulum-v1", [float(rng.uniform(-math.pi, math.pi)), float(rng.uniform(-1, 1))],
                  uniform_box(-2.0, 2.0), "random torques inside the Box"))
    for _ in range(5):
        c.append(("Pendulum-v1", [float(rng.uniform(-math.pi, math.pi)), float(rng.uniform(-1, 1))],
                  uniform_box(-6.0, 6.0), "random torques, many outside the Box (clipped)"))
    for a in (-2.0, 2.0, -2.5, 2.5, 100.0, -100.0):
        c.append(("Pendulum-v1", [float(rng.uniform(-math.pi, math.pi)), 0.0], constant([a]),
                  f"constant torque {a}"))
    for _ in range(4):
        c.append(("Pendulum-v1", [math.pi, float(rng.uniform(-8, 8))], pendulum_pump, "energy pumping and catch"))
    for v in (7.9, -7.9, 20.0):
        c.append(("Pendulum-v1", [float(rng.uniform(-3, 3)), v], constant([2.0 if v > 0 else -2.0]),
                  "angular speed at the clip"))
    c.append(("Pendulum-v1", [7.0, 0.0], uniform_box(-2, 2), "angle beyond pi (normalized in the cost)"))

    # MountainCar-v0: truncations, goal reached, the left wall.
    for _ in range(6):
        c.append(("MountainCar-v0", [float(rng.uniform(-0.6, -0.4)), 0.0], random_discrete(3), "random actions"))
    for _ in range(6):
        c.append(("MountainCar-v0", [float(rng.uniform(-0.6, -0.4)), 0.0], mountaincar_pump, "pumping to the flag"))
    for _ in range(4):
        c.append(("MountainCar-v0", [float(rng.uniform(-1.2, -1.0)), -0.05], constant(0), "pushed into the left wall"))
    for v in (0.07, -0.07):
        c.append(("MountainCar-v0", [-0.5, v], mountaincar_pump, "starts at the speed limit"))
    c.append(("MountainCar-v0", [0.49, 0.01], constant(2), "reaches the flag at once"))
    c.append(("MountainCar-v0", [-1.2, 0.0], constant(1), "resting against the wall"))

    # MountainCarContinuous-v0: 999-step truncations, the flag, the wall, forces beyond the Box.
    for _ in range(3):
        c.append(("MountainCarContinuous-v0", [float(rng.uniform(-0.6, -0.4)), 0.0], uniform_box(-1.0, 1.0),
                  "random forces until the 999-step limit"))
    for _ in range(3):
        c.append(("MountainCarContinuous-v0", [float(rng.uniform(-0.6, -0.4)), 0.0], uniform_box(-3.0, 3.0),
                  "random forces, many outside the Box"))
    for scale in (1.0, 0.8, 1.5, 5.0):
        for _ in range(2):
            c.append(("MountainCarContinuous-v0", [float(rng.uniform(-0.6, -0.4)), 0.0],
                      mountaincar_pump_continuous(scale), f"pumping with force {scale}"))
    for a in (-1.0, -2.0):
        for _ in range(2):
            c.append(("MountainCarContinuous-v0", [float(rng.uniform(-1.2, -1.0)), -0.06], constant([a]),
                      "pushed into the left wall"))
    for v in (0.07, -0.07):
        c.append(("MountainCarContinuous-v0", [-0.3, v], mountaincar_pump_continuous(1.0), "at the speed limit"))
    c.append(("MountainCarContinuous-v0", [0.44, 0.01], constant([1.0]), "reaches the flag at once"))

    # Acrobot-v1: 500-step truncations, swing-ups, velocities at their bounds.
    for _ in range(6):
        c.append(("Acrobot-v1", u(-0.1, 0.1, 4), random_discrete(3), "random torques"))
    for _ in range(8):
        c.append(("Acrobot-v1", u(-0.1, 0.1, 4), acrobot_pump, "energy pumping swing-up"))
    for _ in range(2):
        c.append(("Acrobot-v1", u(-0.1, 0.1, 4), constant(1), "no torque: hangs until the 500-step limit"))
    for d in ([12.0, 0.0], [-12.0, 27.0], [0.0, -28.0], [13.0, 29.0]):
        c.append(("Acrobot-v1", [0.5, -0.5] + d, acrobot_pump, "velocities at their bounds"))
    c.append(("Acrobot-v1", [3.0, 3.0, 0.0, 0.0], random_discrete(3), "angles wrapping past pi"))
    return c


# ---- seeded episodes: (env id, seed, policy, note) ----

# Seeds across the range Gymnasium's seeding takes for a u64, the sims' seed type.
EPISODE_SEEDS = [0, 1, 42, 2**31 - 1, 2**32 + 5, 2**63 + 7, 2**64 - 1]


def seeded_cases():
    policies = {
        "CartPole-v1": [(random_discrete(2), "random actions"), (cartpole_pd, "balanced")],
        "Pendulum-v1": [(uniform_box(-2.0, 2.0), "random torques inside the Box"),
                        (pendulum_pump, "energy pumping and catch")],
        "MountainCar-v0": [(random_discrete(3), "random actions"), (mountaincar_pump, "pumping to the flag")],
        "MountainCarContinuous-v0": [(uniform_box(-1.0, 1.0), "random forces"),
                                     (mountaincar_pump_continuous(1.0), "pumping with force 1.0")],
        "Acrobot-v1": [(random_discrete(3), "random torques"), (acrobot_pump, "energy pumping swing-up")],
    }
    c = []
    for env_id in CLASSIC_CONTROL:
        for i, seed in enumerate(EPISODE_SEEDS):
            policy, note = policies[env_id][i % 2]
            c.append((env_id, seed, policy, f"from reset(seed={seed}): {note}"))
    return c


# ---- reset observations for many seeds ----

RESET_SEEDS = list(range(1000)) + [
    2**31 - 1,
    2**31,
    2**32 - 1,
    2**32,
    2**32 + 5,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**63 + 7,
    2**64 - 2,
    2**64 - 1,
]
# And some drawn across the whole u64 range.
RANDOM_RESET_SEEDS = 64


def f32_hex(x):
    return "%08x" % struct.unpack("<I", struct.pack("<f", x))[0]


def reset_lines(rng):
    seeds = RESET_SEEDS + [int(s) for s in rng.integers(0, 2**64, size=RANDOM_RESET_SEEDS, dtype=np.uint64)]
    envs = {env_id: gym.make(env_id) for env_id in CLASSIC_CONTROL}
    yield {"gymnasium": gym.__version__, "numpy": np.__version__, "envs": CLASSIC_CONTROL, "seeds": len(seeds)}
    for seed in seeds:
        line = {"seed": seed}
        for env_id, env in envs.items():
            obs, _ = env.reset(seed=seed)
            assert obs.dtype == np.float32, (env_id, obs.dtype)
            line[env_id] = [f32_hex(x) for x in obs]
        yield line


def write_fixture(path, fixture):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(fixture, separators=(",", ":")) + "\n")


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "sims/tests/fixtures")
    # The state fixtures draw from this generator alone, in this order, so that adding seeded
    # fixtures after them leaves their files as they were.
    rng = np.random.default_rng(20261129)
    counts = {}
    for env_id, state, policy, note in cases(rng):
        fixture = record(env_id, state, policy, rng, note)
        n = counts.get(env_id, 0)
        counts[env_id] = n + 1
        write_fixture(out / env_id / f"{n:02d}.json", fixture)
    for env_id, n in counts.items():
        print(f"{env_id}: {n} state fixtures")

    rng = np.random.default_rng(20261201)
    counts = {}
    for env_id, seed, policy, note in seeded_cases():
        fixture = record_seeded(env_id, seed, policy, rng, note)
        n = counts.get(env_id, 0)
        counts[env_id] = n + 1
        write_fixture(out / env_id / f"s{n:02d}.json", fixture)
    for env_id, n in counts.items():
        print(f"{env_id}: {n} seeded fixtures")

    lines = list(reset_lines(np.random.default_rng(20261202)))
    with open(out / "resets.jsonl", "w") as f:
        for line in lines:
            f.write(json.dumps(line, separators=(",", ":")) + "\n")
    print(f"resets.jsonl: {lines[0]['seeds']} seeds x {len(CLASSIC_CONTROL)} envs")


if __name__ == "__main__":
    main()
