"""The OFF reader (preprocess.io.off): what trimesh gives, bit for bit, and what it reads where
trimesh fails or misreads (comments, pentagons, COFF colours)."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from preprocess.load import load_mesh
from preprocess.mesh import MeshError, MeshWarning


def test_off(tmp_path):
    path = tmp_path / "box.off"
    trimesh.creation.box().export(path)
    mesh = load_mesh(path)
    assert (mesh.triangle_count, mesh.vertex_count) == (12, 8)


OFF_CASES = {
    "triangles": "OFF\n4 2 0\n0 0 0\n1 0 0\n0 1 0\n1 1 0.5\n3 0 1 2\n3 1 3 2\n",
    "quads, one-line header, blank lines": "OFF 6 2 0\n\n0 0 0\n1 0 0\n1 1 0\n0 1 0\n2 0 0\n"
    "2 1 0\n4 0 1 2 3\n4 1 4 5 2\n",
    "triangles and quads": "OFF\n6 3 0\n0 0 0\n1 0 0\n1 1 0\n0 1 0\n2 0 0\n2 1 0\n"
    "4 0 1 2 3\n3 1 4 5\n3 1 5 2\n",
    "comments on lines of their own": "OFF\n# made by hand\n4 2 0\n0 0 0\n1 0 0\n# half\n"
    "0 1 0\n1 1 0.5\n3 0 1 2\n3 1 3 2\n",
}


@pytest.mark.parametrize("case", sorted(OFF_CASES))
def test_fast_off_reader_matches_trimesh(tmp_path, case, write, assert_same_mesh):
    assert_same_mesh(write(tmp_path / "case.off", OFF_CASES[case]))


@pytest.mark.parametrize("rows, expected", [
    # MeshLab's 0..255 with alpha, and Geomview's 0..1 without
    (["0 0 0 255 0 0 255", "1 0 0 0 255 0 128", "0 1 0 0 0 255 255", "1 1 1 255 255 255 255"],
     [[1, 0, 0, 1], [0, 1, 0, 128 / 255], [0, 0, 1, 1], [1, 1, 1, 1]]),
    (["0 0 0 1 0 0", "1 0 0 0 1 0", "0 1 0 0 0 1", "1 1 1 0.5 0.5 0.5"],
     [[1, 0, 0, 1], [0, 1, 0, 1], [0, 0, 1, 1], [0.5, 0.5, 0.5, 1]]),
])
def test_coff_vertex_colours_are_read(tmp_path, rows, expected, write):
    """COFF's 'x y z r g b [a]' colours were dropped without a word (trimesh drops them; so did
    the fast reader): read as sRGB like PLY's and OBJ's; values after a plain OFF vertex and face
    colours, which are not drawn, are named."""
    from preprocess.tess.color import srgb_to_linear

    text = "COFF\n4 2 0\n" + "\n".join(rows) + "\n3 0 1 2\n3 1 3 2\n"
    mesh = load_mesh(write(tmp_path / "c.off", text))
    want = np.array(expected, np.float64)
    want[:, :3] = srgb_to_linear(want[:, :3])
    got = {tuple(mesh.positions[p]): mesh.wedge_color[w]
           for w, p in enumerate(mesh.wedge_position)}
    for row, colour in zip(rows, want, strict=True):
        position = tuple(np.float32(float(x)) for x in row.split()[:3])
        np.testing.assert_allclose(got[position], colour, atol=1e-6)
    with pytest.warns(MeshWarning, match="face colours .* are not supported"):
        load_mesh(write(tmp_path / "f.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n"
                        "3 0 1 2 255 0 0\n"))
    with pytest.warns(MeshWarning, match="no COFF colour"):
        load_mesh(write(tmp_path / "x.off", "OFF\n3 1 0\n0 0 0 7\n1 0 0 7\n0 1 0 7\n"
                        "3 0 1 2\n"))


OFF_COMMENTED = "OFF # a header\n# own line\n4 2 0\n0 0 0 # a vertex\n1 0 0#x\n0 1 0\n1 1 0.5\n" \
    "3 0 1 2 # the first face\n3 1 3 2\n# the end\n"


def test_off_comments_are_read_where_trimesh_lost_a_face(tmp_path, write):
    """Trimesh's comment stripping copies the text before a comment after a line's data back
    into the file: with one after the first face, it read one triangle of two, without a word.
    The fast reader ends each line at its '#': what trimesh reads of the file without them."""
    from preprocess import load as load_module

    mesh = load_module._load(write(tmp_path / "noted.off", OFF_COMMENTED), fast=True)
    plain = "".join(line.split("#")[0].rstrip() + "\n" for line in OFF_COMMENTED.splitlines())
    ref = load_module._load(write(tmp_path / "plain.off", plain), fast=False)
    assert mesh.triangle_count == 2
    for field in ("positions", "triangles", "wedge_position", "wedge_normal"):
        assert getattr(mesh, field).tobytes() == getattr(ref, field).tobytes(), field
    # where trimesh must read it, it is refused rather than misread
    with pytest.raises(MeshError, match=r"line 1: a comment after a line's data, which trimesh"):
        load_module._load(tmp_path / "noted.off", fast=False)


def test_fast_off_reader_reads_pentagons(tmp_path, write):
    # trimesh 4.x/5.x fails on OFF polygons larger than quads under numpy 2 (a string multiply
    # in its fan code); the fast reader fans them as that code means to.
    text = "OFF\n5 1 0\n0 0 0\n1 0 0\n2 1 0\n1 2 0\n0 1 0\n5 0 1 2 3 4\n"
    mesh = load_mesh(write(tmp_path / "pentagon.off", text))
    np.testing.assert_array_equal(mesh.position_triangles, [[0, 1, 2], [0, 2, 3], [0, 3, 4]])
