"""Type stubs of pyroi.cli (the ``pyroi`` command line)."""

import argparse

__all__ = ["main"]

def build_parser() -> argparse.ArgumentParser: ...
def main(argv: list[str] | None = None) -> int: ...
