"""The demo's seven tasks, one module each (`core.demo.builder` builds them in order).

Each module's `build(demo)` plays one task through the engine as a harness would; each shows one
situation an operator meets (`core.demo.names.SITUATIONS`).
"""
