"""[1] Per-framework hooks: only what DLPack cannot express."""
