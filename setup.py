"""Package discovery (the metadata is in pyproject.toml).

Every package under ``rlvrambench_hf/`` is found, so a new subpackage cannot be left out of the wheel; the three
top-level folders that ship inside the package are mapped in: ``cards/`` as ``rlvrambench_hf.cards``,
``metrics/`` (the evaluate module and its card) as ``rlvrambench_hf.metrics`` and ``loading_script/`` as
``rlvrambench_hf.loading_script``, each with every folder below it. The example launch files
(``rlvrambench_hf/examples/<tool>/``, no Python in them) are data folders of the package, listed too.
"""

from setuptools import find_namespace_packages, find_packages, setup

SHIPPED_FOLDERS = ("cards", "metrics", "loading_script")

packages = find_packages(include=["rlvrambench_hf", "rlvrambench_hf.*"])
packages += find_namespace_packages(include=["rlvrambench_hf.examples", "rlvrambench_hf.examples.*"])
package_dir = {}
for folder in SHIPPED_FOLDERS:
    package_dir[f"rlvrambench_hf.{folder}"] = folder
    below = find_namespace_packages(folder, exclude=["*__pycache__*"])
    packages += [f"rlvrambench_hf.{folder}"] + [f"rlvrambench_hf.{folder}.{name}" for name in below]

setup(packages=packages, package_dir=package_dir)
