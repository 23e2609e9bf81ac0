"""``python -m rlvrambench_hf`` is the ``rlvrambench`` command."""

from .cli import run

run()
