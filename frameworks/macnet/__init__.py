"""`macnet`: agents on a directed acyclic graph, instructors on its edges (MacNet).

Follows MacNet (Qian et al., 2024, "Scaling Large-Language-Model-based
Multi-Agent Collaboration", arXiv:2406.07155) as AECG uses it
("directed-acyclic-graph" framework, AECG app. C.1), and G-Memory's MacNet
workflow (bingreeky/GMemory, tasks/mas_workflow/macnet: a graph pass per
environment step, a critic per upstream output, a decision node that turns
the result into the action).

Per environment step the graph runs once; its output is the action. Two
protocols (`protocol`):

- `chatdev` (default; OpenBMB/ChatDev branch macnet, graph.py): a source node
  proposes; on each edge p->i node i reviews p's proposal (role instructor,
  level event) and revises it (role solver, level agent): two calls per edge;
  a node whose predecessors, `aggregate_unit` (2) or more, all sit in one
  layer merges their revisions (role merger), any other keeps the revision of
  its first-arriving predecessor (`Graph.execute`); the sinks feed an output
  node (agent `final`, level team, role decider) that does the same, and its
  result is the action. A node at depth d of D samples at temperature 1 - d/D
  (`temperature_schedule`).
- `gmemory` (bingreeky/GMemory tasks/mas_workflow/macnet): an instructor per
  edge (`instructor_<p>_<i>`), one call per node (solver / merger) given its
  predecessors' proposals and instructions, and a decision node (`final`),
  every call at temperature 0 as in G-Memory.

Nodes (and reviews) of one layer run concurrently (`max_workers` threads)
through `Decider.decide_many`: recall and recording are serial and in node
order, so decision ids, the graph and memory's view never depend on thread
timing. The default graph is G-Memory's: random (G-Memory's draw), 3 nodes,
drawn once per run from the run seed (`graph_draw`; the same graph for every
task and memory method of a run), recorded in the trajectory's metadata;
`reverse` turns every edge around (convergent).

Spec, sources, cost per step and every departure: docs/frameworks/macnet.md.
"""

from frameworks.macnet.framework import MacNetFramework, MacNetParams

__all__ = ["MacNetFramework", "MacNetParams"]
