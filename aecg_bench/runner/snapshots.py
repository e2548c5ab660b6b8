"""When a run snapshots its memory, and which snapshots it keeps (issue 36: long streams).

A snapshot holds the whole memory and framework state, which grows with the stream for most methods
(AECG keeps its bad cases, EDV and ReasoningBank their banks). Taken every `protocol.snapshot_every`
records and all kept, disk and write time grew with the square of the stream (7.8 GB for a 10,000-sample
AECG run by extrapolation). Two rules bound them:

- Retention: the `runtime.snapshot_keep` newest snapshots are kept, plus those at the end of a protocol
  phase or build epoch (a warm-up or build phase's final state); older ones are deleted after each write.
  Resume needs only the newest readable one at or below the surviving record count; the others are the
  fall-back when it is damaged.
- Cadence: a snapshot falls on a multiple of `protocol.snapshot_every` records, and at least
  size / `runtime.snapshot_bytes_per_record` records after the previous one (its JSON size): a large state
  is snapshotted less often, so the bytes snapshotted per record stay bounded and so does the time. A
  resume then replays more records (each replays only its memory-side effect, from the stored trajectory
  and the response cache). States under snapshot_every x that budget (640 KiB by default) keep the plain
  cadence. The size is the JSON text's, so the cadence is a function of the state alone: a resumed run
  takes the snapshots an uninterrupted one takes.

Neither rule changes what a run computes (resume is exact from any snapshot), so both live under
`runtime`, outside the run's identity.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass
class Cadence:
    """Which record counts get a snapshot, given the last one taken (restored on resume)."""

    every: int  # protocol.snapshot_every
    bytes_per_record: int  # runtime.snapshot_bytes_per_record; 0: plain cadence whatever the size
    last_seq: int = 0
    last_bytes: int = 0
    pinned: set[int] = field(default_factory=set)  # record counts at phase/epoch ends: never pruned

    def gap(self) -> int:
        """Records to wait after the last snapshot: its size over the per-record budget."""
        return math.ceil(self.last_bytes / self.bytes_per_record) if self.bytes_per_record else 0

    def due(self, n_records: int) -> bool:
        return n_records % self.every == 0 and n_records - self.last_seq >= self.gap()

    def taken(self, records_seq: int, nbytes: int) -> None:
        self.last_seq, self.last_bytes = records_seq, nbytes


def boundary_seqs(record_positions: Iterable[int], boundaries: set[int]) -> set[int]:
    """The record counts at which a phase or epoch ended, from the records in file order (a record
    count is its 1-based line number): the snapshots written there are kept."""
    return {seq for seq, pos in enumerate(record_positions, 1) if pos in boundaries}
