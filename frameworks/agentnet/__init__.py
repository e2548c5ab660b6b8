"""`agentnet`: decentralized agents, each with a router and an executor, that evolve (AgentNet).

Follows AgentNet (Yang et al., 2025, "AgentNet: Decentralized Evolutionary
Coordination for LLM-based Multi-Agent Systems", arXiv:2504.00587) as AECG
uses it ("decentralized routing" framework; AECG's mechanism tests run on
AgentNet-ScienceWorld).

One task:
1. It enters at the agent most able on its task type (ties: lowest index).
2. Routing: the holder's router (level team for the whole task, level event
   for a sub-task; role router) replies EXECUTE, FORWARD <agent> or
   SPLIT <part> || <part>. Validity checks (`routing.parse_route`): a forward
   target must be connected, off the current path (the path is a DAG) and
   within `max_hops`; splitting is offered on the whole task only, into
   2..`max_subtasks` parts. An invalid reply falls back to EXECUTE and is
   counted in the trajectory's `metadata.agentnet.invalid_routes`. A router
   with no option but EXECUTE is not called. On SPLIT the splitter keeps the
   first part; each further part goes to its best free neighbour (connection
   weight x ability), whose router may execute or forward it.
3. Execution: each part's executor (level agent, role executor) acts on the
   environment in turn with an even share of the remaining steps; it may hand
   over early with SUBTASK DONE. In one-answer tasks the earlier parts give
   intermediate results and the last part answers.
4. Evolution (`evolve`): every executor's ability on the task type and every
   used edge's weight move toward the outcome (exponential moving averages,
   rates `ability_rate`, `weight_rate`); edges below `prune_below` are cut
   (an agent keeps its strongest edge).

Cross-task state (abilities, weights, pools) lives in the framework object and
is deterministic: it changes only in `observe(episode)`, which the runner calls
for every finished rollout, live and when it replays stored rollouts on
resume; `state_dict()` / `load_state_dict()` go into every memory snapshot.

The outcome learned from (`learn_from`):
- `outcome` (default): the labelled `Outcome` the memory method also sees
  (environment or judge, per `protocol.label_source`).
- `reward`: `framework.feedback_value`, the best reward the environment
  reported in its observations, clipped to [0, 1]: what the agents saw.
  Environments that only score at the end (toy_tools, likely tau2) give 0.

AgentNet's own experience pools (`experience_pools`, off by default so that
memory methods are compared without them): each agent keeps a router pool and
an executor pool of at most `pool_size` fragments (task, decision, outcome);
the `pool_k` most relevant (same task type, word overlap, newest) enter its
prompts through the shared memory formatter; a full pool drops its least
useful fragment (lowest outcome, then oldest). They are not memory-method
recall, so their ids are not recorded as recalled memory.

Prompts: `routing.router_prompt` (abilities and connection strengths in the
prompt, the offered options), `EXECUTOR` + the part description +
`ACT_INSTRUCTIONS`; the environment through the shared Transcript (routers get
conversations as text).

Deviations from the original, and why:
- Abilities are one scalar per task type instead of a capability vector
  matched by embeddings: task types are what the benchmarks give.
- Edges are only strengthened, weakened and cut, never created: the network
  starts fully connected.
- Routing happens once per task (plus per sub-task), not per step, which
  keeps AgentNet the cheapest of the three frameworks, as in the paper.
- Initial values and rates (0.5, 0.5, 0.2, 0.2, cut below 0.1) are ours; the
  paper gives the update form, not the constants.
"""

from frameworks.agentnet.framework import AgentNetFramework, AgentNetParams

__all__ = ["AgentNetFramework", "AgentNetParams"]
