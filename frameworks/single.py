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
from frameworks.base import Decider, EnvLoop, action_from_completion, conversation_turns, task_brief

SYSTEM = (
    "You are an agent solving a task step by step. Reply with exactly one action on the first line, "
    "with no explanation."
)
SYSTEM_ANSWER = "You are an agent solving a task. Reply with the final answer only."
SYSTEM_CONVERSATION = (
    "You are a service agent. Follow the task and policy; use the tools to read and change data, "
    "and talk to the user in plain text."
)


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
        obs = loop.reset()
        history = [{"role": "user", "content": f"{task_brief(task)}\n\n{obs.text}"}]
        tools = [t.to_openai() for t in task.tools] or None
        parents: tuple[str, ...] = ()
        while not loop.finished:
            if task.mode == "conversation":
                decision = decider.decide(
                    agent="solver",
                    role="actor",
                    level="agent",
                    system=SYSTEM_CONVERSATION,
                    history=history,
                    tools=tools,
                    parents=parents,
                    step=loop.steps_taken,
                    recall_context=obs.text,
                )
            else:
                decision = decider.decide(
                    agent="solver",
                    role="actor",
                    level="agent",
                    system=SYSTEM_ANSWER if task.mode == "answer" else SYSTEM,
                    user=self._step_prompt(task, traj, obs.text),
                    parents=parents,
                    step=loop.steps_taken,
                    recall_context=obs.text,
                )
            parents = (decision.node.id,)
            action = action_from_completion(task, decision.completion)
            if action is None:
                if loop.unparsable(decision.completion.text):
                    break
                continue
            decider.attach_action(decision.node, action)
            obs = loop.act(action, decision.node.id)
            if task.mode == "conversation":
                history += conversation_turns(action, obs)
        loop.close_out()
        return traj

    def _step_prompt(self, task: Task, traj: Trajectory, observation: str) -> str:
        recent = traj.steps[-self.params.history_window :] if self.params.history_window else []
        lines = [task_brief(task)]
        if recent:  # the last step's observation is the current one, shown below
            shown = [f"> {s.action.text}\n{s.observation.text}" for s in recent[:-1]]
            lines.append("Recent steps:\n" + "\n".join([*shown, f"> {recent[-1].action.text}"]))
        lines.append(f"Current observation:\n{observation}")
        lines.append("Next action:")
        return "\n\n".join(lines)
