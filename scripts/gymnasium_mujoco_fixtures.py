#!/usr/bin/env python3
"""Record parity fixtures for ale-sims-mujoco from Gymnasium's own MuJoCo envs.

Needs exactly the versions the crate mirrors (checked below), in a venv of their own:

    python3 -m venv target/gymnasium-mujoco-venv
    target/gymnasium-mujoco-venv/bin/pip install "gymnasium[mujoco]==1.4.0" mujoco==3.17.0 numpy==2.4.6
    target/gymnasium-mujoco-venv/bin/python scripts/gymnasium_mujoco_fixtures.py

(on an x86-64 CPU without AVX-512, with OPENBLAS_CORETYPE=SkylakeX in the environment: see
the check below). It writes, under OUT (default sims/gymnasium-mujoco/tests/fixtures):

* OUT/<env>/NN.json, one episode each, in the format of docs/sims.md ("Parity fixtures"):
  `initial_state` is qpos followed by qvel, set with `set_state` right after a seeded reset
  (or, for one episode per env, `seed` and the `initial_observation` that reset returned);
  the actions are float32 (random within the Box, beyond it on both sides, zero, or a simple
  feedback law); the answers are `gymnasium.make(env)`'s, with its TimeLimit. An episode
  runs to its termination or truncation, or stops after a few hundred steps with neither
  flag set, to keep the files small.
* OUT/resets.json: for a few seeds per env, qpos, qvel and the observation right after
  `reset(seed=seed)`, which the crate must draw from the same NumPy generator.

The episodes are deterministic (fixed seeds): re-running with the same versions rewrites
the same files.
"""

import json
import sys
from pathlib import Path

import gymnasium as gym
import mujoco
import numpy as np

VERSIONS = {"gymnasium": "1.4.0", "mujoco": "3.17.0", "numpy": "2.4.6"}
INSTALLED = {"gymnasium": gym.__version__, "mujoco": mujoco.__version__, "numpy": np.__version__}
if INSTALLED != VERSIONS:
    sys.exit(f"gymnasium_mujoco_fixtures: needs {VERSIONS}, found {INSTALLED}")

# np.linalg.norm (Reacher's and Pusher's rewards) is the square root of OpenBLAS's ddot, whose
# short loop the crate runs as fused multiply-adds (`norm` in cost.rs), as OpenBLAS's SkylakeX
# kernels do. On CPUs without AVX-512 OpenBLAS picks its Haswell or Zen kernels, whose loop
# rounds each product, and those rewards come out a bit off in the last place;
# OPENBLAS_CORETYPE=SkylakeX makes it pick the fused loop (only ddot's short loop is used here,
# which needs no AVX-512). The probe's dot product is 0.921337 fused, 0.9213369999999999 not.
_PROBE = np.array([0.144, 0.949])
if _PROBE.dot(_PROBE) != 0.921337:
    sys.exit(
        "gymnasium_mujoco_fixtures: this OpenBLAS's ddot does not fuse its multiply-adds; "
        "run with OPENBLAS_CORETYPE=SkylakeX in the environment"
    )

RESET_SEEDS = [0, 1, 7, 12345, 2**32 + 5, 2**64 - 1]

# MuJoCo's warnings (Swimmer's model uses a deprecated attribute) to stderr, rather than to a
# MUJOCO_LOG.TXT in the working directory.
mujoco.set_mju_user_warning(lambda message: print(f"MuJoCo: {message}", file=sys.stderr))


def state_of(env):
    data = env.unwrapped.data
    return np.concatenate([data.qpos, data.qvel]).copy()


def record(env_id, seed, start, policy, rng, note, max_steps=None):
    """One episode of `env_id` with `policy(obs, rng) -> float32 action`, at most `max_steps`
    long: from `reset(seed=seed)` itself when `start` is `SEEDED`, else from the state
    `start(env, rng)` (qpos then qvel) set right after that reset."""
    env = gym.make(env_id)
    obs, _ = env.reset(seed=seed)
    u = env.unwrapped
    fixture = {
        "env": env_id,
        "note": note,
        "gymnasium": gym.__version__,
        "mujoco": mujoco.__version__,
        "numpy": np.__version__,
    }
    if start is SEEDED:
        fixture["seed"] = seed
        fixture["initial_observation"] = [float(x) for x in obs]
    else:
        state = np.asarray(start(env, rng), dtype=np.float64)
        u.set_state(state[: u.model.nq], state[u.model.nq :])
        obs = u._get_obs()
        fixture["initial_state"] = [float(x) for x in state_of(env)]
    fixture.update(actions=[], observations=[], rewards=[], terminated=[], truncated=[])
    while max_steps is None or len(fixture["actions"]) < max_steps:
        action = np.asarray(policy(obs, rng), dtype=np.float32).reshape(env.action_space.shape)
        fixture["actions"].append([float(x) for x in action])
        obs, reward, terminated, truncated, _ = env.step(action)
        fixture["observations"].append([float(x) for x in obs])
        fixture["rewards"].append(float(reward))
        fixture["terminated"].append(bool(terminated))
        fixture["truncated"].append(bool(truncated))
        if terminated or truncated:
            break
    env.close()
    return fixture


# ---- initial states ----


SEEDED = "seeded"
"""The start of a fixture that begins at `reset(seed=seed)` (`seed` and `initial_observation`)."""


def as_reset(env, rng):
    """The state reset left."""
    return state_of(env)


def shaken(pos_scale, vel_scale):
    """The reset state with more noise on it."""

    def start(env, rng):
        u = env.unwrapped
        s = state_of(env)
        s[: u.model.nq] += rng.uniform(-pos_scale, pos_scale, u.model.nq)
        s[u.model.nq :] += vel_scale * rng.standard_normal(u.model.nv)
        return s

    return start


def lifted(z):
    """The reset state with the free body's height (qpos[2]) set to `z`."""

    def start(env, rng):
        s = state_of(env)
        s[2] = z
        return s

    return start


def thrown(z, z_velocity):
    """The reset state with the free body's height set to `z` and its vertical velocity
    (qvel[2]) to `z_velocity`: a hard landing, for the contact costs' clip."""

    def start(env, rng):
        u = env.unwrapped
        s = state_of(env)
        s[2] = z
        s[u.model.nq + 2] = z_velocity
        return s

    return start


# ---- policies (float32 actions) ----


def box(env_id):
    space = gym.make(env_id).action_space
    return space.low.astype(np.float64), space.high.astype(np.float64)


def uniform(env_id, scale=1.0):
    """Uniform over the Box scaled by `scale` about its centre (beyond it when > 1)."""
    low, high = box(env_id)
    mid, half = (low + high) / 2, (high - low) / 2
    return lambda obs, rng: rng.uniform(mid - scale * half, mid + scale * half)


def zero(env_id):
    low, _ = box(env_id)
    return lambda obs, rng: np.zeros_like(low)


def corners(env_id, scale):
    """Every component at ±scale × its bound, signs drawn at random."""
    _, high = box(env_id)
    return lambda obs, rng: scale * high * rng.choice([-1.0, 1.0], size=high.shape)


def balance_pendulum(obs, rng):
    """A linear feedback law that holds InvertedPendulum up, with a little noise."""
    x, theta, x_dot, theta_dot = obs
    force = 1.0 * x + 20.0 * theta + 1.5 * x_dot + 3.0 * theta_dot
    return [np.clip(force + rng.normal(0.0, 0.05), -3.0, 3.0)]


def cases():
    """(env, reset seed, initial state, policy, note, step cap) for every fixture."""
    ip, idp = "InvertedPendulum-v5", "InvertedDoublePendulum-v5"
    hc, hop, walk, swim = "HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Swimmer-v5"
    ant, reach = "Ant-v5", "Reacher-v5"
    out = []
    out += [
        (ip, 1, as_reset, balance_pendulum, "feedback law, truncated at 1000 steps", None),
        (ip, 2, as_reset, uniform(ip), "random actions until the pole falls", None),
        (ip, 3, shaken(0.05, 0.2), uniform(ip, 2.0), "actions up to twice the bounds", None),
        (ip, 4, as_reset, corners(ip, 5.0), "actions at five times the bounds", None),
        (ip, 5, shaken(0.15, 0.0), zero(ip), "tilted near the limit, no force", None),
    ]
    out += [
        (idp, 1, as_reset, uniform(idp), "random actions until the tip drops", None),
        (idp, 2, as_reset, zero(idp), "no force", None),
        (idp, 3, shaken(0.1, 0.5), uniform(idp, 3.0), "actions up to three times the bounds", None),
        (idp, 4, as_reset, corners(idp, 10.0), "actions at ten times the bounds", None),
    ]
    out += [
        (hc, 1, as_reset, uniform(hc), "random actions, truncated at 1000 steps", None),
        (hc, 2, shaken(0.3, 1.0), uniform(hc, 2.0), "actions up to twice the bounds", 150),
        (hc, 3, as_reset, corners(hc, 4.0), "actions at four times the bounds", 150),
        (hc, 4, as_reset, zero(hc), "no torque", 100),
    ]
    for env in (hop, walk):
        out += [
            (env, 1, as_reset, uniform(env), "random actions until it falls", None),
            (env, 2, as_reset, uniform(env, 0.3), "small random actions until it falls", None),
            (env, 3, shaken(0.05, 0.5), uniform(env, 2.0), "actions up to twice the bounds", None),
            (env, 4, as_reset, corners(env, 3.0), "actions at three times the bounds", None),
            (env, 5, as_reset, zero(env), "no torque until it falls", 400),
        ]
    out += [
        (ant, 1, as_reset, uniform(ant), "random actions", 60),
        (ant, 2, shaken(0.2, 1.0), uniform(ant, 3.0), "actions up to three times the bounds", 60),
        (ant, 3, lifted(0.95), corners(ant, 1.0), "dropped from near the top of the range, full torques", 80),
        (ant, 4, lifted(1.5), zero(ant), "dropped from above the range, no torque", 80),
    ]
    out += [
        (reach, 1, as_reset, uniform(reach), "random actions, truncated at 50 steps", None),
        (reach, 2, as_reset, uniform(reach, 3.0), "actions up to three times the bounds", None),
        (reach, 3, shaken(0.5, 2.0), zero(reach), "no torque", None),
        (reach, 4, as_reset, corners(reach, 10.0), "actions at ten times the bounds", None),
    ]
    out += [
        (swim, 1, as_reset, uniform(swim), "random actions, truncated at 1000 steps", None),
        (swim, 2, shaken(0.3, 0.5), uniform(swim, 2.0), "actions up to twice the bounds", 200),
        (swim, 3, as_reset, corners(swim, 3.0), "actions at three times the bounds", 200),
    ]
    # One episode per env from the seeded reset itself, in the seeded fixture format.
    for env in (ip, idp, reach, hc, hop, walk, swim, ant):
        out.append((env, 2**32 + 9, SEEDED, uniform(env), "random actions from reset(seed)", 40))
    # Envs added later come after the others, so that the shared generator draws the same
    # actions for the episodes above as before. Humanoid's observations are 348 numbers, so
    # its episodes are short: until it falls, or cut after a few dozen steps.
    hum, stand, push = "Humanoid-v5", "HumanoidStandup-v5", "Pusher-v5"
    out += [
        (hum, 1, as_reset, uniform(hum), "random actions until it falls", None),
        (hum, 2, shaken(0.05, 0.5), uniform(hum, 3.0), "actions up to three times the bounds", None),
        (hum, 3, as_reset, corners(hum, 1.0), "full torques until it falls", None),
        (hum, 4, as_reset, zero(hum), "no torque until it falls", None),
        (hum, 5, thrown(1.9, -8.0), zero(hum), "thrown down: the contact cost at its clip", None),
        (hum, 6, lifted(2.05), zero(hum), "above the healthy range: terminates at once", None),
    ]
    out += [
        (stand, 1, as_reset, uniform(stand), "random actions", 50),
        (stand, 2, shaken(0.05, 0.5), uniform(stand, 3.0), "actions up to three times the bounds", 40),
        (stand, 3, as_reset, corners(stand, 1.0), "full torques", 40),
        (stand, 4, thrown(0.8, -5.0), zero(stand), "dropped hard: the impact cost at its clip", 30),
    ]
    out += [
        (push, 1, as_reset, uniform(push), "random actions, truncated at 100 steps", None),
        (push, 2, as_reset, uniform(push, 3.0), "actions up to three times the bounds", None),
        (push, 3, shaken(0.3, 1.0), zero(push), "no torque", None),
        (push, 4, as_reset, corners(push, 5.0), "actions at five times the bounds", 60),
    ]
    for env in (hum, stand, push):
        out.append((env, 2**32 + 9, SEEDED, uniform(env), "random actions from reset(seed)", 40))
    return out


def resets():
    """qpos, qvel and the observation after `reset(seed=s)` for each env and seed."""
    ids = sorted({case[0] for case in cases()})
    out = []
    for env_id in ids:
        env = gym.make(env_id)
        for seed in RESET_SEEDS:
            obs, _ = env.reset(seed=seed)
            data = env.unwrapped.data
            out.append(
                {
                    "env": env_id,
                    "seed": seed,
                    "qpos": [float(x) for x in data.qpos],
                    "qvel": [float(x) for x in data.qvel],
                    "observation": [float(x) for x in obs],
                }
            )
        env.close()
    return out


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "sims/gymnasium-mujoco/tests/fixtures")
    rng = np.random.default_rng(20260521)
    counts = {}
    for env_id, seed, start, policy, note, cap in cases():
        fixture = record(env_id, seed, start, policy, rng, note, cap)
        n = counts.get(env_id, 0)
        counts[env_id] = n + 1
        path = out / env_id / f"{n:02d}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(fixture, separators=(",", ":")) + "\n")
        ends = "terminated" if fixture["terminated"][-1] else (
            "truncated" if fixture["truncated"][-1] else "cut")
        print(f"{path}: {len(fixture['actions'])} steps, {ends} ({note})")
    (out / "resets.json").write_text(json.dumps(resets(), separators=(",", ":")) + "\n")
    print(f"{out / 'resets.json'}: {len(RESET_SEEDS)} seeds per env")


if __name__ == "__main__":
    main()
