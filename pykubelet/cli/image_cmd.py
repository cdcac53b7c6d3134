"""`pykubelet image [--root DIR] import FILE / ls / rm REF / pull REF / build-busybox OUT`.

Works on DIR/images directly (the store's file lock makes that safe while a runtime
on the same root runs), so no daemon is needed to load images.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import click

from pykubelet.runtime.errors import CRIError

DEFAULT_ROOT = "/var/lib/pykubelet"


def _store(ctx: click.Context):  # type: ignore[no-untyped-def]
    from pykubelet.runtime.images import ImageStore

    return ImageStore(Path(ctx.obj["root"]) / "images")


def _existing_store(ctx: click.Context):  # type: ignore[no-untyped-def]
    """The store if there is one, else None: read-only commands never create a store."""
    if not (Path(ctx.obj["root"]) / "images" / "index.json").is_file():
        return None
    return _store(ctx)


def _set_root(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.ensure_object(dict)["root"] = value


def root_option(f):  # type: ignore[no-untyped-def]
    """``--root`` after the subcommand too (``image ls --root DIR``), as users type it."""
    return click.option("--root", default=None, expose_value=False, callback=_set_root,
                        is_eager=True, help=f"pykubelet state dir [default: {DEFAULT_ROOT}]")(f)


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f}{unit}" if unit == "B" else f"{size:.1f}{unit}"
        size /= 1000
    return f"{n}B"


@click.group()
@click.option("--root", default=DEFAULT_ROOT, show_default=True, help="pykubelet state dir")
@click.pass_context
def image(ctx: click.Context, root: str) -> None:
    """Manage the node's image store (DIR/images)."""
    ctx.ensure_object(dict)
    ctx.obj["root"] = root


@image.command("import")
@root_option
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--name", default="", help="tag the (first) imported image with this reference")
@click.option("-q", "--quiet", is_flag=True, help="no per-layer progress")
@click.pass_context
def import_(ctx: click.Context, file: str, name: str, quiet: bool) -> None:
    """Import a docker-archive or OCI-layout tarball."""
    printer = _LayerProgress(enabled=not quiet, working="unpacking")
    try:
        images = _store(ctx).import_archive(file, name=name, progress=printer)
    except CRIError as exc:
        printer.end()
        raise click.ClickException(str(exc)) from exc
    printer.end()
    for img in images:
        tags = ", ".join(img.repo_tags) or "<none>"
        click.echo(f"imported {img.id} ({tags})")


@image.command("ls")
@root_option
@click.option("-q", "--quiet", is_flag=True, help="only image IDs")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
def ls(ctx: click.Context, quiet: bool, output: str) -> None:
    """List images."""
    store = _existing_store(ctx)
    images = store.list() if store is not None else []
    if output == "json":
        click.echo(json.dumps([i.to_json() for i in images], indent=1, sort_keys=True))
        return
    if quiet:
        for img in images:
            click.echo(img.id)
        return
    rows = [("IMAGE", "TAG", "IMAGE ID", "SIZE")]
    for img in images:
        short = img.id.split(":", 1)[1][:13]
        for ref in img.repo_tags or ["<none>:<none>"]:
            repo, _, tag = ref.rpartition(":")
            rows.append((repo, tag, short, _human(img.size)))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


@image.command("rm")
@root_option
@click.argument("refs", nargs=-1, required=True)
@click.option("-a", "--all-tags", is_flag=True,
              help="remove the whole image REF names, with every tag")
@click.pass_context
def rm(ctx: click.Context, refs: tuple[str, ...], all_tags: bool) -> None:
    """Remove references, as `docker rmi` does: REF (a tag or digest) untags; the image
    goes with its last reference. An image ID (or unique prefix) or --all-tags removes
    the image with all its tags."""
    store = _existing_store(ctx)
    missing = []
    for ref in refs:
        try:
            if store is None:
                done = None
            elif all_tags:
                img = store.get(ref)
                done = store.untag(img.id) if img is not None else None
            else:
                done = store.untag(ref)
        except CRIError as exc:
            raise click.ClickException(str(exc)) from exc
        if done is None:
            missing.append(ref)
            continue
        for r in done.untagged:
            click.echo(f"Untagged: {r}")
        if done.deleted:
            click.echo(f"Deleted: {done.image.id}")
    if missing:
        raise click.ClickException("no such image: " + ", ".join(missing))


@image.command("pull")
@root_option
@click.argument("ref")
@click.option("--creds", default="", metavar="USER:PASSWORD",
              help="registry credentials (else anonymous, or the registry's token dance)")
@click.option("--insecure-registry", "insecure", multiple=True, metavar="HOST[:PORT]",
              help="also use plain HTTP for this registry (localhost always may)")
@click.option("-q", "--quiet", is_flag=True, help="only the image ID")
@click.pass_context
def pull(ctx: click.Context, ref: str, creds: str, insecure: tuple[str, ...],
         quiet: bool) -> None:
    """Pull REF from its registry (OCI distribution API) into the store."""
    from pykubelet.runtime.image_pull import DEFAULT_INSECURE, Credentials, PullOptions, pull_image
    from pykubelet.runtime.imageref import is_image_id

    if is_image_id(ref.strip()):  # an ID names no registry: it is in the store or nowhere
        try:
            click.echo(_store(ctx).require(ref).id)
        except CRIError as exc:
            raise click.ClickException(str(exc)) from exc
        return
    user, _, password = creds.partition(":")
    printer = _LayerProgress(enabled=not quiet, working="downloading")
    try:
        img = pull_image(_store(ctx), ref, Credentials(user, password),
                         PullOptions(insecure_registries=(*DEFAULT_INSECURE, *insecure)),
                         progress=printer)
    except CRIError as exc:
        printer.end()
        raise click.ClickException(str(exc)) from exc
    printer.end()
    click.echo(img.id)


class _LayerProgress:
    """Per-layer progress of a pull or an import: redrawn in place on a terminal, one line
    per layer elsewhere (on stderr: stdout keeps what scripts read)."""

    def __init__(self, enabled: bool, working: str) -> None:
        import sys
        import time

        self.enabled = enabled
        self.working = working
        self.tty = sys.stderr.isatty()
        self.layers: dict[str, tuple[int, int, str]] = {}
        self.drawn = 0
        self.last = 0.0
        self._time = time.monotonic

    def __call__(self, ev: object) -> None:
        if not self.enabled:
            return
        digest, done, total = ev.digest, ev.done, ev.total  # type: ignore[attr-defined]
        state = ("exists" if ev.skipped else "done" if ev.finished  # type: ignore[attr-defined]
                 else self.working)
        self.layers[digest] = (done, total, state)
        if not self.tty:
            if state != self.working:
                click.echo(f"{digest[7:19]}: {state} {_human(total)}", err=True)
            return
        now = self._time()
        if state == self.working and now - self.last < 0.1:
            return
        self.last = now
        self._draw()

    def _draw(self) -> None:
        out = "\x1b[F" * self.drawn
        for digest, (done, total, state) in self.layers.items():
            pct = f"{100 * done // total:3d}%" if total else "    "
            out += f"\x1b[2K{digest[7:19]}: {state:<11} {pct} {_human(done)}/{_human(total)}\n"
        self.drawn = len(self.layers)
        click.echo(out, nl=False, err=True)

    def end(self) -> None:
        if self.enabled and self.tty and self.layers:
            self._draw()


@image.command("build-busybox")
@root_option
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--name", default=None, help="image reference (default docker.io/library/busybox)")
@click.option("--cmd", default="sh", show_default=True, help="image Cmd, space separated")
@click.option("--busybox", default="/bin/busybox", show_default=True)
@click.option("--import", "do_import", is_flag=True, help="also import it into the store")
@click.pass_context
def build_busybox(ctx: click.Context, out: str, name: str | None, cmd: str, busybox: str,
                  do_import: bool) -> None:
    """Build a busybox OCI-layout tar offline from busybox-static."""
    from pykubelet.runtime.image_build import DEFAULT_NAME, build_busybox_image

    if not Path(out).resolve().parent.is_dir():
        raise click.BadParameter(f"{out}: directory {Path(out).parent} does not exist",
                                 param_hint="OUT")
    try:
        built = build_busybox_image(out, name=name or DEFAULT_NAME, busybox=busybox,
                                    cmd=cmd.split())
    except CRIError as exc:
        raise click.ClickException(str(exc)) from exc
    except (OSError, subprocess.SubprocessError) as exc:
        raise click.ClickException(f"build-busybox: {exc}") from exc
    click.echo(f"wrote {built.path} ({built.name}, {built.config_digest})")
    if do_import:
        ctx.invoke(import_, file=out, name="")
