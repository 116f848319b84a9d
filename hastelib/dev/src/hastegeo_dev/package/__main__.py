"""``python -m hastegeo_dev.package [--root .] [--out dist]``: build the deployment package (``make package``).

Runs on a bare Python 3.11 (standard library only), so the deploy workflow needs
nothing installed to build what it ships.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hastegeo_dev.package.build import FOLDER_NAME, PackageError, build


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hastegeo_dev.package", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="repository root (default: here)")
    parser.add_argument("--out", type=Path, default=Path("dist"), help="output folder (default: dist)")
    args = parser.parse_args(argv)
    try:
        package = build(args.root, args.out)
    except PackageError as exc:
        print(f"package: {exc}", file=sys.stderr)
        return 2
    size = package.zip_path.stat().st_size
    print(f"{package.zip_path}: {len(package.files)} files, {size // 1024} KiB; unpacked in {args.out / FOLDER_NAME}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
