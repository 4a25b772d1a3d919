"""Fingerprints of what Tessera produces, to show that a change of structure changed nothing.

Builds `.tess` files from several assets through the `preprocess` command (the bytes are hashed,
the build's `seconds` meta aside) and renders them through the public API over several views,
debug views, traversals, the 32-bit visibility path, occlusion off, instancing and streaming;
every image array of every frame is hashed; each file is also fingerprinted as decoded (its
clusters' geometry and records, meta and sections: `.decoded`, which holds through a format
change that keeps what the bytes say); and builds the LOD DAG and BVH of the seven shared
scans in memory and hashes every array of both (the DAG signatures: they hold through a format
change, which changes the files' bytes on purpose). Run it before and after a change:

    .venv/bin/python tools/check_identical.py --write before.json
    .venv/bin/python tools/check_identical.py --compare before.json

Exit status 1 when anything differs (each difference is printed).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's packages, not the installed ones
SHARED = ROOT.parent / "shared" / "assets"

# (name, preprocess arguments)
BUILDS = [
    ("bunny", [str(SHARED / "stanford-bunny.obj")]),
    ("bunny_t1", [str(SHARED / "stanford-bunny.obj"), "--threads", "1"]),
    ("beast", [str(SHARED / "beast.obj")]),  # has UVs
    ("rock", ["--builtin", "rock", "--triangles", "60000"]),
    ("sphere", ["--builtin", "sphere", "--triangles", "20000"]),
]

# (asset, instances, option overrides, views, debug views, tau)
RENDERS = [
    ("bunny", 1, {}, ["iso", "front"], ["lit", "cluster", "triangle", "group", "level",
                                        "raster", "instance"], 1.0),
    ("bunny", 1, {"persistent": True}, ["iso"], ["lit", "level"], 1.0),
    ("bunny", 1, {"persistent": False}, ["iso"], ["lit", "level"], 1.0),
    ("bunny", 1, {"fallback32": True}, ["iso", "side"], ["lit", "cluster"], 1.0),
    ("bunny", 1, {"occlusion": False}, ["iso"], ["lit"], 2.0),
    ("beast", 1, {}, ["iso", "back"], ["lit", "triangle"], 1.0),
    ("rock", 16, {}, ["iso", "top"], ["lit", "instance", "level"], 1.0),
    ("rock", 16, {"fallback32": True, "persistent": True}, ["iso"], ["lit"], 4.0),
    ("rock", 16, {"streaming": True, "pool_pages": 6}, ["iso"], ["lit", "level"], 1.0),
    ("sphere", 4, {"streaming": True}, ["front"], ["lit"], 1.0),
]

VIEWS = {"iso": (0.3, 0.35, 1.0), "front": (0.0, 0.0, 1.0), "side": (1.0, 0.0, 0.0),
         "top": (0.0, 1.0, 0.05), "back": (0.0, 0.0, -1.0)}

IMAGES = ("color", "depth", "normal", "instance", "cluster", "triangle", "level", "hardware")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:20]


# what format versions dropped (3: parent_error, page_deps, page_dep_offset): left out of the
# decoded digest, so that files of either side of the change compare
RETIRED = {"parent_error", "page_deps", "page_dep_offset"}


def _decoded_digest(path: Path) -> str:
    """The digest of what a file holds, not of how: every cluster decoded (geometry, attributes,
    materials) with its record's fields but the stream offsets, by cluster id, the meta but the
    stage times, and the sections the file keeps besides the page layout's (`group_parts`). It
    holds through a format change that moves bytes but keeps what they say."""
    from preprocess.tess.reader import read_tess
    from preprocess.tess.pages import decode_cluster, page_clusters

    skip = {"position_offset", "normal_offset", "uv_offset", "index_offset", *RETIRED}
    found = {}
    with read_tess(path, verify_pages=True) as f:
        meta = {k: v for k, v in f.meta.items() if k != "seconds"}
        for p in range(f.page_count):
            page = np.asarray(f.page(p))
            for rec in page_clusters(page):
                d = decode_cluster(page, rec, meta["step"], (meta["uv_min"], meta["uv_max"]))
                h = hashlib.sha256()
                for key in sorted(d):
                    h.update(key.encode())
                    h.update(b"-" if d[key] is None else np.ascontiguousarray(d[key]).tobytes())
                for field in rec.dtype.names:
                    if field not in skip:
                        h.update(field.encode() + np.asarray(rec[field]).tobytes())
                found[int(rec["cluster"])] = h.hexdigest()
        h = hashlib.sha256(json.dumps(meta, sort_keys=True).encode())
        for cluster in sorted(found):
            h.update(found[cluster].encode())
        for sname in sorted(f.sections):
            if sname != "group_parts" and sname not in RETIRED:
                h.update(sname.encode())
                h.update(np.ascontiguousarray(f.sections[sname]).tobytes())
    return h.hexdigest()[:20]


def build_all(out: Path) -> dict[str, str]:
    """name -> digest of the file with the stage times blanked (they differ run to run)."""
    from preprocess.tess.reader import read_tess

    digests = {}
    for name, args in BUILDS:
        path = out / f"{name}.tess"
        subprocess.run([str(ROOT / ".venv/bin/preprocess"), *args, "-o", str(path), "-q"],
                       check=True)
        with read_tess(path, verify_pages=True) as f:
            meta = dict(f.meta)
            meta.pop("seconds", None)
            h = hashlib.sha256(json.dumps(meta, sort_keys=True).encode())
            for sname in f.sections:
                h.update(sname.encode())
                h.update(np.ascontiguousarray(f.sections[sname]).tobytes())
            h.update(np.ascontiguousarray(f.page_flags).tobytes())
            for p in range(f.page_count):
                h.update(np.asarray(f.page(p)).tobytes())
        digests[name] = h.hexdigest()[:20]
        digests[name + ".decoded"] = _decoded_digest(path)
        info = subprocess.run([str(ROOT / ".venv/bin/tessera"), "info", str(path)],
                              check=True, capture_output=True, text=True).stdout
        digests[name + ".info"] = _digest("\n".join(
            ln for ln in info.splitlines() if "seconds" not in ln).encode())
    return digests


SCANS = ("stanford-bunny", "beast", "cheburashka", "homer", "igea", "ogre", "rocker-arm")


def _hash_arrays(h, obj) -> None:
    for field in dataclasses.fields(obj):
        value = getattr(obj, field.name)
        h.update(field.name.encode())
        if isinstance(value, np.ndarray):
            h.update(str(value.dtype).encode() + str(value.shape).encode())
            h.update(np.ascontiguousarray(value).tobytes())
        elif dataclasses.is_dataclass(value):
            _hash_arrays(h, value)
        elif value is not None and not isinstance(value, (list, dict)):
            h.update(repr(value).encode())


def dag_all() -> dict[str, str]:
    """scan -> digest of its DAG and BVH built in memory (every array, the input mesh's too)."""
    from preprocess.build import build_asset
    from preprocess.load import load_mesh

    digests = {}
    for name in SCANS:
        dag, bvh, _ = build_asset(load_mesh(SHARED / f"{name}.obj"))
        h = hashlib.sha256()
        _hash_arrays(h, dag)
        digests[name + ".dag"] = h.hexdigest()[:20]
        h = hashlib.sha256()
        _hash_arrays(h, bvh)
        digests[name + ".bvh"] = h.hexdigest()[:20]
    return digests


def render_all(out: Path) -> dict[str, str]:
    from renderer import Camera, Renderer, RenderOptions

    digests = {}
    for asset, count, overrides, views, debugs, tau in RENDERS:
        opts = RenderOptions(tau=tau, **overrides)
        r = Renderer(192, 160, options=opts)
        index = r.load(out / f"{asset}.tess")
        if count == 1:
            r.add_instance(index)
        else:
            r.add_grid(index, count)
        center, radius = r.bounds()
        for view in views:
            cam = Camera.framing(center, radius, direction=VIEWS[view], fill=1.3)
            for debug in debugs:
                res = r.render_converged(cam, debug_view=debug)
                key = f"{asset}x{count}/{json.dumps(overrides, sort_keys=True)}/{view}/{debug}"
                for image in IMAGES:
                    digests[f"{key}/{image}"] = _digest(
                        np.ascontiguousarray(getattr(res, image)).tobytes())
                digests[f"{key}/triangles"] = str(res.stats.triangles)
    return digests


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", help="write the fingerprints to this JSON file")
    g.add_argument("--compare", help="compare with the fingerprints in this JSON file")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        found = {"files": build_all(Path(tmp)), "images": render_all(Path(tmp)),
                 "dags": dag_all()}
    if args.write:
        Path(args.write).write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        n = sum(len(v) for v in found.values())
        print(f"wrote {n} fingerprints to {args.write}")
        return 0
    expected = json.loads(Path(args.compare).read_text())
    bad = 0
    for part in found:
        for key in sorted(set(expected.get(part, {})) | set(found[part])):
            a, b = expected.get(part, {}).get(key), found[part].get(key)
            if a != b:
                bad += 1
                print(f"differs: {part} {key}: {a} -> {b}")
    n = sum(len(v) for v in found.values())
    print(f"{n - bad} of {n} fingerprints identical" + ("" if bad else " (all)"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
