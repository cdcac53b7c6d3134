"""DefaultPreemption: the PostFilter plugin shell.

The evaluator (candidates, victims, PDBs, nomination) is pysched-engine's
pysched.preemption; this module is the registry entry that builds it from the
decoded DefaultPreemptionArgs.
"""

from __future__ import annotations

from typing import Any

from pysched import preemption
from pysched.plugins.args import DefaultPreemptionArgs

NAME = "DefaultPreemption"


def new(args: Any, handle: Any) -> Any:
    a = args if isinstance(args, DefaultPreemptionArgs) else DefaultPreemptionArgs()
    return preemption.DefaultPreemption(
        handle, a.min_candidate_nodes_percentage, a.min_candidate_nodes_absolute
    )
