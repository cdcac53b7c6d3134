#!/usr/bin/env python3
"""Generate the Python stubs for our .proto files (CRI v1, etcd v3) into pykubelet/_proto/.

    python scripts/gen_proto.py            # regenerate in place
    python scripts/gen_proto.py --out DIR  # generate elsewhere (the staleness test does this)

protoc writes ``from runtime.v1 import api_pb2``; the stubs live inside the
``pykubelet._proto`` package, so those imports are rewritten to
``from pykubelet._proto.runtime.v1 import api_pb2``. Stubs are never edited by hand.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROTO_ROOT = REPO / "proto"
OUT_ROOT = REPO / "pykubelet" / "_proto"
PACKAGE = "pykubelet._proto"
# proto files (relative to PROTO_ROOT) that we generate stubs for
PROTO_FILES = (
    "runtime/v1/api.proto",
    "etcd/mvccpb/kv.proto",
    "etcd/etcdserverpb/rpc.proto",
)
INIT_TEXT = '"""Generated protobuf/gRPC stubs (scripts/gen_proto.py); never edit by hand."""\n'


def _rewrite_imports(text: str) -> str:
    """Point protoc's top-level imports (``from runtime.v1 import x_pb2``) into our package."""
    tops = sorted({p.split("/")[0] for p in PROTO_FILES})
    for top in tops:
        text = re.sub(
            rf"^(\s*)from ({re.escape(top)}(?:\.[\w.]+)?) import (\w+_pb2)",
            rf"\1from {PACKAGE}.\2 import \3",
            text,
            flags=re.MULTILINE,
        )
        text = re.sub(
            rf"^(\s*)import ({re.escape(top)}\.[\w.]+_pb2)\b",
            rf"\1import {PACKAGE}.\2",
            text,
            flags=re.MULTILINE,
        )
    return text


def generate(out_root: Path) -> list[Path]:
    """Run protoc for every file in PROTO_FILES into ``out_root``; return the files written."""
    from grpc_tools import protoc  # build-time dependency (the [test] extra)

    grpc_include = Path(protoc.__file__).resolve().parent / "_proto"
    with tempfile.TemporaryDirectory(prefix="gen-proto-") as tmp:
        args = [
            "grpc_tools.protoc",
            f"-I{PROTO_ROOT}",
            f"-I{grpc_include}",
            f"--python_out={tmp}",
            f"--pyi_out={tmp}",
            f"--grpc_python_out={tmp}",
            *(str(PROTO_ROOT / f) for f in PROTO_FILES),
        ]
        code = protoc.main(args)
        if code != 0:
            raise SystemExit(f"protoc failed with exit code {code}")
        written: list[Path] = []
        tmp_root = Path(tmp)
        for src in sorted(tmp_root.rglob("*")):
            if not src.is_file():
                continue
            rel = src.relative_to(tmp_root)
            dst = out_root / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text(_rewrite_imports(src.read_text()))
            written.append(dst)
    # every directory from out_root down to the stubs is a package
    for d in {p.parent for p in written} | {out_root}:
        cur = d
        while True:
            init = cur / "__init__.py"
            if not init.exists():
                init.write_text(INIT_TEXT)
            if cur == out_root:
                break
            cur = cur.parent
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT_ROOT, help="output root")
    ns = parser.parse_args(argv)
    if ns.out == OUT_ROOT:
        # drop stale generated files (e.g. from a removed .proto) before writing fresh ones
        for old in OUT_ROOT.rglob("*_pb2*.py*"):
            old.unlink()
    else:
        shutil.rmtree(ns.out, ignore_errors=True)
    for path in generate(ns.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
