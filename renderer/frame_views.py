"""Names shared by the runtime and the command line without importing wgpu."""

# resolve's debug views, by index (shaders/resolve.wgsl `frame.debug_view`)
DEBUG_VIEWS = ("lit", "cluster", "triangle", "group", "level", "raster", "instance")
