"""An agent for a batch task under `ale harness run`: writes a linear controller for
MountainCarContinuous with NumPy (push the way the car moves) and submits it."""

import ale_client

env = ale_client.from_env()
path = env.submission_path()
# One layer, no hidden units: action = 100 * velocity, which the evaluator clips to [-1, 1].
ale_client.save_mlp({"0.weight": [[0.0, 100.0]], "0.bias": [0.0]}, path)
run = env.submit_batch()
print(f"submitted {path.name} as {run.batch_id}", flush=True)
status = run.wait(timeout=300)
print(f"batch run {status.state}; result on the agent channel: {status.result}", flush=True)
env.close()
