"""The package's PEP 517 build backend: it writes the wheel (and sdist) of
this pure-Python package with the standard library alone.

With setuptools as the backend, `pip install ./python` first installs
setuptools into an isolated environment, which needs the network; a backend
that needs nothing makes the plain command work offline. pyproject.toml
names it (build-backend, backend-path) and holds the metadata it reads.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "dqgraph"


def _project():
    """The [project] table of pyproject.toml. tomllib (Python 3.11+) when
    there is one, else a reader of the flat `key = value` lines it uses."""
    path = os.path.join(HERE, "pyproject.toml")
    try:
        import tomllib
    except ImportError:
        tomllib = None
    if tomllib is not None:
        with open(path, "rb") as f:
            return tomllib.load(f)["project"]
    return _read_project_table(path)


def _read_project_table(path):
    project, section = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = re.match(r"^\[(.+)\]$", line)
            if m:
                section = m.group(1)
                continue
            if section != "project":
                continue
            key, _, value = (part.strip() for part in line.partition("="))
            if value.startswith("["):
                project[key] = re.findall(r'"([^"]*)"', value)
            elif value.startswith("{"):
                project[key] = dict(re.findall(r'(\w+)\s*=\s*"([^"]*)"', value))
            else:
                project[key] = value.strip('"')
    return project


def _metadata(project):
    lines = ["Metadata-Version: 2.1", "Name: " + project["name"], "Version: " + project["version"],
             "Summary: " + project["description"], "Requires-Python: " + project["requires-python"]]
    lines += ["Requires-Dist: " + d for d in project.get("dependencies", [])]
    lines += ["License: " + project["license"]["text"]] if "license" in project else []
    with open(os.path.join(HERE, project["readme"]), encoding="utf-8") as f:
        readme = f.read()
    lines += ["Description-Content-Type: text/markdown", "", readme]
    return "\n".join(lines)


def _sources():
    """(path in the archive, path on disk) of the package's modules."""
    folder = os.path.join(HERE, PACKAGE)
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            yield PACKAGE + "/" + name, os.path.join(folder, name)


def _dist_info(project):
    return "%s-%s.dist-info" % (project["name"], project["version"])


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arcname, digest, len(data))


def _write_wheel(wheel_directory, files):
    """A wheel holding `files` ({archive path: bytes}) and its dist-info."""
    project = _project()
    info = _dist_info(project)
    files = dict(files)
    files[info + "/METADATA"] = _metadata(project).encode("utf-8")
    files[info + "/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: dqgraph build_backend\n"
                              "Root-Is-Purelib: true\nTag: py3-none-any\n").encode()
    record = [_record_line(name, data) for name, data in files.items()]
    record.append(info + "/RECORD,,")
    files[info + "/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel_name = "%s-%s-py3-none-any.whl" % (project["name"], project["version"])
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data,
                       zipfile.ZIP_DEFLATED)
    return wheel_name


# ---- PEP 517 / PEP 660 hooks -------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {}
    for arcname, path in _sources():
        with open(path, "rb") as f:
            files[arcname] = f.read()
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # The source folder on sys.path: edits take effect without reinstalling.
    return _write_wheel(wheel_directory, {PACKAGE + "_editable.pth": (HERE + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    base = "%s-%s" % (project["name"], project["version"])
    names = ["pyproject.toml", "README.md", "build_backend.py"] + [a for a, _ in _sources()]
    pkg_info = _metadata(project).encode("utf-8")
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name in names:
            tar.add(os.path.join(HERE, name), arcname=base + "/" + name)
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(pkg_info)
        tar.addfile(ti, io.BytesIO(pkg_info))
    return base + ".tar.gz"
