"""pykubectl's tabwriter lays columns out as Go's text/tabwriter (and kubectl's fork with
remembered widths) does; the expected strings are what kubectl prints for the same cells."""

from __future__ import annotations

import io

from pykubelet.cli.kubectl.tabwriter import TabWriter


def layout(text: str, **kw: object) -> str:
    out = io.StringIO()
    w = TabWriter(out, **kw)  # type: ignore[arg-type]
    w.write(text)
    w.flush()
    return out.getvalue()


def test_table_columns_are_widest_cell_plus_three_at_least_six() -> None:
    text = "NAME\tREADY\tSTATUS\nweb\t0/1\tPending\nlonger-name\t1/1\tRunning\n"
    assert layout(text) == ("NAME          READY   STATUS\n"
                            "web           0/1     Pending\n"
                            "longer-name   1/1     Running\n")
    assert layout("a\tb\n") == "a     b\n"  # minimum width 6


def test_trailing_text_is_not_padded_but_empty_tab_cells_are() -> None:
    assert layout("a\tb\t\n") == "a     b     \n"
    assert layout("x\t\ty\n") == "x           y\n"


def test_column_blocks_end_at_lines_without_that_column() -> None:
    # describe's layout: a line without tabs ends the block, so the two blocks align apart
    text = "Name:\tweb\nContainers:\n  c:\n    Image:\tbusybox\n    Port:\t80\n"
    assert layout(text, minwidth=0, padding=2, remember_widths=False) == (
        "Name:  web\nContainers:\n  c:\n    Image:  busybox\n    Port:   80\n")


def test_remembered_widths_keep_watch_rows_aligned_and_grow() -> None:
    out = io.StringIO()
    w = TabWriter(out)
    w.write("NAME\tSTATUS\tAGE\nweb\tPending\t1s\n")
    w.flush()
    w.write("web\tRunning\t2s\n")
    w.flush()
    w.write("a-much-longer-name\tContainerCreating\t3s\n")
    w.flush()
    w.write("web\tRunning\t4s\n")
    w.flush()
    assert out.getvalue().splitlines() == [
        "NAME   STATUS    AGE",
        "web    Pending   1s",
        "web    Running   2s",
        "a-much-longer-name   ContainerCreating   3s",
        "web                  Running             4s",
    ]
    w.forget_widths()
    w.write("x\ty\n")
    w.flush()
    assert out.getvalue().endswith("x     y\n")


def test_widths_count_characters_not_bytes() -> None:
    assert layout("é\tb\nabcdefgh\tc\n") == "é          b\nabcdefgh   c\n"
