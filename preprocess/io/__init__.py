"""Reading mesh files, and welding what they hold into a `Mesh` (`preprocess.load.load_mesh` is
the entry point that dispatches to these modules).

One module per format: `obj` (with `mtl`, the material libraries an OBJ names), `stl`, `ply`,
`off` (the fast readers, numba and numpy, dispatched by `parts.read_parts`) and `gltf` (checked,
its geometry read with numpy, its materials by trimesh; with `gltf_refs` (indices and types),
`gltf_accessors` (bytes to arrays), `gltf_primitives` (primitives to triangles, the packed tree
trimesh reads) and `gltf_nodes` (the node tree, world transforms)); `trimesh_path` reads a file
through trimesh and flattens its scene; `text` holds what the fast readers share (numbers,
lines, tables, text checks) and `faces` trimesh's triangulation, which they copy, and triangle
strips. The mesh-building steps: `weld` (exact grouping,
positions, wedges), `repair` (degenerate and repeated triangles, winding), `normals` (crease
normals) and `arrays` (`mesh_from_arrays`, `merge_and_weld`: raw arrays to a validated `Mesh`).
"""
