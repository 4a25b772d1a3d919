"""`tessera`: the command-line front door. Subcommands: `preprocess` (same as the `preprocess`
command) and `info`; `view`, `render` and `bench` arrive with the runtime."""

from __future__ import annotations

import argparse
import sys

from preprocess.cli import add_build_options, run_build


def cmd_info(args: argparse.Namespace) -> int:
    """Print the statistics stored in a `.tess` file (and check every checksum with --verify)."""
    from preprocess.build import summarize
    from preprocess.tessfile import TessFormatError, read_tess

    try:
        with read_tess(args.file, verify_pages=args.verify) as f:
            meta = f.meta
            text = summarize(meta, f.file_size, f.page_count, int((f.page_flags & 1).sum()))
    except FileNotFoundError:
        print(f"tessera: error: {args.file}: no such file", file=sys.stderr)
        return 2
    except (TessFormatError, KeyError) as e:
        print(f"tessera: error: {args.file}: {e}", file=sys.stderr)
        return 2
    print(text)
    if args.verify:
        print("  checksums     all sections and pages verified")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tessera", description="Tessera: virtualized geometry "
                                     "for Python (cluster LOD, GPU culling and rasterization).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("preprocess", help="build a .tess asset from a mesh file")
    add_build_options(p)
    p.set_defaults(func=run_build)
    p = sub.add_parser("info", help="print the statistics of a .tess file")
    p.add_argument("file", help="a .tess file")
    p.add_argument("--verify", action="store_true", help="also check every page checksum")
    p.set_defaults(func=cmd_info)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
