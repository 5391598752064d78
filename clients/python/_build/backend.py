"""A PEP 517 build backend for the ampflow package, standard library only:
it zips ampflow/ into a wheel with the [project] table's metadata, so pip
installs the package without fetching a build tool."""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "ampflow"
TAG = "py3-none-any"


def _project():
    """The [project] table's string values (name, version, ...)."""
    out, section = {}, None
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            m = re.match(r"^\[(.+)\]$", line)
            if m:
                section = m.group(1)
                continue
            m = re.match(r'^([A-Za-z-]+)\s*=\s*"(.*)"$', line)
            if section == "project" and m:
                out[m.group(1)] = m.group(2)
    return out


def _metadata():
    p = _project()
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"], "Summary: " + p.get("description", ""),
             "Requires-Python: " + p.get("requires-python", "")]
    readme = p.get("readme")
    if readme and os.path.exists(os.path.join(ROOT, readme)):
        with open(os.path.join(ROOT, readme), encoding="utf-8") as f:
            lines += ["Description-Content-Type: text/markdown", "", f.read()]
    return p, "\n".join(lines) + "\n"


def _dist_info(p):
    return "%s-%s.dist-info" % (p["name"], p["version"])


def _files():
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, PACKAGE)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                yield path, os.path.relpath(path, ROOT).replace(os.sep, "/")


def _wheel(directory, entries):
    """Writes a wheel of entries (archive name -> bytes) and its
    .dist-info; returns the wheel's file name."""
    p, meta = _metadata()
    info = _dist_info(p)
    entries = dict(entries)
    entries[info + "/METADATA"] = meta.encode()
    entries[info + "/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: ampflow-backend\nRoot-Is-Purelib: true\nTag: %s\n" % TAG).encode()
    record = []
    for name, data in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
    record.append(info + "/RECORD,,")
    entries[info + "/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = "%s-%s-%s.whl" % (p["name"], p["version"], TAG)
    with zipfile.ZipFile(os.path.join(directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)
    return wheel


def get_requires_for_build_wheel(config_settings=None):
    return []


get_requires_for_build_sdist = get_requires_for_build_editable = get_requires_for_build_wheel


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    p, meta = _metadata()
    info = os.path.join(metadata_directory, _dist_info(p))
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(meta)
    return _dist_info(p)


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    entries = {}
    for path, name in _files():
        with open(path, "rb") as f:
            entries[name] = f.read()
    return _wheel(wheel_directory, entries)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """`pip install -e`: a .pth file that puts this folder on sys.path."""
    return _wheel(wheel_directory, {PACKAGE + "-editable.pth": (ROOT + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = "%s-%s" % (p["name"], p["version"])
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tar:
        for rel in ["pyproject.toml", "README.md", "_build/backend.py"] + [n for _, n in _files()]:
            if os.path.exists(os.path.join(ROOT, rel)):
                tar.add(os.path.join(ROOT, rel), arcname=base + "/" + rel)
        _, meta = _metadata()
        data = meta.encode()
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(data)
        tar.addfile(ti, io.BytesIO(data))
    return name
