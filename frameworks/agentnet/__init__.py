"""`agentnet`: decentralized agents, each with a router and an executor, that evolve (AgentNet).

Follows AgentNet (Yang et al., 2025, "AgentNet: Decentralized Evolutionary
Coordination for LLM-based Multi-Agent Systems", arXiv:2504.00587) as AECG
uses it ("decentralized routing" framework; AECG's mechanism tests run on
AgentNet-ScienceWorld).

One task is a relay (AgentNet experiment.py `solve_a_single_task`):
1. It enters at the agent most able on its task type (ties: at random, from
   the sample's seeded rng).
2. The holder's router (role router; level team on the whole task, event on
   a passed-on remainder) replies EXECUTE, FORWARD agent_<n> or
   SPLIT: <part>, each with its own grammar (`routing`). FORWARD is offered
   while hops are left (`max_hops`) and an agent off the path is connected;
   a named target that is not a live neighbour or is below
   `min_forward_ability` goes to the best neighbour, or, when none is able
   enough, to a random one (the code's `find_best_alternative_agent`).
3. EXECUTE: the holder's executor (level agent) works to the end of the task.
   SPLIT: it works on its part (an even share of the remaining steps, or until
   it replies SUBTASK DONE, which its grammar offers), then its router replies
   COMPLETE or INCOMPLETE agent_<n>: <rest>, and the rest goes to that agent,
   at most `max_executions` parts per task. COMPLETE while the environment
   still runs leaves the holder to finish the task.
4. An unparsable router reply is recorded as `unparsed` (counted in
   `metadata.agentnet.unparsed_routes`) and re-asked, as the code's loop does,
   until the shared bound on unparsable outputs ends the sample (model_error).
5. Evolution (`observe`): each execution moves its agent's ability, each
   used edge its weight, toward the outcome (`rule=paper`: eqs. 2 and 10;
   `rule=code`: the released code's updates); edges at or below `prune_at`
   are cut. The runner lets it learn from build and warm-up items only
   (`protocol.framework_learning=training`, AgentNet's fit/evaluate) unless
   told `all`.

Cross-task state (abilities, success counts, weights, pools) lives in the
framework object and changes only in `observe(episode)`, which the runner
calls for the finished rollouts of the items it may learn from, live and when
it replays stored rollouts on resume; `state_dict()` / `load_state_dict()` go
into every memory snapshot.
Agents start identical as in the original (`initial_abilities` and `models`
differentiate them). Every constant, its source and every departure from the
original: docs/frameworks/agentnet.md.
"""

from frameworks.agentnet.framework import AgentNetFramework, AgentNetParams

__all__ = ["AgentNetFramework", "AgentNetParams"]
