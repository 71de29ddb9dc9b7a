"""An agent for any interactive task under `ale harness run`: plays the official session with
zero (or first) actions; a rollout whose sim fails (`SimFault`) is lost, and it goes on."""

import numpy as np

import ale_client

env = ale_client.from_env()
session = env.start_eval_session()
faults = 0
for _ in range(session.episodes):
    try:
        obs, _ = env.reset()
    except ale_client.SimFault as fault:
        # The sim could not start this rollout; after a few tries it is recorded as the
        # sim's, and the next Reset starts the next one.
        faults += 1
        print(f"sim fault at reset: {fault.details}", flush=True)
        while "recorded as ended" not in fault.details:
            try:
                obs, _ = env.reset()
                break
            except ale_client.SimFault as again:
                fault = again
        else:
            continue
    done = False
    while not done:
        action = env.action_space.sample() * 0 if hasattr(env.action_space, "shape") and env.action_space.shape else 0
        if isinstance(action, np.ndarray):
            action = action.astype(env.action_space.dtype)
        try:
            obs, _, terminated, truncated, _ = env.step(action)
        except ale_client.SimFault as fault:
            faults += 1
            print(f"sim fault: {fault.details}", flush=True)
            break
        done = terminated or truncated
print(f"played {session.episodes} rollouts, {faults} lost to the sim", flush=True)
env.close()
