"""The statistics block that `preprocess` prints after a build and `tessera info` prints from a
file's meta (the builder stores the figures in the meta; see `preprocess.build.dag_stats`)."""

from __future__ import annotations

STAGES = ("load", "cluster", "simplify", "bvh", "pack", "write")  # in pipeline order
# the load's own steps (`preprocess.io.steps`), in the order they run
LOAD_STEPS = ("read", "weld", "clean", "normals", "wedges", "checks")


def summarize(meta: dict, file_size: int, page_count: int, root_pages: int) -> str:
    """The statistics block shared by `preprocess` and `tessera info`."""
    per_level = meta["clusters_per_level"]
    tris_level = meta["triangles_per_level"]
    lines = [
        f"{meta['name']}",
        f"  input         {meta['input_triangles']:,} triangles, "
        f"{meta['input_vertices']:,} vertices",
        f"  clusters      {meta['clusters']:,} in {meta['levels']} levels, "
        f"{meta['groups']:,} groups; level-0 fill {100 * meta['level0_fill']:.1f}%"
        + (f"; built in {meta['chunks']} chunks" if meta.get("chunks", 1) > 1 else ""),
    ]
    for lv, (c, t) in enumerate(zip(per_level, tris_level, strict=True)):
        noun = "clusters" if c != 1 else "cluster "
        lines.append(f"    level {lv:<3} {c:>8,} {noun} {t:>11,} triangles")
    lines += [
        f"  root          {meta['root_clusters']} cluster{'s' * (meta['root_clusters'] != 1)}, "
        f"{meta['root_triangles']:,} triangles",
        f"  quantization  step {meta['step']:.3g} (max error {meta['quantization_error']:.3g})"
        + (f"; shading weight {meta['shading_weight']:g}" if "shading_weight" in meta else "")
        + (f", normal cost {meta['normal_cost']:g}" if meta.get("normal_cost") else ""),
        f"  pages         {page_count:,} of {meta['page_size'] // 1024} KiB "
        f"({root_pages} root)",
        f"  file          {file_size / 2**20:.2f} MiB",
    ]
    names = meta.get("materials")
    if names:  # format additions of issue 16: older files have none
        attrs = [a for a, on in (("uvs", meta.get("has_uv")), ("vertex colours",
                                                              meta.get("has_color"))) if on]
        shown = ", ".join(names[:4]) + (f", ... ({len(names)})" if len(names) > 4 else "")
        lines.insert(-2, f"  materials     {shown}" + (f"; {', '.join(attrs)}" if attrs else ""))
        sizes = meta.get("textures") or []
        if sizes:
            dims = ", ".join(f"{w}x{h}" for w, h in sizes[:5]) + (", ..." if len(sizes) > 5
                                                                  else "")
            where = (f"in {meta['texture_file']} (the scene's: "
                     f"{meta.get('texture_set_bytes', 0) / 2**20:.1f} MiB)"
                     if meta.get("texture_file") else
                     f"{meta.get('texture_bytes', 0) / 2**20:.1f} MiB")
            formats = ", ".join(meta.get("texture_formats") or [])
            lines.insert(-2, f"  textures      {len(sizes)} ({dims}) with mips"
                             f"{f' ({formats})' if formats else ''}: {where}")
    up = meta.get("up", "y")  # absent: Y-up, as files written before the key
    if up != "y":
        lines.append(f"  up axis       {up.upper()} in the source, turned Y-up when built")
    seconds = meta.get("seconds", {})
    if seconds:  # pipeline order (the meta JSON stores its keys sorted)
        # the load's own steps, "load.read" and so on (files of issue 37 on), in its parentheses
        steps = {k[5:]: v for k, v in seconds.items() if k.startswith("load.")}
        stages = {k: v for k, v in seconds.items() if not k.startswith("load.")}
        named = [k for k in LOAD_STEPS if k in steps] + [k for k in steps if k not in LOAD_STEPS]
        detail = {"load": f" ({', '.join(f'{k} {steps[k]:.2f}' for k in named)})"} if named else {}
        order = [k for k in STAGES if k in stages] + [k for k in stages if k not in STAGES]
        parts = ", ".join(f"{k} {stages[k]:.2f}{detail.get(k, '')}" for k in order)
        total = sum(v for k, v in stages.items() if k != "load")
        lines.append(f"  seconds       {parts} (build {total:.2f} without load)")
    return "\n".join(lines)
