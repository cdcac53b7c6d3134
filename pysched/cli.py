"""`pysched` console script: ``pysched simulate FILE [-o json] [--config FILE] [--explain]``."""

from __future__ import annotations

import atexit
import gc
import sys

import click

from pysched.simulate import SimulateError, load_inputs, render_json, render_text, simulate


@click.group()
@click.version_option(package_name="pykube-node", prog_name="pysched")
def main() -> None:
    """pysched: kube-scheduler's default profile, in Python."""


@main.command("simulate")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--output",
    type=click.Choice(["text", "json"]),
    default="text",
    help='json: the {"results": [...]} document DESIGN.md specifies',
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1)",
)
@click.option(
    "--explain",
    is_flag=True,
    help="per node: the filter verdict and every score plugin's raw, normalised and weighted score",
)
@click.option("--seed", type=int, default=0, help="seed of the tie-breaking RNG")
def simulate_cmd(file: str, output: str, config_path: str | None, explain: bool, seed: int) -> None:
    """Decide where each pending Pod in FILE (a v1 List) would go."""
    # at exit, the interpreter's last collections walked every object the run made (the
    # cluster read, the scheduler, the results): ~0.2 s at 5,000 nodes, ~100 us per pending
    # pod of 2,000 (issue 23 item 7). Frozen, they are left to the process's end.
    atexit.unregister(gc.freeze)  # once, however many times the command runs in a process
    atexit.register(gc.freeze)
    cfg = None
    try:
        if config_path is not None:
            from pysched.config import load_config

            try:
                cfg = load_config(config_path)
            except (OSError, ValueError) as err:
                raise SimulateError(f"--config {config_path}: {err}") from None
        inputs = load_inputs(file)
        for w in inputs.warnings:
            click.echo(f"warning: {w}", err=True)
        result = simulate(inputs, cfg, explain=explain, seed=seed)
    except SimulateError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(1)
    click.echo(render_json(result) if output == "json" else render_text(result), nl=False)


if __name__ == "__main__":
    main()
