"""VERL's real packaged trainer configs, from the real wheel, as an importable ``verl`` that refuses to be imported.

The advisor reads VERL's defaults without importing VERL; these fixtures give the tests the configs of the VERL
release the corpus is written against (PyPI is reachable wherever the tests run; without it they skip, naming why).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

#: The VERL release whose packaged defaults the advisor's tests read.
VERL_VERSION = "0.9.1"
CONFIG_FOLDER = "verl/trainer/config/"


@pytest.fixture(scope="session")
def packaged_verl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding an importable ``verl`` with VERL's packaged trainer configs; its ``__init__`` raises, so
    that reading the defaults provably never imports VERL."""
    download = tmp_path_factory.mktemp("verl-wheel")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", f"verl=={VERL_VERSION}", "-d", str(download)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    wheels = list(download.glob("verl-*.whl"))
    if result.returncode or not wheels:
        pytest.skip(f"the verl {VERL_VERSION} wheel could not be downloaded: {result.stderr.strip()[-200:]}")
    root = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheels[0]) as wheel:
        for name in wheel.namelist():
            if name.startswith(CONFIG_FOLDER) and name.endswith(".yaml"):
                wheel.extract(name, root)
            elif name.endswith(".dist-info/METADATA"):  # its version, as an installed VERL has it
                wheel.extract(name, root)
    (root / "verl" / "__init__.py").write_text('raise ImportError("reading the defaults must not import verl")\n')
    return root


@pytest.fixture(scope="session")
def verl_trainer_configs(packaged_verl: Path) -> Path:
    """The folder of VERL's packaged trainer configs."""
    return packaged_verl / CONFIG_FOLDER
