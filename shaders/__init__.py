"""WGSL sources, shipped as package data, and the one loader that reads them.

The loader understands three directives, each on a line of its own:
- ``#include "name.wgsl"``: the text of another file here (or of a generated include the caller
  passes), once per shader;
- ``#ifdef NAME`` / ``#ifndef NAME`` / ``#else`` / ``#endif``: keep lines by the defines given.
Variants that change types (the 64-bit visibility buffer needs a device feature to even compile)
use defines; tunables that do not use WGSL `override` constants.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

HERE = Path(__file__).parent


class ShaderSourceError(ValueError):
    """A directive the loader cannot follow (unknown include, unbalanced #ifdef)."""


def source(name: str) -> str:
    """The raw text of a .wgsl file in this package."""
    path = HERE / name
    if not path.is_file():
        raise ShaderSourceError(f"no shader named {name!r} in {HERE}")
    return path.read_text()


def load(name: str, *, defines: Iterable[str] = (), generated: Mapping[str, str] | None = None
         ) -> str:
    """The text of shader `name` with includes expanded and #ifdef blocks resolved."""
    defs = set(defines)
    gen = dict(generated or {})
    seen: set[str] = set()
    out: list[str] = []

    def expand(fname: str, text: str) -> None:
        stack: list[tuple[bool, bool]] = []  # (parent active, this branch active)
        active = True
        for n, line in enumerate(text.splitlines(), 1):
            s = line.strip()
            if s.startswith(("#ifdef ", "#ifndef ")):
                word = s.split()[1]
                cond = (word in defs) == s.startswith("#ifdef ")
                stack.append((active, cond))
                active = active and cond
            elif s == "#else":
                if not stack:
                    raise ShaderSourceError(f"{fname}:{n}: #else without #ifdef")
                parent, cond = stack[-1]
                stack[-1] = (parent, not cond)
                active = parent and not cond
            elif s == "#endif":
                if not stack:
                    raise ShaderSourceError(f"{fname}:{n}: #endif without #ifdef")
                active = stack.pop()[0]
            elif not active:
                continue
            elif s.startswith("#include "):
                inc = s.split(None, 1)[1].strip().strip('"')
                if inc in seen:
                    continue
                seen.add(inc)
                expand(inc, gen[inc] if inc in gen else source(inc))
            else:
                out.append(line)
        if stack:
            raise ShaderSourceError(f"{fname}: #ifdef without #endif")

    seen.add(name)
    expand(name, source(name))
    return "\n".join(out) + "\n"
