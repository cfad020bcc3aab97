"""Packaging beyond pyproject.toml: the recipes and accelerate configs ship inside the wheel.

They live where a cloner expects them, at the top of the repository (``recipes/``, ``accelerate_configs/``), and
nowhere else: ``package_dir`` maps them onto the subpackages ``gdpo_trl.recipes`` and ``gdpo_trl.accelerate_configs``
(pyproject.toml's ``packages.find`` cannot add packages that live outside ``gdpo_trl/``). Their subfolders are listed
as packages too, so setuptools does not warn about each. Read them with ``gdpo_trl.core.shipped``.
"""

from setuptools import find_namespace_packages, setup

DATA_FOLDERS = {"gdpo_trl.recipes": "recipes", "gdpo_trl.accelerate_configs": "accelerate_configs"}
subfolders = [f"{name}.{sub}" for name, folder in DATA_FOLDERS.items() for sub in find_namespace_packages(folder)]

setup(
    packages=[*find_namespace_packages(include=["gdpo_trl*"]), *DATA_FOLDERS, *subfolders],
    package_dir=DATA_FOLDERS,
)
