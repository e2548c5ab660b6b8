"""`single`: one ReAct-style agent; the reference path every other framework is compared with.

Each step the agent sees the task, the latest observation and a window of its
own recent steps, and replies with one action. In conversations it sees the
whole chat and may call tools. Every decision is an agent-level node whose
parent is the previous decision.
"""

from __future__ import annotations

from pydantic import Field

from aecg_bench.contracts import AgentContext, Environment, Framework, Params
from aecg_bench.types import Task, Trajectory
from frameworks.base import ACT_INSTRUCTIONS, Decider, EnvLoop, Transcript, action_from_completion

SYSTEM = f"You are an agent solving a task step by step. {ACT_INSTRUCTIONS['steps']}"
SYSTEM_ANSWER = f"You are an agent solving a task. {ACT_INSTRUCTIONS['answer']}"
SYSTEM_CONVERSATION = f"You are a service agent. {ACT_INSTRUCTIONS['conversation']}"


class SingleParams(Params):
    history_window: int = Field(8, ge=0, description="recent steps shown in each step prompt")
    max_steps: int | None = Field(None, ge=1, description="cap below the task's own step limit")


class SingleAgentFramework(Framework):
    name = "single"
    version = "1"
    Params = SingleParams

    def run(self, task: Task, env: Environment, ctx: AgentContext) -> Trajectory:
        traj = ctx.trajectory
        decider = Decider(task, ctx, traj)
        loop = EnvLoop(env, task, traj, ctx, self.params.max_steps)
        transcript = Transcript(task, traj, self.params.history_window)
        obs = loop.reset()
        transcript.start(obs)
        parents: tuple[str, ...] = ()
        while not loop.finished:
            decision = decider.decide(
                agent="solver",
                role="actor",
                level="agent",
                system={"conversation": SYSTEM_CONVERSATION, "answer": SYSTEM_ANSWER}.get(task.mode, SYSTEM),
                tools=transcript.tools if task.mode == "conversation" else None,
                parents=parents,
                step=loop.steps_taken,
                recall_context=obs.text,
                **transcript.view(),
            )
            parents = (decision.node.id,)
            action = action_from_completion(task, decision.completion)
            if action is None:
                if loop.unparsable(decision.completion.text):
                    break
                continue
            decider.attach_action(decision.node, action)
            obs = loop.act(action, decision.node.id)
            transcript.record(action, obs)
        loop.close_out()
        return traj
