"""`pykubelet`: one click group whose subcommands live in their own modules.

Subcommands are loaded lazily so that `pykubelet image ls` does not pay for
importing the agent, the scheduler or gRPC servers it never uses.
"""

from __future__ import annotations

import importlib

import click

# name -> "module:attribute" of a click command
SUBCOMMANDS: dict[str, str] = {
    "run": "pykubelet.cli.run_cmd:run",
    "lab": "pykubelet.cli.lab_cmd:lab",
    "control-plane": "pykubelet.cli.controlplane_cmd:control_plane",
    "load-balancer": "pykubelet.cli.loadbalancer_cmd:load_balancer",
    "runtime": "pykubelet.cli.runtime_cmd:runtime",
    "image": "pykubelet.cli.image_cmd:image",
    "install-service": "pykubelet.cli.install_service_cmd:install_service",
}


VERSION_OPTION = {"package_name": "pykube-node"}


class LazyGroup(click.Group):
    """A group that imports a subcommand's module only when it is invoked; every
    subcommand answers --version, and a user error becomes one line (cli.errors)."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            from pykubelet.cli.errors import user_error

            message = user_error(exc)
            if message is None:
                raise
            raise click.ClickException(message) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = SUBCOMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            raise click.UsageError(f"'{cmd_name}' is not available in this build") from exc
        command = getattr(module, attr)
        assert isinstance(command, click.Command)
        if not any(p.name == "version" for p in command.params):
            click.version_option(**VERSION_OPTION, prog_name=f"pykubelet {cmd_name}")(command)
        return command


@click.group(cls=LazyGroup)
@click.version_option(**VERSION_OPTION, prog_name="pykubelet")
def main() -> None:
    """pykubelet: the node agent (kubelet), its CRI runtime and image store, and the
    control plane (the Kubernetes API, its store and the scheduler)."""


if __name__ == "__main__":
    main()
