"""Answer "why does this skill version have its status?" from the audit log alone.

The answer walks the version's lineage back to its promotion: the seed
memory and the successes that supported it, the promotion with the inherited
evidence, and for each later version the review that found drift, the
intervention that proposed it, the replay verdict and the activation. Then it
summarises the version's own evidence (admitted successes, admitted
failures with their BadCases) and its reviews, and states the status the
last status-changing event left it in. Works on any prefix of the log, so it
answers "at any time" too: pass the events up to that time.
"""

from __future__ import annotations

from typing import Any

Event = dict[str, Any]


def _status(events: list[Event], skill_id: str) -> str:
    status = "unknown"
    for e in events:
        kind = e["event"]
        if kind in ("promotion", "activation") and e.get("skill") == skill_id:
            status = "active"
        elif kind == "activation" and e.get("parent") == skill_id:
            status = "superseded"
        elif kind == "isolation" and e.get("skill") == skill_id:
            status = "isolated"
        elif kind == "monitoring" and e.get("skill") == skill_id:
            status = "monitored (inactive candidate awaiting replay evidence)"
        elif kind == "intervention" and e.get("candidate") == skill_id and status == "unknown":
            status = "candidate (inactive)"
    return status


def _mean(b: dict[str, Any], which: str) -> float:
    x = b[which]
    return x["alpha"] / (x["alpha"] + x["beta"])


def _origin(events: list[Event], skill_id: str, depth: int) -> list[str]:
    lines: list[str] = []
    pad = "  " * depth
    for e in events:
        if e["event"] == "promotion" and e.get("skill") == skill_id:
            seed = e["seed"]
            lines.append(
                f"{pad}#{e['seq']} promoted from memory {seed} at {e['level']} level "
                f"(seed evidence {e['seed_evidence']}, neighbours {e['neighbours']}, "
                f"inherited fraction {e['inherit_fraction']}; slow mean {_mean(e['belief'], 'slow'):.2f}, "
                f"fast mean {_mean(e['belief'], 'fast'):.2f})"
            )
            for s in events:
                if s.get("memory") != seed or s["seq"] > e["seq"]:
                    continue
                if s["event"] in ("memory_created", "memory_supported"):
                    lines.append(f"{pad}  #{s['seq']} seed {s['event'].replace('_', ' ')} by task {s['task']}")
                elif s["event"] == "belief_update":
                    what = f"success of task {s['task']}" if s["success"] else f"admitted failure {s['badcase']}"
                    lines.append(f"{pad}  #{s['seq']} seed credited: {what} (weight {s['weight']:.2f})")
            return lines
        if e["event"] == "intervention" and e.get("candidate") == skill_id:
            parent = e["skill"]
            lines = _origin(events, parent, depth)
            lines.append(
                f"{pad}#{e['seq']} {e['route']} of {parent} proposed {skill_id} "
                f"(changed {', '.join(e['changed'])}; {e['reason'] or 'no reason given'})"
            )
            for r in events:
                if r["event"] == "replay" and r.get("candidate") == skill_id:
                    g = r["gate"]
                    lines.append(f"{pad}#{r['seq']} replay: {g['decision']} ({g['reason']})")
                if r["event"] == "activation" and r.get("skill") == skill_id:
                    lines.append(f"{pad}#{r['seq']} activated, superseding {r['parent']}")
            return lines
    return [f"{pad}no promotion or intervention event for {skill_id} in this log"]


def explain(events: list[Event], skill_id: str) -> list[str]:
    lines = [f"{skill_id}: {_status(events, skill_id)}"]
    lines += _origin(events, skill_id, 1)
    updates = [e for e in events if e["event"] == "belief_update" and e.get("skill") == skill_id]
    if updates:
        succ = [e for e in updates if e["success"]]
        last = updates[-1]["after"]
        lines.append(
            f"  evidence: {len(succ)} admitted successes (mass {sum(e['weight'] for e in succ):.2f}), "
            f"{len(updates) - len(succ)} admitted failures; now slow mean {_mean(last, 'slow'):.2f}, "
            f"fast mean {_mean(last, 'fast'):.2f}"
        )
    for e in events:
        if e.get("skill") != skill_id:
            continue
        if e["event"] == "admit_failure":
            lines.append(
                f"  #{e['seq']} failure admitted from {e['badcase']} (task {e['task']}, {e['mode']}, "
                f"mode {e['failure_mode']}, mean confidence {e['mean_confidence']})"
            )
        elif e["event"] == "review":
            lines.append(
                f"  #{e['seq']} reviewed in round {e['round']}: drift {e['drift']['score']:.3f} "
                f"(consistency {e['drift']['consistency']:.2f}), exposure {e['exposure']:.2f}, route {e['route']}"
            )
        elif e["event"] == "intervention" and e["outcome"] == "no_change":
            lines.append(f"  #{e['seq']} no change: {e['reason']}")
        elif e["event"] in ("isolation", "monitoring"):
            lines.append(f"  #{e['seq']} {e['event']}: {e['reason']}")
    for e in events:
        if e["event"] in ("isolation", "monitoring") and e.get("parent") == skill_id:
            lines.append(f"  #{e['seq']} candidate {e['skill']} {e['event']}: {e['reason']}; {skill_id} stays active")
        if e["event"] == "activation" and e.get("parent") == skill_id:
            lines.append(f"  #{e['seq']} superseded by {e['skill']} ({e['reason']})")
    return lines
