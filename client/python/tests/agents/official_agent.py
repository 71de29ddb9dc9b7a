"""An agent for an interactive task under `ale harness run`: plays the official session with a
balancing controller, then tries to read the result itself, which it must be refused."""

import ale_client
from ale_client._proto import ale_env_pb2 as pb

env = ale_client.from_env()
assert env.official, "the harness hands over an official env"
session = env.start_eval_session()
for _ in range(session.episodes):
    obs, _ = env.reset()
    done = False
    while not done:
        obs, _, terminated, truncated, _ = env.step(int(obs[2] + 0.5 * obs[3] > 0))
        done = terminated or truncated
print(f"played {session.episodes} rollouts", flush=True)

# A hostile agent would like to read (or end) its own session's result: not on this channel.
with ale_client.Connection(env._connection.endpoint) as channel:
    try:
        channel.call("GetEvalResult", pb.GetEvalResultRequest(session_id=session.session_id))
        print("GetEvalResult ANSWERED", flush=True)
    except ale_client.PermissionDenied as refused:
        print(f"GetEvalResult refused: {refused.code.name}", flush=True)
env.close()
