"""G-Memory's prompts (mas/memory/mas_memory/prompt.py in github.com/bingreeky/GMemory),
reworded for agent tasks in general (the originals mention household environments) with the
same structure, instructions and output formats; the rule-operation format is kept exactly,
because the parser depends on it."""

KEY_STEPS_SYSTEM = (
    "You extract key points. Given a task and a successful execution trajectory, identify the steps that "
    "were needed to complete the task and leave out the unimportant ones."
)
KEY_STEPS_USER = """Notes:
- Follow the original trajectory strictly; never add a step that is not in it.
- Even a successful trajectory may contain wrong steps. Actions whose observation says nothing happened or
  that the action was invalid are probably wrong: leave them out.
- Keep each step at the finest granularity.
- Reply with one short line per key step, starting with what the step achieves, e.g.
  "Locate the target: read the current position and the goal."

## Task
{task}

## Trajectory
{trajectory}

## Key steps
"""

MISTAKES_SYSTEM = (
    "You are an analytical agent. You are given a task and a failed trajectory: the final state did not match "
    "the state the task required. Compare the final state of the trajectory with the required one, find the "
    "inconsistencies (is the target in the required state, in the required place?) and state the most likely "
    "reason for the failure concisely. Names that differ only by a number count as the same object."
)
MISTAKES_USER = """Identify the inconsistency between the final state in this failed trajectory and the task goal.
## Task
{task}

## Trajectory
{trajectory}

Your output:
"""

RELEVANCE_SYSTEM = "You score how relevant one piece of text is to another."
RELEVANCE_USER = """You are given a successful case and an ongoing task. Do not summarise them; rate how relevant and
helpful the successful case is for the ongoing task on a scale of 1-10.
Successful case:
{trajectory}
Ongoing task:
{task}
Your output format should be:
Score: """

RULE_OPERATIONS = """<OPERATION> <RULE NUMBER>: <RULE> (e.g. ADD: xxx, EDIT/REMOVE/AGREE 1: xxx)

The available operations are: **AGREE (if the existing rule is strongly relevant for the task), REMOVE (if one existing rule is contradictory or similar/duplicated to other existing rules), EDIT (if any existing rule is not general enough or can be enhanced, rewrite and improve it), ADD (add new rules that are very different from existing rules and relevant for other tasks). Each needs to CLOSELY follow their corresponding formatting below (any existing rule not edited, not agreed, nor removed is considered copied)**:

AGREE <EXISTING RULE NUMBER>: <EXISTING RULE>
REMOVE <EXISTING RULE NUMBER>: <EXISTING RULE>
EDIT <EXISTING RULE NUMBER>: <NEW MODIFIED RULE>
ADD: <NEW RULE>

Do not mention the trials in the rules because all the rules should be GENERALLY APPLICABLE. Each rule should be concise and easy to follow. Any operation can be used MULTIPLE times. Do at most 4 operations and each existing rule can only get a maximum of 1 operation. """

FULL_SUFFIX = (
    "Focus on REMOVE or EDIT or AGREE rules first, and stop ADD rule unless the new rule is VERY insightful "
    "and different from EXISTING RULES.\n"
)

COMPARE_SYSTEM = """You derive rules from examples. You are given two similar tasks: the first attempt succeeded, the
second failed, and the reason for the failure is given.

Requirements:
- Turn the reason for the failure into insights that help future agents avoid the same mistake.
- Write each insight in the form "XXX, because XXX". Do not mention specific items; state general principles
  that apply to similar tasks and guide future problems.
"""
COMPARE_USER = (
    """
## Trial Task 1 (success):
{task1}
{trajectory1}

## Trial Task 2 (fail):
### Failed reason
{fail_reason}

### Trajectory
{task2}
{trajectory2}

## Here are the EXISTING RULES:
{rules}

By examining and contrasting to the successful trial, and the list of existing rules, you can perform the following operations: add, edit, remove, or agree so that the new list of rules is GENERAL and HIGH LEVEL critiques of the failed trial or proposed way of Thought so they can be used to avoid similar failures when encountered with different questions in the future. Have an emphasis on critiquing how to perform better Thought and Action. Follow the below format:
"""
    + RULE_OPERATIONS
)

SUCCESS_SYSTEM = """You add, edit or remove rules in an existing rule set by critiquing past task trajectories.
You are given successful task trials."""
SUCCESS_USER = (
    """
## Requirements:
- Avoid vague statements; every insight needs a clear cause.
- Keep only strategies that apply across many situations, not advice for one case.
- Be concise and practical.
- Write each insight in the form "XXX, because XXX". Do not mention specific items; state general principles.

## Example:
- Drop unnecessary deliberation, because focusing on the core objective makes execution efficient.

## Here are the trials:
{history}

## Here are the EXISTING RULES:
{rules}

By examining the successful trials, and the list of existing rules, you can perform the following operations: add, edit, remove, or agree so that the new list of rules are general and high level insights of the successful trials or proposed way of Thought so they can be used as helpful tips to different tasks in the future. Have an emphasis on tips that help the agent perform better Thought and Action. Follow the below format:
"""
    + RULE_OPERATIONS
)

MERGE_SYSTEM = """You consolidate insights. You are given insights extracted earlier from similar tasks; they may be
redundant or overlap. Merge similar insights and output a refined list that is clear, actionable and concise.

NOTE:
- Base every merged insight strictly on the given inputs; do not invent information.
- Start directly with the numbered list, no preamble, one short sentence per insight:
1. Insight 1
2. Insight 2
"""
MERGE_USER = """
## Insights to merge:
{rules}

## Rewrite them into **no more than {limit} refined insights**, removing redundancy and combining similar ideas.

Your output:
"""
