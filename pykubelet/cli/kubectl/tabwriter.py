"""Elastic tabstops as Go's text/tabwriter lays them out, so pykubectl's columns line up
exactly as kubectl's do.

Text is cut into cells at tabs; a cell ended by a tab belongs to a column, the text after a
line's last tab does not. A column is a run of adjacent lines that all have a cell in it; its
width is its widest cell plus the padding (never less than the minimum width). kubectl's
tables use minimum width 6 and padding 3 and remember each column's widest width across
flushes (the ``RememberWidths`` flag of its tabwriter fork), which is why ``get -w`` rows stay
aligned with the header; ``describe`` uses minimum width 0 and padding 2 without memory.
"""

from __future__ import annotations

from typing import TextIO


class TabWriter:
    """Buffers tab-separated text and writes it aligned on :meth:`flush`."""

    def __init__(self, out: TextIO, minwidth: int = 6, padding: int = 3,
                 remember_widths: bool = True) -> None:
        self.out = out
        self.minwidth = minwidth
        self.padding = padding
        self.remember_widths = remember_widths
        self.maxwidths: list[int] = []
        self._text: list[str] = []

    def write(self, text: str) -> None:
        self._text.append(text)

    def forget_widths(self) -> None:
        """Start a new table: columns no longer remember earlier widths."""
        self.maxwidths = []

    def flush(self) -> None:
        text = "".join(self._text)
        self._text = []
        if not text:
            return
        lines = [line.split("\t") for line in text.split("\n")]
        parts: list[str] = []
        self._format(lines, 0, len(lines), [], parts)
        self.out.write("".join(parts))
        self.out.flush()

    # ------------------------------------------------------------------ layout
    def _format(self, lines: list[list[str]], line0: int, line1: int, widths: list[int],
                parts: list[str]) -> int:
        """Lay out lines[line0:line1] whose columns left of ``len(widths)`` are decided."""
        column = len(widths)
        this = line0
        while this < line1:
            if column >= len(lines[this]) - 1:
                this += 1
                continue
            # a block of adjacent lines with a cell in this column begins here
            self._write_lines(lines, line0, this, widths, parts)
            line0 = this
            width = self.minwidth
            while this < line1 and column < len(lines[this]) - 1:
                width = max(width, len(lines[this][column]) + self.padding)
                this += 1
            if self.remember_widths:
                width = self._remembered(widths, width)
            widths.append(width)
            self._format(lines, line0, this, widths, parts)
            widths.pop()
            line0 = this
        self._write_lines(lines, line0, line1, widths, parts)
        return line1

    def _remembered(self, widths: list[int], width: int) -> int:
        mw = self.maxwidths
        if len(mw) < len(widths):
            mw.extend(widths[len(mw):])
        col = len(widths)
        if len(mw) == col:
            mw.append(width)
        elif mw[col] > width:
            width = mw[col]
        else:
            mw[col] = width
        return width

    @staticmethod
    def _write_lines(lines: list[list[str]], line0: int, line1: int, widths: list[int],
                     parts: list[str]) -> None:
        last = len(lines) - 1
        for i in range(line0, line1):
            cells = lines[i]
            for j, cell in enumerate(cells):
                parts.append(cell)
                if j < len(widths) and j < len(cells) - 1:
                    parts.append(" " * (widths[j] - len(cell)))
            if i != last:
                parts.append("\n")
