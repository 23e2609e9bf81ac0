"""Typed Hub releases of RLVRAMBench: build, verify, diff, push and publish to an olah mirror (see docs/release.md)."""
