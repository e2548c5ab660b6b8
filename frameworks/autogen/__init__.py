"""`autogen`: a conversation-centric team on the real autogen-agentchat (0.7) runtime.

Follows AutoGen (Wu et al., 2023, arXiv:2308.08155) as the AECG paper uses it
("conversation-centric" framework, AECG sec. 4.1 / app. C.1), built on the
library itself: `AssistantAgent`s in a `SelectorGroupChat`, one team run per
environment step (the observation enters as a message from `environment`).
Every model call goes through `bridge.BridgeClient`, a custom
`ChatCompletionClient` that hands it to the project's `Decider`/`LLMClient`
(cache, retries, usage per role, memory recall at the agent's scope, the
decision graph). Token counting uses litellm, never tiktoken (offline).

Variants (`params.variant`, recorded in run.json through `describe()`):

- `team` (default): planner, executor, critic.
  planner  - level team, role planner: a short plan for the whole team; speaks
             at the first step (and every `replan_every` steps); its latest
             plan stays visible to the others.
  executor - level agent, role executor: the step's action (tools offered in
             conversations, the task's action grammar for constrained models).
  critic   - level event, role critic: APPROVE, or REJECT: <reason>. On any
             reply but an approval (a rejection, or one naming no verdict,
             recorded `unparsed`) the executor revises, as in AutoGen's critic
             pattern where only an approving message ends the exchange; at
             most `max_revisions` times, then the latest proposal is executed.
             `critic=false` removes it.
- `gmemory`: the two-agent loop G-Memory's code calls "AutoGen"
  (bingreeky/GMemory, tasks/mas_workflow/autogen): a solver (level agent)
  proposes each action; when the proposal equals the last `stuck_repeats`
  (2) executed actions, a helper (level event: it takes over the step's
  exchange) is asked instead and its action replaces the solver's; the
  helper is shown the solver's repeated proposal (G-Memory's sees the task
  history only).

Prompts: the role texts in `framework.py` (PLANNER, EXECUTOR, CRITIC, SOLVER,
HELPER; SOLVER and HELPER paraphrase G-Memory's) plus `ACT_INSTRUCTIONS` for
the task mode; the environment is shown through `frameworks.base.Transcript`
(step prompt, or the native chat for acting agents in conversations),
teammates' messages through `with_notes`, memory through `format_memory`.

Decision graph: parents of a decision are the agent's own previous decision,
the decision whose action produced the current observation, and the decisions
that wrote the messages it was shown (its own earlier replies of the step
included: a revising executor sees the proposal it revises). Spec, sources and
the choice of this team for Table 1: docs/frameworks/autogen.md.

Deviations from the originals, and why:
- Speaker selection is a fixed rule (`selector_func`), not AutoGen's
  model-based selector: deterministic and no extra calls; the model client the
  SelectorGroupChat requires refuses to be called.
- The environment is shown by the shared Transcript instead of AutoGen's own
  message list, so every framework presents a task identically; AutoGen's
  context (head 2 + tail `context_messages`) carries the teammates' messages.
- G-Memory retries an empty reply up to 3 times and prompts with few-shot
  examples and its memory's insight format; here an unparsable reply is a
  recorded invalid action (bounded by `protocol.max_invalid_actions`) and
  memory enters through the shared formatter.
"""

from frameworks.autogen.framework import AutoGenFramework, AutoGenParams

__all__ = ["AutoGenFramework", "AutoGenParams"]
