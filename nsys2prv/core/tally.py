"""Counting what was not translated (dropped, with the reason) or altered (notes): the raw
material of the conservation summary, shared by readers and translators."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Tally:
    source_rows: int = 0
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> rows not translated
    notes: dict[str, int] = field(default_factory=dict)  # reason -> rows kept but altered

    def drop(self, reason: str, n: int) -> None:
        if n:
            self.dropped[reason] = self.dropped.get(reason, 0) + int(n)

    def note(self, reason: str, n: int) -> None:
        if n:
            self.notes[reason] = self.notes.get(reason, 0) + int(n)

    def absorb(self, other: "Tally") -> None:
        self.source_rows += other.source_rows
        for reason, n in other.dropped.items():
            self.drop(reason, n)
        for reason, n in other.notes.items():
            self.note(reason, n)
