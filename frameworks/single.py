"""`single`: one ReAct-style agent; the reference path every other framework is compared with.

Each step the agent sees the task, the latest observation and a window of its
own recent steps, and replies with one action. In conversations it is the
original's agent: the task's standing instructions (tau2's agent system
prompt) are its whole system message, it sees the whole chat and may call
tools. Every decision is an agent-level node whose parent is the previous
decision.
"""

from __future__ import annotations

from pydantic import Field

from aecg_bench.contracts import AgentContext, Environment, Framework, Params
from aecg_bench.types import Task, Trajectory
from frameworks.base import ACT_INSTRUCTIONS, Decider, EnvLoop, Transcript

SYSTEM = f"You are an agent solving a task step by step. {ACT_INSTRUCTIONS['steps']}"
SYSTEM_ANSWER = f"You are an agent solving a task. {ACT_INSTRUCTIONS['answer']}"


class SingleParams(Params):
    history_window: int = Field(8, ge=0, description="recent steps shown in each step prompt")
    max_steps: int | None = Field(None, ge=1, description="cap below the task's own step limit")


class SingleAgentFramework(Framework):
    name = "single"
    version = "2"
    Params = SingleParams

    def run(self, task: Task, env: Environment, ctx: AgentContext) -> Trajectory:
        traj = ctx.trajectory
        decider = Decider(task, ctx, traj)
        loop = EnvLoop(env, task, traj, ctx, self.params.max_steps)
        transcript = Transcript(task, traj, self.params.history_window)
        transcript.start(loop.reset())
        parents: tuple[str, ...] = ()
        while not loop.finished:
            decision = decider.decide(
                agent="solver",
                role="actor",
                level="agent",
                system={"conversation": "", "answer": SYSTEM_ANSWER}.get(task.mode, SYSTEM),
                tools=transcript.tools if task.mode == "conversation" else None,
                parents=parents,
                step=loop.steps_taken,
                recall_context=transcript.observation,
                **transcript.view(loop.note),
            )
            parents = (decision.node.id,)
            loop.take(decider, transcript, decision)
        loop.close_out()
        return traj
