"""Bad inputs of every format through `preprocess`: one line, exit status 2, nothing written.

Every file is generated here, from a small geodesic sphere (320 triangles): garbage, files cut in
the middle of a line, a record or a chunk, headers that promise more than the body holds,
coordinates the position grid cannot hold, glTF extensions that are not supported. Each case runs
the command in-process (`preprocess_cli.main`) and checks what the user sees: status 2, a single
line on stderr starting ``preprocess: error:``, naming the file and saying what is wrong, and no
output file left. The positive cases beside them: what is read, repaired or warned about instead
(triangle-strip PLY, duplicated faces, inconsistent winding, unsupported glTF extensions used but
not required).
"""

from __future__ import annotations

import base64
import json
import re
import struct
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from assets.shapes import geodesic_sphere_arrays
from preprocess.build import build_asset
from preprocess.load import load_mesh
from preprocess.mesh import MeshError, MeshWarning
from renderer.apps import preprocess_cli

V, F = geodesic_sphere_arrays(4)  # (162, 3) float32 unit sphere, (320, 3) int64 outward
COMPILING = "preprocess: compiling"  # the note of a first run (a cold numba cache), not an error


# ---------------------------------------------------------------------------------------- writers


def obj(v: np.ndarray = V, f: np.ndarray = F, tail: str = "") -> bytes:
    text = "".join(f"v {x!r} {y!r} {z!r}\n" for x, y, z in v.tolist())
    text += "".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in f.tolist())
    return (text + tail).encode()


def off(v: np.ndarray = V, f: np.ndarray = F) -> bytes:
    text = f"OFF\n{len(v)} {len(f)} 0\n"
    text += "".join(f"{x!r} {y!r} {z!r}\n" for x, y, z in v.tolist())
    text += "".join(f"3 {a} {b} {c}\n" for a, b, c in f.tolist())
    return text.encode()


def stl_binary(v: np.ndarray = V, f: np.ndarray = F, count: int | None = None) -> bytes:
    rec = np.zeros(len(f), [("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")])
    rec["v"] = v[f]
    return b"binary stl".ljust(80) + struct.pack("<I", len(f) if count is None else count) \
        + rec.tobytes()


def stl_ascii(v: np.ndarray = V, f: np.ndarray = F) -> bytes:
    lines = ["solid sphere"]
    for tri in f.tolist():
        lines += ["facet normal 0 0 0", "outer loop"]
        lines += [f"vertex {x!r} {y!r} {z!r}" for x, y, z in v[tri].tolist()]
        lines += ["endloop", "endfacet"]
    return ("\n".join([*lines, "endsolid sphere"]) + "\n").encode()


def ply(fmt: str = "ascii", v: np.ndarray = V, f: np.ndarray = F, *, nv: int | None = None,
        nf: int | None = None) -> bytes:
    """x y z float, faces as 'list uchar int vertex_indices'; nv / nf: the header's counts."""
    head = (f"ply\nformat {fmt} 1.0\nelement vertex {len(v) if nv is None else nv}\n"
            "property float x\nproperty float y\nproperty float z\n"
            f"element face {len(f) if nf is None else nf}\n"
            "property list uchar int vertex_indices\nend_header\n").encode()
    if fmt == "ascii":
        rows = [f"{x!r} {y!r} {z!r}" for x, y, z in v.astype(np.float32).tolist()]
        rows += [f"3 {a} {b} {c}" for a, b, c in f.tolist()]
        return head + ("\n".join(rows) + "\n").encode()
    o = "<" if fmt == "binary_little_endian" else ">"
    face = np.zeros(len(f), [("k", "u1"), ("i", o + "i4", 3)])
    face["k"], face["i"] = 3, f
    return head + v.astype(o + "f4").tobytes() + face.tobytes()


def strip_grid(rows: int = 4, cols: int = 6) -> tuple[np.ndarray, list[list[int]]]:
    """A wavy grid in the xy plane, facing +z, as one triangle strip per row:

        (r+1, 0) --- (r+1, 1) --- ...      strip: (r+1,0) (r,0) (r+1,1) (r,1) ...
           |      \\     |                  triangles (r+1,0)(r,0)(r+1,1), (r+1,1)(r,0)(r,1), ...
         (r, 0) ----- (r, 1) ----- ...      2 (cols - 1) triangles a row
    """
    x, y = np.meshgrid(np.arange(cols), np.arange(rows + 1))
    v = np.stack([x.ravel(), y.ravel(), 0.1 * np.sin(x.ravel() + y.ravel())], 1)
    strips = [[i for c in range(cols) for i in ((r + 1) * cols + c, r * cols + c)]
              for r in range(rows)]
    return v.astype(np.float32), strips


def ply_strips(fmt: str, v: np.ndarray, strips: list[list[int]], *, one_row: bool = True,
               cut: int = 0) -> bytes:
    """A scanner's PLY: vertices and an element 'tristrips' ('list int int vertex_indices'),
    the strips in one row separated by -1 (one_row) or one row each; ``cut`` bytes removed."""
    rows = [[i for s in strips for i in (*s, -1)][:-1]] if one_row else strips
    head = (f"ply\nformat {fmt} 1.0\nelement vertex {len(v)}\nproperty float x\n"
            "property float y\nproperty float z\n"
            f"element tristrips {len(rows)}\nproperty list int int vertex_indices\n"
            "end_header\n").encode()
    if fmt == "ascii":
        body = "".join(f"{x!r} {y!r} {z!r}\n" for x, y, z in v.tolist())
        body += "".join(f"{len(r)} {' '.join(map(str, r))}\n" for r in rows)
        data = head + body.encode()
    else:
        o = "<" if fmt == "binary_little_endian" else ">"
        data = head + v.astype(o + "f4").tobytes()
        for r in rows:
            data += np.array([len(r), *r], o + "i4").tobytes()
    return data[: len(data) - cut]


def gltf_tree(v: np.ndarray = V, f: np.ndarray = F) -> tuple[dict, bytes]:
    """A glTF 2.0 tree (one node, one indexed triangle primitive) and its buffer's bytes."""
    pos, idx = v.astype("<f4").tobytes(), f.astype("<u4").tobytes()
    tree = {
        "asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "indices": 1}]}],
        "buffers": [{"byteLength": len(pos) + len(idx)}],
        "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": len(pos)},
                        {"buffer": 0, "byteOffset": len(pos), "byteLength": len(idx)}],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": len(v), "type": "VEC3",
             "min": v.min(0).tolist(), "max": v.max(0).tolist()},
            {"bufferView": 1, "componentType": 5125, "count": f.size, "type": "SCALAR"},
        ],
    }  # fmt: skip
    return tree, pos + idx


def glb(v: np.ndarray = V, f: np.ndarray = F, *, edit: Callable[[dict], None] | None = None,
        length_delta: int = 0) -> bytes:
    tree, binary = gltf_tree(v, f)
    if edit is not None:
        edit(tree)
    js = json.dumps(tree).encode()
    js += b" " * (-len(js) % 4)
    binary += b"\0" * (-len(binary) % 4)
    body = struct.pack("<II", len(js), 0x4E4F534A) + js
    body += struct.pack("<II", len(binary), 0x004E4942) + binary
    return struct.pack("<4sII", b"glTF", 2, 12 + len(body) + length_delta) + body


def gltf_embedded(edit: Callable[[dict], None] | None = None) -> bytes:
    tree, binary = gltf_tree()
    tree["buffers"][0]["uri"] = "data:application/octet-stream;base64," + \
        base64.b64encode(binary).decode()
    if edit is not None:
        edit(tree)
    return json.dumps(tree, indent=1).encode()


def _far(v: np.ndarray = V) -> np.ndarray:
    far = v.astype(np.float64)
    far[37] = [1e30, 0.0, 0.0]
    return far


def _nan(v: np.ndarray = V) -> np.ndarray:
    bad = v.astype(np.float64)
    bad[5, 1] = np.nan
    return bad


def _required(*names: str) -> Callable[[dict], None]:
    def edit(tree: dict) -> None:
        tree["extensionsUsed"] = list(names)
        tree["extensionsRequired"] = list(names)

    return edit


def _cut(data: bytes, fraction: float, extra: int = 0) -> bytes:
    return data[: int(len(data) * fraction) + extra]


def _mid_line(data: bytes, marker: bytes, keep: int) -> bytes:
    """``data`` cut ``keep`` bytes into the last line starting with ``marker``."""
    at = data.rindex(b"\n" + marker) + 1
    return data[: at + keep]


def _accessor_past_view(tree: dict) -> None:
    tree["accessors"][0]["count"] = len(V) + 10


# --------------------------------------------------------------------------------------- refusals

_RNG = np.random.default_rng(2026)
GARBAGE = _RNG.integers(0, 256, 4000, dtype=np.uint8).tobytes()
ELF = b"\x7fELF\x02\x01\x01\x00" + GARBAGE

# name -> (bytes, phrase the one line must hold)
REFUSED: dict[str, tuple[bytes, str]] = {
    # OBJ
    "random.obj": (GARBAGE, "not a text OBJ file (byte 0x"),
    "elf.obj": (ELF, "not a text OBJ file (byte 0x7f at offset 0)"),
    "cut-in-vertex.obj": (_mid_line(obj(), b"v ", 12), "looks truncated"),
    "cut-in-face.obj": (_mid_line(obj(), b"f ", 5), "looks truncated"),
    "lines-only.obj": (obj(f=F[:0], tail="l 1 2\nl 2 3 4\n"),
                       "contains no faces (only lines/points)"),
    "points-only.obj": (obj(f=F[:0]), "contains no faces (only vertices"),
    "short-vertex.obj": (b"v 0 0 0\nv 1 0\nv 0 1 0\nv 1 1 0\nf 1 2 3\nf 2 4 3\n",
                         "line 2: a vertex with 2 coordinates"),
    "nan.obj": (obj(_nan()), "NaN or infinite"),
    "far.obj": (obj(_far()), "too large for the position grid"),
    "tiny.obj": (obj(V * 1e-30), "scale it up"),
    "far-from-origin.obj": (b"v 100000 0 0\nv 100001 0 0\nv 100000 1 0\nv 100000 0 1\n"
                            b"f 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n", "31-bit grid"),
    # OFF
    "random.off": (GARBAGE, "not a text OFF file"),
    "no-header.off": (b"this is not an off file\n1 2 3\n", "not an OFF file"),
    "bad-counts.off": (b"OFF\nmany few\n0 0 0\n", "no vertex and face counts"),
    "short-body.off": (_cut(off(), 0.5).rsplit(b"\n", 1)[0] + b"\n",
                       "the header promises 162 vertices and 320 faces, the body holds"),
    "cut-in-face.off": (off().replace(b"162 320 0", b"162 321 0") + b"3 1 2",
                        "the file ends inside line 485 ('3 1 2': an incomplete face)"),
    "far.off": (off(_far()), "too large for the position grid"),
    # STL
    "random.stl": (GARBAGE, "not an STL file"),
    "cut-record.stl": (stl_binary()[:-20],
                       "truncated binary STL: the header promises 320 triangles, the file "
                       "holds 319 and 30 bytes of one more"),
    "no-triangles.stl": (stl_binary(f=F[:0]), "promises no triangles"),
    "cut.stl": (_cut(stl_ascii(), 0.5), "truncated ASCII STL: no 'endsolid'"),
    "far.stl": (stl_binary(_far()), "too large for the position grid"),
    "nan.stl": (stl_binary(_nan()), "NaN or infinite"),
    # PLY
    "random.ply": (GARBAGE, "not a PLY file"),
    "cut-header.ply": (ply()[:70], "truncated PLY header: no 'end_header'"),
    "bad-format.ply": (ply().replace(b"format ascii", b"format utf16"),
                       "unknown PLY format 'utf16'"),
    "short-vertices.ply": (ply(nv=164),
                           "the header promises 164 vertices and 320 faces, the body holds "
                           "162 vertices and 320 faces"),
    "short-faces.ply": (ply(nf=325),
                        "the header promises 162 vertices and 325 faces, the body holds 162 "
                        "vertices and 320 faces"),
    "cut-in-face.ply": (ply(nf=321) + b"3 1 2", "'3 1 2': an incomplete face); it looks truncated"),
    "short-binary.ply": (ply("binary_little_endian")[:-30],
                         "truncated binary PLY: the header promises 162 vertices and 320 "
                         "faces, the body holds 162 vertices and 317 faces"),
    "short-binary-vertices.ply": (ply("binary_big_endian")[:400],
                                  "truncated binary PLY: the header promises 162 vertices"),
    "cut-strips.ply": (ply_strips("binary_little_endian", *strip_grid(), cut=6),
                       "truncated binary PLY"),
    "far.ply": (ply("binary_little_endian", _far()), "too large for the position grid"),
    "inf.ply": (ply("ascii", np.where(np.arange(162)[:, None] == 3, np.inf, V)),
                "NaN or infinite"),
    # glTF
    "broken.gltf": (gltf_embedded()[:-40], "invalid JSON: "),
    "list.gltf": (b"[1, 2, 3]", "not a glTF file"),
    "random.gltf": (GARBAGE, "invalid JSON"),
    "v1.gltf": (gltf_embedded(lambda t: t["asset"].update(version="1.0")), "only 2.0"),
    "meshopt.gltf": (gltf_embedded(_required("EXT_meshopt_compression", "KHR_materials_unlit")),
                     "requires glTF extensions that are not supported: EXT_meshopt_compression"),
    "missing-bin.gltf": (gltf_embedded(lambda t: t["buffers"][0].update(uri="gone.bin")),
                         "'gone.bin', which is missing"),
    "past-view.gltf": (gltf_embedded(_accessor_past_view),
                       "accessor 0 reads past the end of buffer view 0"),
    # GLB
    "random.glb": (GARBAGE, "not a GLB file"),
    "bad-magic.glb": (b"glTX" + glb()[4:], "not a GLB file (it starts with b'glTX'"),
    "long-header.glb": (glb(length_delta=100), "truncated GLB: the header says"),
    "cut.glb": (_cut(glb(), 0.6), "truncated GLB"),
    "broken-json.glb": (glb()[:30] + b"}" + glb()[31:], "invalid JSON"),
    "far.glb": (glb(_far().astype(np.float32)), "too large for the position grid"),
    "nan.glb": (glb(_nan().astype(np.float32)), "NaN or infinite"),
}


def build(path: Path, capsys: pytest.CaptureFixture) -> tuple[int, list[str], Path]:
    """Run `preprocess path -o out.tess -q` in-process: (status, stderr lines, output)."""
    out = path.parent / "out.tess"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MeshWarning)
        status = preprocess_cli.main([str(path), "-o", str(out), "-q"])
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith(COMPILING)]
    return status, lines, out


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_bad_input_is_one_line_and_nothing_written(name, tmp_path, capsys):
    data, phrase = REFUSED[name]
    path = tmp_path / name
    path.write_bytes(data)
    status, lines, _ = build(path, capsys)
    assert status == 2, lines
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"preprocess: error: {name}: "), lines[0]
    assert phrase in lines[0], lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no output, no temporary


@pytest.mark.slow
@pytest.mark.parametrize("name", ["elf.obj", "cut-record.stl", "broken.gltf"])
def test_a_bad_input_through_the_installed_command(name, tmp_path):
    """The same from a shell: no traceback, whatever Python prints at exit."""
    data, phrase = REFUSED[name]
    path = tmp_path / name
    path.write_bytes(data)
    proc = subprocess.run([sys.executable, "-m", "renderer.apps.preprocess_cli", str(path),
                           "-o", str(tmp_path / "out.tess"), "-q"],
                          capture_output=True, text=True, timeout=120)
    lines = [x for x in proc.stderr.splitlines() if not x.startswith(COMPILING)]
    assert proc.returncode == 2 and len(lines) == 1 and phrase in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out.tess").exists()


def test_a_gltf_buffer_file_cut_short(tmp_path):
    tree, binary = gltf_tree()
    tree["buffers"][0]["uri"] = "mesh.bin"
    (tmp_path / "mesh.bin").write_bytes(binary[:-8])
    path = tmp_path / "mesh.gltf"
    path.write_text(json.dumps(tree))
    with pytest.raises(MeshError, match=r"buffer 0 needs \d+ bytes, 'mesh.bin' holds"):
        load_mesh(path)


# ------------------------------------------------------------------ read, repaired or warned about


def _warned(path: Path) -> tuple:
    """load_mesh(path) and the messages of the MeshWarnings it gave."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        mesh = load_mesh(path)
    return mesh, [str(w.message) for w in got if issubclass(w.category, MeshWarning)]


def _facing_z(mesh) -> np.ndarray:
    p = mesh.positions.astype(np.float64)
    t = mesh.position_triangles
    return np.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]])[:, 2]


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["ascii", "binary_little_endian", "binary_big_endian"])
@pytest.mark.parametrize("one_row", [True, False])
def test_triangle_strip_ply(fmt, one_row, tmp_path, capsys):
    v, strips = strip_grid(4, 6)
    path = tmp_path / "strips.ply"
    path.write_bytes(ply_strips(fmt, v, strips, one_row=one_row))
    mesh, warned = _warned(path)
    assert warned == []
    assert mesh.triangle_count == 4 * 2 * 5  # rows x 2 (cols - 1)
    assert (_facing_z(mesh) > 0).all()  # every other triangle reversed: all face +z
    status, lines, out = build(path, capsys)
    assert status == 0 and lines == [] and out.exists()


def test_triangle_strips_skip_degenerate_joins():
    """Strips joined by repeating a vertex: the joins make degenerate triangles, which are
    dropped but keep their place in the alternation (v0 v1 v2 | v2 v2 v3 | ...)."""
    from preprocess.io.faces import strip_triangles

    #   0 --- 2         strip 1 0 3 2 | -1 | 4 5 6: (1 0 3) (3 0 2); restart: (4 5 6)
    #   |  \  |         the same strips joined: 1 0 3 2 2 4 4 5 6 (joins: 3 2 2, 2 2 4, 2 4 4,
    #   1 --- 3         4 4 5 dropped; (4 5 6) is window 6, even: kept as is)
    flat = np.array([1, 0, 3, 2, -1, 4, 5, 6])
    np.testing.assert_array_equal(strip_triangles(flat, np.zeros(8, int)),
                                  [[1, 0, 3], [3, 0, 2], [4, 5, 6]])
    joined = np.array([1, 0, 3, 2, 2, 4, 4, 5, 6])
    np.testing.assert_array_equal(strip_triangles(joined, np.zeros(9, int)),
                                  [[1, 0, 3], [3, 0, 2], [4, 5, 6]])
    # a new row restarts the alternation, as -1 does
    np.testing.assert_array_equal(strip_triangles(np.array([1, 0, 3, 2, 4, 5, 6]),
                                                   np.array([0, 0, 0, 0, 1, 1, 1])),
                                  [[1, 0, 3], [3, 0, 2], [4, 5, 6]])


def test_duplicated_faces_are_dropped_with_a_warning(tmp_path, capsys):
    path = tmp_path / "dupes.obj"
    path.write_bytes(obj(f=np.concatenate([F, F[:7], F[:3, [1, 2, 0]]])))
    mesh, warned = _warned(path)
    assert mesh.triangle_count == 320
    assert warned == ["dupes.obj: 10 duplicated faces dropped (the same three vertices in the "
                      "same order as an earlier face)"]
    status, lines, out = build(path, capsys)
    assert status == 0 and lines == [] and out.exists()


_SQUARE = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvt 0 0\nvt 1 1\nvn 0 0 1\n"  # lines 1-7
OBJ_LOSSES = {  # what an OBJ's faces lose as they are read: text, triangles, warnings
    "clean": (_SQUARE + "f 1/1/1 2/2/1 3/1/1\nf 2/2/1 4/1/1 3/1/1\n", 2, []),
    "a face of two corners": (_SQUARE + "f 1 2 3\nf 2 4\nf 2 4 3\n", 2, [
        "1 face line with fewer than 3 corners skipped (line 9; a line is 'l')"]),
    "uv index out of range": (_SQUARE + "f 1/1 2/2 3/1\nf 2/2 4/3 3/1\n", 2, [
        "line 9: a face's uv (vt) index 3 is out of range (the file has 2 uvs): read without "
        "uvs"]),
    "normal index out of range": (_SQUARE + "f 1//1 2//1 3//-2\nf 2//1 4//1 3//1\n", 2, [
        "line 8: a face's normal (vn) index -2 is out of range (it counts back from 1 normal "
        "above its line): read without normals (smooth ones computed)"]),
    "normal indices and no normals": (
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1//1 2//1 3//1\n", 1, [
            "line 4: a face's normal (vn) index 1 is out of range (the file has 0 normals): read "
            "without normals (smooth ones computed)"]),
}


@pytest.mark.parametrize("case", sorted(OBJ_LOSSES))
@pytest.mark.parametrize("reader", ["fast", "trimesh", "materials"])
def test_what_an_obj_loses_is_named(case, reader, tmp_path):
    """Trimesh skips a face line of fewer than three corners and drops the uvs or normals of a
    geometry whose indices point past the file's list, without a word; the fast reader gives
    what trimesh gives. Either way (and through trimesh for a file with materials) a warning
    names what was lost and where."""
    from preprocess import load as load_module

    text, triangles, expected = OBJ_LOSSES[case]
    if reader == "materials":
        (tmp_path / "m.mtl").write_text("newmtl red\nKd 1 0 0\n")
        text = "mtllib m.mtl\nusemtl red\n" + text
        expected = [re.sub(r"line (\d+)", lambda m: f"line {int(m.group(1)) + 2}", w)
                    for w in expected]
    path = tmp_path / "case.obj"
    path.write_text(text)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        mesh = load_module._load(path, fast=reader != "trimesh")
    warned = [str(w.message) for w in got if issubclass(w.category, MeshWarning)]
    assert warned == [f"case.obj: {w}" for w in expected]
    assert mesh.triangle_count == triangles
    if case in ("clean", "uv index out of range"):
        assert (mesh.wedge_uv is not None) == (case == "clean")


def test_what_the_objects_of_an_obj_lose_is_named_once(tmp_path):
    """An OBJ of several objects is a scene, each object read from the file's text with the
    others' faces left out: the losses are named once, with the file's line numbers."""
    from preprocess.scene_import import read_scene

    path = tmp_path / "objects.obj"
    path.write_text(_SQUARE + "o first\nf 1 2 3\nf 2 4\no second\nf 1/1 2/1 4/9\n"
                    "f 1/1 4/1 3/1\n")  # lines 8-13
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        scene = read_scene(path)
    assert sorted(scene.meshes) == ["first", "second"]
    assert [str(w.message) for w in got if issubclass(w.category, MeshWarning)] == [
        "objects.obj: 1 face line with fewer than 3 corners skipped (line 10; a line is 'l')",
        "objects.obj: line 12: a face's uv (vt) index 9 is out of range (the file has 2 uvs): "
        "read without uvs"]


def test_reversed_duplicates_are_kept_as_two_sided_with_a_warning(tmp_path):
    path = tmp_path / "two-sided.obj"
    path.write_bytes(obj(f=np.concatenate([F, F[:5, ::-1]])))
    mesh, warned = _warned(path)
    assert mesh.triangle_count == 325
    assert warned == ["two-sided.obj: 5 faces repeat an earlier face with reversed winding: both "
                      "kept (a two-sided sheet), but their edges are locked in simplification"]


def test_inconsistent_winding_is_repaired_and_the_mesh_simplifies(tmp_path):
    flip = np.random.default_rng(3).random(len(F)) < 0.5
    f = np.where(flip[:, None], F[:, ::-1], F)
    path = tmp_path / "flipped.obj"
    path.write_bytes(obj(f=f))
    mesh, warned = _warned(path)
    assert len(warned) == 1 and "edges are used twice in the same direction: inconsistent " \
        f"winding; {int(flip.sum())} faces flipped to agree with their neighbours" in warned[0]
    p = mesh.positions.astype(np.float64)
    t = mesh.position_triangles
    volume = np.einsum("ij,ij->i", p[t[:, 0]], np.cross(p[t[:, 1]], p[t[:, 2]])).sum() / 6
    assert volume > 4.0  # outward: a unit sphere's 4.19 (the majority was not asked: half)
    dag, _, _ = build_asset(mesh)
    assert int(dag.cluster_level.max()) >= 3  # several levels (one, before the repair)


def test_a_moebius_strip_cannot_agree_and_says_so(tmp_path):
    n = 12  # a band of n quads with a half twist: non-orientable
    a = np.linspace(0, 2 * np.pi, n, endpoint=False)
    ring = lambda s: np.stack([(1 + s * np.cos(a / 2)) * np.cos(a),  # noqa: E731
                               (1 + s * np.cos(a / 2)) * np.sin(a), s * np.sin(a / 2)], 1)
    v = np.concatenate([ring(-0.3), ring(0.3)])
    quads = [(i, (i + 1) % n, n + (i + 1) % n, n + i) for i in range(n - 1)]
    quads.append((n - 1, n, 0, 2 * n - 1))  # the twist: the strip's sides swap
    f = np.array([t for q in quads for t in ((q[0], q[1], q[2]), (q[0], q[2], q[3]))])
    f[::3] = f[::3, ::-1]
    path = tmp_path / "moebius.obj"
    path.write_bytes(obj(v, f))
    mesh, warned = _warned(path)
    assert mesh.triangle_count == 2 * n
    assert len(warned) == 1 and "cannot agree (a non-orientable surface)" in warned[0]


def _textured_sphere():
    import trimesh

    uv = np.stack([np.arctan2(V[:, 1], V[:, 0]) / (2 * np.pi) + 0.5, V[:, 2] * 0.5 + 0.5], 1)
    return trimesh.Scene(trimesh.Trimesh(V, F, vertex_normals=V, process=False,
                                         visual=trimesh.visual.TextureVisuals(uv=uv)))


def test_a_draco_compressed_glb_is_read(tmp_path, capsys):
    """KHR_draco_mesh_compression (common in web assets): decoded by trimesh through DracoPy
    (the `formats` extra). The same mesh as the uncompressed file but for Draco's quantization
    (14 bits of the extent for positions, a step of 2^-14 of the 2-unit sphere: 6.1e-5)."""
    import trimesh

    scene = _textured_sphere()
    plain, packed = tmp_path / "plain.glb", tmp_path / "draco.glb"
    plain.write_bytes(trimesh.exchange.gltf.export_glb(scene))
    packed.write_bytes(trimesh.exchange.gltf.export_glb(scene, extension_draco=True))
    assert b"KHR_draco_mesh_compression" in packed.read_bytes()
    a, warned = _warned(packed)
    b = load_mesh(plain)
    assert warned == []
    assert a.triangle_count == b.triangle_count == 320 and a.wedge_uv is not None
    order_a, order_b = np.lexsort(a.positions.T), np.lexsort(b.positions.T)
    assert np.abs(a.positions[order_a] - b.positions[order_b]).max() <= 2 * 2.0**-14
    status, lines, out = build(packed, capsys)
    assert status == 0 and lines == [] and out.exists()


@pytest.mark.parametrize("name", ["draco.gltf", "draco.glb"])
def test_draco_without_dracopy_is_one_line(name, tmp_path, capsys, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda mod, *a: None if mod == "DracoPy" else find_spec(mod, *a))
    edit = _required("KHR_draco_mesh_compression")
    path = tmp_path / name
    path.write_bytes(gltf_embedded(edit) if name.endswith(".gltf") else glb(edit=edit))
    status, lines, out = build(path, capsys)
    assert status == 2 and not out.exists()
    assert lines == [f"preprocess: error: {name}: Draco-compressed meshes "
                     f"(KHR_draco_mesh_compression) are not supported (install DracoPy to read "
                     f"them)"]


def test_unsupported_gltf_extension_used_is_a_warning(tmp_path, capsys):
    def used(tree: dict) -> None:
        tree["extensionsUsed"] = ["EXT_mesh_gpu_instancing", "KHR_materials_emissive_strength"]

    path = tmp_path / "instanced.glb"
    path.write_bytes(glb(edit=used))
    mesh, warned = _warned(path)
    assert mesh.triangle_count == 320
    assert warned == ["instanced.glb: glTF extensions not supported, ignored: "
                      "EXT_mesh_gpu_instancing",
                      "instanced.glb: glTF extensions not supported, drawn with the core "
                      "material model: KHR_materials_emissive_strength"]
    status, lines, out = build(path, capsys)
    assert status == 0 and lines == [] and out.exists()


def test_a_glb_with_bytes_after_its_end_is_read_with_a_warning(tmp_path):
    path = tmp_path / "padded.glb"
    path.write_bytes(glb() + b"\0" * 16)
    mesh, warned = _warned(path)
    assert mesh.triangle_count == 320
    assert warned == ["padded.glb: 16 bytes after the GLB's end ignored"]


def test_binary_stl_count_zero_or_extra_bytes(tmp_path):
    path = tmp_path / "streamed.stl"
    path.write_bytes(stl_binary(count=0))  # a writer that streams and never fills the count
    mesh, warned = _warned(path)
    assert mesh.triangle_count == 320
    assert warned == ["streamed.stl: the binary STL header says 0 triangles; read the 320 the "
                      "file holds"]
    path.write_bytes(stl_binary() + b"\0" * 7)
    mesh, warned = _warned(path)
    assert mesh.triangle_count == 320
    assert warned == ["streamed.stl: 7 bytes after the binary STL's last triangle ignored"]


def test_latin1_obj_and_stl_are_read(tmp_path):
    """Text that is not UTF-8 (trimesh needs charset_normalizer to guess its encoding)."""
    path = tmp_path / "latin1.obj"
    half = len(F) // 2
    text = obj(f=F[:0]) + "usemtl matériau\n".encode("latin-1")
    text += "".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in F[:half].tolist()).encode()
    text += b"usemtl other\n" + "".join(f"f {a + 1} {b + 1} {c + 1}\n"
                                        for a, b, c in F[half:].tolist()).encode()
    path.write_bytes(text)
    assert load_mesh(path).triangle_count == 320
    path = tmp_path / "latin1.stl"
    path.write_bytes(stl_ascii().replace(b"solid sphere", "solid sphère".encode("latin-1")))
    assert load_mesh(path).triangle_count == 320
    # files the fast readers leave to trimesh (a line continuation, a comment): re-encoded for it
    path = tmp_path / "continued.obj"
    path.write_bytes(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nusemtl caf\xe9\nf 1 2 \\\n3\nf 2 4 3\n")
    assert load_mesh(path).triangle_count == 2
    path = tmp_path / "comment.off"
    path.write_bytes(b"OFF\n# caf\xe9\n4 2 0\n0 0 0\n1 0 0\n0 1 0\n1 1 0\n3 0 1 2\n3 1 3 2\n")
    assert load_mesh(path).triangle_count == 2


def test_gltf_scene_features_not_drawn_are_named(tmp_path):
    def rich(tree: dict) -> None:
        tree["animations"] = [{"channels": [], "samplers": []}]
        tree["skins"] = [{"joints": [0]}]
        tree["cameras"] = [{"type": "perspective", "perspective": {"yfov": 1.0, "znear": 0.1}}]
        tree["extensions"] = {"KHR_lights_punctual": {"lights": [{"type": "point"}]}}
        tree["extensionsUsed"] = ["KHR_lights_punctual"]
        tree["scenes"] = [*tree.get("scenes", [{"nodes": [0]}]), {"nodes": []}]

    path = tmp_path / "rich.glb"
    path.write_bytes(glb(edit=rich))
    mesh, warned = _warned(path)
    assert mesh.triangle_count == 320
    # a file of one mesh is no scene: its lights are not drawn (a scene's are: scene_lights)
    assert warned == ["rich.glb: lights not drawn: 1 (a file of one mesh keeps none; --sun sets "
                      "the sun)",
                      "rich.glb: not drawn: 1 animations, 1 skins (drawn in the rest pose), "
                      "1 cameras, 1 scenes besides the default one"]
