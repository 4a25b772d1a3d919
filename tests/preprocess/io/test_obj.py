"""The OBJ reader (preprocess.io.obj): what it gives is what trimesh gives, bit for bit, and what
it refuses or names."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from preprocess import load as load_module
from preprocess.load import load_mesh
from preprocess.mesh import MeshError, MeshWarning


# --------------------------------------------------------------------------------------------------
# formats


def test_obj_round_trip(tmp_path, assert_valid, assert_closed_manifold, signed_volume):
    sphere = trimesh.creation.icosphere(subdivisions=2)
    path = tmp_path / "ico.obj"
    sphere.export(path, include_normals=False)
    mesh = load_mesh(path)
    assert_valid(mesh)
    assert mesh.name == "ico"
    assert mesh.triangle_count == 320 and mesh.vertex_count == 162
    assert mesh.wedge_uv is None
    assert_closed_manifold(mesh)
    assert signed_volume(mesh) > 0


def test_obj_quads_are_triangulated(tmp_path, write, quad_obj):
    mesh = load_mesh(write(tmp_path / "quads.obj", quad_obj))
    assert mesh.triangle_count == 4 and mesh.vertex_count == 6
    np.testing.assert_allclose(mesh.wedge_normal, np.tile([0, 0, 1], (6, 1)), atol=1e-7)


def test_obj_several_objects_are_merged(tmp_path, write):
    text = "o a\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\no b\nv 5 0 0\nv 6 0 0\nv 5 1 0\nf 4 5 6\n"
    mesh = load_mesh(write(tmp_path / "two.obj", text))
    assert (mesh.triangle_count, mesh.vertex_count) == (2, 6)


# --------------------------------------------------------------------------------------------------
# the fast reader gives exactly what the trimesh path gives


_GRID = "".join(  # 18 vertices, no three on a line (a jittered 3 x 3 x 2 grid)
    f"v {x + 0.13 * y * y} {y + 0.07 * z + 0.011 * x * x} {z + 0.05 * x * y}\n"
    for x in (0, 1, 2) for y in (0, 1, 2) for z in (0, 1)
)


_TEX = "vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nvt 0.5 0.25\n"


_NRM = "vn 0 0 1\nvn 0 1 0\nvn 1 0 0\nvn 0 0 0\n"


_COLOURED = "".join(  # the grid with a colour after each position (MeshLab's 'v x y z r g b')
    f"{line} {(k * 0.37) % 1:.3f} {(k * 0.61) % 1:.3f} {(k * 0.23) % 1:.3f}\n"
    for k, line in enumerate(_GRID.splitlines())
)


OBJ_CASES = {
    "triangles": _GRID + "f 1 3 5\nf 3 7 5\nf 2 4 6\n",
    # colours were dropped by the fast reader without a word (trimesh's path kept them)
    "vertex colours": _COLOURED + "f 1 3 5\nf 3 7 5\nf 2 4 6\n",
    "vertex colours, normals, quads": _COLOURED + _NRM
    + "f 1//1 3//1 5//2\nf 3//3 7//1 5//2 6//4\n",
    "quads": _GRID + "f 1 3 9 7\nf 2 4 10 8\nf 3 5 11 9\n",
    "pentagons": _GRID + "f 1 3 5 11 7\nf 2 4 6 12 8\n",
    "mixed polygons": _GRID + "f 1 3 5\nf 1 3 9 7\nf 2 4 6 12 10 8\nf 5 11 9\n",
    "negative indices": _GRID + "f -18 -16 -14\nf 3 -12 5\nf -1 -3 -5 -7\n",
    "v/vt": _GRID + _TEX + "f 1/1 3/2 5/3\nf 3/2 7/4 5/3\nf 1/5 3/2 9/3 7/4\n",
    "v//vn": _GRID + _NRM + "f 1//1 3//1 5//2\nf 3//3 7//1 5//2\nf 5//4 7//1 9//2\n",
    "v/vt/vn": _GRID + _TEX + _NRM + "f 1/1/1 3/2/1 5/3/2\nf 3/2/3 7/4/1 5/3/2 6/1/4\n",
    "negative vt vn": _GRID + _TEX + _NRM + "f 1/-1/-1 3/-2/1 5/3/-4\nf 3/2/3 7/-5/1 5/3/2\n",
    "vt out of range": _GRID + _TEX + "f 1/1 3/2 5/9\nf 3/2 7/4 5/3\n",
    "vn out of range": _GRID + _NRM + "f 1//1 3//7 5//2\n",
    "vt without vt lines": _GRID + "f 1/1 3/2 5/3\n",
    "materials": _GRID + _TEX + "mtllib none.mtl\no a\nf 1 3 5\nusemtl red\nf 3 7 5\n"
    "g side\nusemtl blue\nf 2/1 4/2 6/3\nusemtl red\ns 1\nf 7 9 11\nusemtl blue\n"
    "f 8/2 10/3 12/4\nusemtl \nf 1 2 3\n",
    "objects and comments": "# made by hand\no first\n" + _GRID + "g g1\nf 1 3 5\no second\n"
    "f 2 4 6\nl 1 2\n# the end",
    "unused and repeated vertices": _GRID + "v 0 0 0\nv 1 0 0\nf 19 3 20\nf 1 3 2\nf 1 3 2\n",
    # float32's largest in a vertex no face uses (a mesh reaching it is refused: MAX_WORLD)
    "numbers": "v 0.1 1e-3 -2.5E+2\nv 123456789.123456789 0.30000000000000004 -0\n"
    "v 3.4028234663852886e17 1.4e-45 +7\nv 1.5 .25 3.\nv 3.4028234663852886e38 -1e-320 1\n"
    "f 1 2 3\nf 1 3 4\n",
    "crlf": (_GRID + "f 1 3 5\nf 3 7 5\n").replace("\n", "\r\n"),
    "tabs inside lines": _GRID + "f 1\t3 5\nf 3 7\t 5 \n",
}


@pytest.mark.parametrize("case", sorted(OBJ_CASES))
def test_fast_obj_reader_matches_trimesh(tmp_path, case, write, assert_same_mesh):
    assert_same_mesh(write(tmp_path / "case.obj", OBJ_CASES[case]))


OBJ_LEFT_TO_TRIMESH = {
    "line continuation": _GRID + "f 1 3 \\\n5\nf 3 7 5\n",
    "usemtl inside a comment": _GRID + "f 1 3 5\n# usemtl x\nf 3 7 5\n",
    "corner layouts mixed": _GRID + _TEX + "f 1 3 5\nf 3/1 7/2 5/3\n",
    "vertex widths mixed": "v 0 0 0\nv 1 0 0 1\nv 0 1 0\nf 1 2 3\n",
    "indented line": _GRID + "  f 1 3 5\nf 3 7 5\n",
    "tab after keyword": _GRID + "f\t1 3 5\nf 3 7 5\n",
}


@pytest.mark.parametrize("case", sorted(OBJ_LEFT_TO_TRIMESH))
def test_unusual_obj_is_left_to_trimesh(tmp_path, case, write, assert_same_mesh):
    assert_same_mesh(write(tmp_path / "case.obj", OBJ_LEFT_TO_TRIMESH[case]), fast_path=False)


@pytest.mark.parametrize("uvs", ["vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nvt 0.5 0.25\n",
                                 "vt 0 0 0\nvt 1 0 0\nvt 1 1 0\nvt 0 1 0\nvt 0.5 0.25 0\n"])
def test_obj_vertex_colours_beside_uvs(tmp_path, uvs, write, assert_same_mesh):
    """trimesh drops 'v x y z r g b' colours where a geometry has uvs (and the fast reader
    dropped them always, without a word); the fast reader now keeps them, each vertex its colour
    as in the same file without uvs (read alike by both paths), and trimesh's path, which reads
    such a file when it has materials, names the loss."""
    faces = "f 1/1 3/2 5/3\nf 3/2 7/4 5/3 6/1\n"
    with_uv = write(tmp_path / "uv.obj", _COLOURED + uvs + faces)
    plain = assert_same_mesh(write(tmp_path / "plain.obj", _COLOURED + "f 1 3 5\nf 3 7 5 6\n"))

    def colour_at(mesh):
        return {tuple(mesh.positions[mesh.wedge_position[w]]): tuple(mesh.wedge_color[w])
                for w in range(len(mesh.wedge_position))}

    fast = load_module._load(with_uv, fast=True)
    assert fast.wedge_uv is not None and fast.wedge_color is not None
    assert colour_at(fast) == colour_at(plain)
    with pytest.warns(MeshWarning, match="vertex colours beside uvs .* drawn without them"):
        slow = load_module._load(with_uv, fast=False)
    assert slow.wedge_color is None
    # colours written 0..255 read as 0..1, clipped: named
    loud = _GRID.splitlines()
    text = "".join(f"{line} 255 {k} 0\n" for k, line in enumerate(loud)) + "f 1 3 5\n"
    with pytest.warns(MeshWarning, match="vertex colours above 1"):
        load_mesh(write(tmp_path / "bytes.obj", text))


def test_comments_after_the_data_of_a_line_are_read(tmp_path, write):
    """Trimesh cannot read an OBJ with a comment after a vertex or face line's data (numpy's
    "could not be read to its end"); the fast reader ends such a line at its '#', and reads
    what trimesh reads of the file without the comments, bit for bit."""
    from preprocess import load as load_module

    body = _GRID + _TEX + _NRM + "f 1/1/1 3/2/1 5/3/2\nf 3/2/3 7/4/1 5/3/2 6/1/4\n"
    lines = body.splitlines()
    noted = "\n".join(f"{line} # note {k}" if k % 3 == 0 else
                      f"{line}#n" if k % 3 == 1 else line
                      for k, line in enumerate(lines)) + "\n# the end\n"
    mesh = load_module._load(write(tmp_path / "noted.obj", noted), fast=True)
    ref = load_module._load(write(tmp_path / "plain.obj", body), fast=False)
    for field in ("positions", "triangles", "wedge_position", "wedge_normal", "wedge_uv"):
        assert getattr(mesh, field).tobytes() == getattr(ref, field).tobytes(), field
    with pytest.raises(MeshError, match=r"line 1: a comment at the end of a vertex or face "
                                        r"line.*put it on a line of its own"):
        # a line continuation: left to trimesh, which cannot read the comment
        load_mesh(write(tmp_path / "continued.obj", "v 0 0 0 # a\n" + _GRID + "f 1 2 \\\n3\n"))


def test_fast_obj_reader_on_random_files(tmp_path, write, assert_same_mesh):
    """Random OBJ files mixing every feature above, seeded."""
    rng = np.random.default_rng(11)
    for i in range(40):
        nv = int(rng.integers(6, 30))
        lines = [f"v {x!r} {y!r} {z!r}" for x, y, z in rng.normal(size=(nv, 3)).tolist()]
        lines += [f"vt {u} {v}" for u, v in rng.integers(0, 3, (8, 2)).tolist()]
        lines += [f"vn {a!r} {b!r} {c!r}" for a, b, c in rng.normal(size=(5, 3)).tolist()]
        layout = int(rng.integers(0, 4))
        for _ in range(int(rng.integers(1, 25))):
            if rng.random() < 0.15:
                lines.append(f"usemtl m{rng.integers(0, 3)}")
            k = int(rng.choice([3, 4, 6])) if i % 2 else 3
            corners = []
            for v in rng.choice(nv, size=k, replace=False).tolist():
                vi = v + 1 if rng.random() < 0.7 else v - nv
                t, n = int(rng.integers(1, 9)), int(rng.integers(1, 6))
                corners.append([f"{vi}", f"{vi}/{t}", f"{vi}//{n}", f"{vi}/{t}/{n}"][layout])
            lines.append("f " + " ".join(corners))
        assert_same_mesh(write(tmp_path / f"random{i}.obj", "\n".join(lines) + "\n"))


@pytest.mark.parametrize("name", ["beast.obj", "stanford-bunny.obj",
                                  "textured/spot/spot_quadrangulated.obj",
                                  "textured/spot/spot_control_mesh.obj"])
@pytest.mark.slow
def test_fast_reader_matches_trimesh_on_real_meshes(name, shared, assert_same_mesh):
    assert_same_mesh(shared(name))


# --------------------------------------------------------------------------------------------------
# errors: one line, naming the file


@pytest.mark.parametrize("face", ["1 2 4", "1 2 99", "1 2 -7", "0 1 2", "1 2 3 100"])
def test_error_obj_index_out_of_range(tmp_path, face, write, load_error):
    path = write(tmp_path / "oob.obj", f"v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 3\nf {face}\n")
    assert "out of range" in load_error(path)


def _relative_obj(mtl: bool, objects: bool) -> tuple[str, str]:
    """An OBJ whose faces each define their three corners (v, vt, vn) just above them and name
    them -3, -2, -1, and its twin with the absolute indices those mean."""
    p, f = _small_sphere()
    rel, ab = ["mtllib m.mtl\nusemtl red\n"] if mtl else [""], []
    for k, tri in enumerate(f):
        head = f"o part{k // 40}\n" if objects and k % 40 == 0 else ""
        block = "".join(f"v {x} {y} {z}\nvt {x / 2 + 0.5} {y / 2 + 0.5}\nvn {x} {y} {z}\n"
                        for x, y, z in p[tri])
        rel.append(head + block + "f -3/-3/-3 -2/-2/-2 -1/-1/-1\n")
        a = 3 * k
        ab.append(head + block + f"f {a + 1}/{a + 1}/{a + 1} {a + 2}/{a + 2}/{a + 2} "
                  f"{a + 3}/{a + 3}/{a + 3}\n")
    return "".join(rel), rel[0] + "".join(ab)


def _small_sphere():
    from assets.shapes import geodesic_sphere_arrays

    p, f = geodesic_sphere_arrays(2)
    return np.asarray(p, np.float32), np.asarray(f)


@pytest.mark.parametrize("mtl, objects", [(False, False), (True, False), (False, True)])
def test_relative_obj_indices_count_back_from_their_line(tmp_path, mtl, objects, write, load_error):
    """A negative OBJ index counts back from the last vertex (uv, normal) defined above its line;
    trimesh counts from the end of the whole file's list, so a file that defines each face's
    corners just above it read as one triangle repeated (80 faces "duplicated", 1 kept). Read
    by the fast reader, by trimesh (a material library: rewritten to absolute indices first) and
    as a scene of objects, each is its absolute twin exactly."""
    from preprocess.scene_import import read_scene

    (tmp_path / "m.mtl").write_text("newmtl red\nKd 0.8 0.1 0.1\n")
    rel, ab = _relative_obj(mtl, objects)
    a, b = write(tmp_path / "rel.obj", rel), write(tmp_path / "abs.obj", ab)
    if objects:
        ra, rb = read_scene(a), read_scene(b)
        pairs = [(ra.meshes[k], rb.meshes[k]) for k in rb.meshes]
        assert len(pairs) == 2
    else:
        pairs = [(load_mesh(a), load_mesh(b))]
    for m, ref in pairs:
        assert m.triangle_count == ref.triangle_count > 1
        for field in ("positions", "triangles", "wedge_position", "wedge_normal", "wedge_uv"):
            assert getattr(m, field).tobytes() == getattr(ref, field).tobytes(), field
    # before the first vertex: one line naming it, on either reader's path
    head = "mtllib m.mtl\nusemtl red\n" if mtl else ""
    bad = write(tmp_path / "bad.obj", head + "v 0 0 0\nv 1 0 0\nv 1 1 0\nf -1 -2 -4\n")
    assert f"line {3 + head.count(chr(10)) + 1}: a relative face index out of range" in \
        load_error(bad)


@pytest.mark.parametrize("face", ["1/1 2/1 9/1", "1//1 -9//1 2//1", "1/1/1 2/1/1 3/1/1 0/1/1"])
def test_error_obj_index_out_of_range_with_attributes(tmp_path, face, write, load_error):
    text = f"v 0 0 0\nv 1 0 0\nv 1 1 0\nvt 0 0\nvn 0 0 1\nf 1/1/1 2/1/1 3/1/1\nf {face}\n"
    assert "out of range" in load_error(write(tmp_path / "oob.obj", text))
