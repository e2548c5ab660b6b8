"""How an agent is told to act in ScienceWorld: the action hint and a GBNF grammar for one action.

The hint lists the simulator's action templates under AgentBoard's
simplifications (`getPossibleActions()` minus `reset task`; no teleport, no
electrical actions) plus AgentBoard's `check valid actions`. The grammar
admits exactly those shapes with free object names, so small grammar-capable
models produce commands the simulator can parse; it does not know the room's
objects, so it cannot make an action valid by itself.
"""

from __future__ import annotations

ACTION_HINT = """Reply with exactly one action per step. OBJ and LOC are names as they appear in the observations.
Actions:
  look around | look at OBJ | look in OBJ | read OBJ | inventory | task (repeat the task)
  go to LOC (a room connected to the current one; doors are already open)
  pick up OBJ | put down OBJ | move OBJ to OBJ (containers are already open)
  open OBJ | close OBJ | activate OBJ | deactivate OBJ | use OBJ on OBJ
  pour OBJ in OBJ | dunk OBJ in OBJ | mix OBJ | eat OBJ | flush OBJ
  focus on OBJ (declares the task object; focusing on a wrong object can fail the task)
  wait (ten time steps) | wait1 (one time step)
  check valid actions (lists the action templates)
If the simulator answers with a numbered list of matching objects, reply with the number."""

# One action: a fixed command, a one-object command, a two-object command, or a number.
ACTION_GRAMMAR = r"""root ::= fixed | unary " " obj | binary | [0-9]
fixed ::= "look around" | "inventory" | "task" | "wait1" | "wait" | "check valid actions"
unary ::= "look at" | "look in" | "read" | "go to" | "pick up" | "put down" | "open" | "close" | "activate" | "deactivate" | "mix" | "eat" | "flush" | "focus on"
binary ::= "move " obj " to " obj | "pour " obj " in " obj | "dunk " obj " in " obj | "use " obj " on " obj
obj ::= word | word " " word | word " " word " " word | word " " word " " word " " word
word ::= [a-z0-9] [a-z0-9-]*"""
