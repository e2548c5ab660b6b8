"""`macnet`: agents on a directed acyclic graph, instructors on its edges (MacNet).

Follows MacNet (Qian et al., 2024, "Scaling Large-Language-Model-based
Multi-Agent Collaboration", arXiv:2406.07155) as AECG uses it
("directed-acyclic-graph" framework, AECG app. C.1), and G-Memory's MacNet
workflow (bingreeky/GMemory, tasks/mas_workflow/macnet: a graph pass per
environment step, a critic per upstream output, a decision node that turns
the result into the action).

Per environment step, layer by layer in topological order:

- instructor on edge p->i - level event, role instructor, agent
  `instructor_<p>_<i>`: reviews node p's proposal and gives node i at most two
  instructions (off with `instructors=false`).
- node i - level agent, agent `node_<i>`: role solver (a source proposes; a
  node with one predecessor refines it) or role merger (a node with several
  predecessors merges their proposals); it sees each predecessor's proposal
  with that edge's instruction.
- final - level team, role decider: turns the sinks' proposals into the one
  environment action (tools offered in conversations; the action grammar for
  constrained models).

Nodes (and instructors) of one layer run concurrently (`max_workers`
threads) through `Decider.decide_many`: recall and recording are serial and in
node order, so decision ids, the graph and memory's view never depend on
thread timing. The graph is drawn once per task (`random` from the sample's
rng, so every memory method sees the same graph for the same sample) and
recorded in the trajectory's metadata.

Topologies (`topology`, `nodes`, `width`, `edge_prob`): chain, star (hub 0 to
every other node), tree (`width`-ary, rooted at 0), full (mesh as a DAG: every
i->j with i<j), layered (layers of `width`, fully connected layer to layer),
random (each i->j kept with probability `edge_prob`). Default: layered, 4
nodes, width 2 (two layers of two; the second layer's nodes are merge nodes).

Cost: one step makes nodes + edges + 1 calls (layered 4/2: 9), against 2-3 for
`autogen` and 1 for `agentnet`; the per-sample usage records show it.

Decision graph parents: a node's parents are its predecessors' proposals and
their edges' instructions; an instruction's parent is the proposal it reviews;
the final decision's parents are the sinks' proposals; every decision also
lists the decision whose action produced the observation it was shown.

Deviations from the originals, and why:
- One instructor turn per edge instead of MacNet's multi-turn
  instructor-assistant dialogue per edge; proposals are actions (one line)
  rather than whole artifacts, except in one-answer tasks (code, labels).
- No temporal edges between steps (G-Memory passes nodes' previous-round
  outputs); the shared Transcript shows every agent the recent steps instead.
- Edges always run from lower to higher node index (acyclic by construction)
  instead of MacNet's rejection of cycle-closing edges.
"""

from frameworks.macnet.framework import MacNetFramework, MacNetParams

__all__ = ["MacNetFramework", "MacNetParams"]
