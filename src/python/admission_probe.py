# Host-side admission of .lbpkg archives, decided by the genuine SDK: one
# interpreter start (the SDK imported once) for every candidate of a run.
#
# Usage: python -I <bytecode options> -c <this> -     (JOBS on stdin)
#
#   JOBS  a JSON list of jobs, one per archive, each an object:
#     archive       the exact .lbpkg file (DIR/packages/<folder>/<file>.lbpkg)
#     sha256        its sha256, lower-case hex, as the harness computed it
#     data_root     a fresh private directory: the artifact store's base path
#     requirements  the archive's requirements.txt as extracted by the harness
#                   (DIR/extracted/<folder>/requirements.txt; may be missing)
#     lines_root    a fresh private directory for one-line requirement files
#
# Prints one JSON list on stdout, in the order of JOBS: for each job either
# {"report": {...}} (what the SDK did) or {"error": "<type>: <message>"}
# when this probe could not observe that job (an archive it cannot read,
# say): never read as the SDK refusing it. One job's error does not stop
# the others. Each job has its own artifact store and files; the jobs share
# this process, its HOME and TMPDIR, which is sound because admission runs
# no candidate code (install_package reads and extracts bytes; the
# requirement check reads text).
#
# Nothing is decided here: every verdict is the SDK's own code
# (langbot_plugin.runtime.plugin.artifact.PluginArtifactStore.install_package
# and dependency_environment.PluginDependencyEnvironmentStore._read_requirements,
# the check `prepare` runs before any install). This file only reports what
# the SDK did.
import importlib.metadata
import json
import pathlib
import sys

from packaging.markers import default_environment

from langbot_plugin.runtime.plugin.artifact import PluginArtifact, PluginArtifactStore
from langbot_plugin.runtime.plugin.dependency_environment import (
    DependencyEnvironmentPreparationError,
    PluginDependencyEnvironmentStore,
)


def error_text(exc):
    return f"{type(exc).__name__}: {exc}"


def read_requirements(code_path):
    """The SDK's requirement check for the requirements.txt under code_path."""
    artifact = PluginArtifact(
        digest="0" * 64,
        root_path=code_path,
        code_path=code_path,
        plugin_author="",
        plugin_name="",
        plugin_version="",
    )
    try:
        kept, digest = PluginDependencyEnvironmentStore._read_requirements(artifact)
    except Exception as exc:  # the SDK's refusal is the finding
        # Only DependencyEnvironmentPreparationError is the SDK deciding to
        # refuse; anything else is its check crashing (or this probe misusing
        # it), which Rust must not read as a decision.
        return {
            "accepted": False,
            "refusal": isinstance(exc, DependencyEnvironmentPreparationError),
            "kept": [],
            "digest": None,
            "error": error_text(exc),
        }
    return {
        "accepted": True,
        "refusal": False,
        "kept": list(kept),
        "digest": digest,
        "error": None,
    }


def admit(archive, expected, data_root, requirements, lines_root):
    result = {
        "installed_sdk_version": importlib.metadata.version("langbot-plugin"),
        "marker_environment": default_environment(),
        "artifact": None,
        "artifact_error": None,
        "artifact_requirements": None,
        "file_requirements": None,
        "lines": [],
    }

    # Read outside the SDK's try: a file the harness cannot read is not
    # something the SDK refused (the job errs and Rust says "not observed").
    with open(archive, "rb") as handle:
        package = handle.read()
    store = PluginArtifactStore(data_root)
    try:
        artifact = store.install_package(package, expected)
    except Exception as exc:  # the SDK's refusal is the finding
        result["artifact_error"] = error_text(exc)
    else:
        marker_path = artifact.root_path / ".verified-sha256"
        result["artifact"] = {
            "digest": artifact.digest,
            "root_path": str(artifact.root_path),
            "code_path": str(artifact.code_path),
            "marker": marker_path.read_text(encoding="ascii"),
            "plugin_author": artifact.plugin_author,
            "plugin_name": artifact.plugin_name,
            "plugin_version": artifact.plugin_version,
        }
        result["artifact_requirements"] = read_requirements(artifact.code_path)

    # The same check on the harness's own extraction, so the requirement
    # verdict exists even when the artifact store refused the archive.
    source = pathlib.Path(requirements)
    source_dir = pathlib.Path(lines_root) / "file"
    source_dir.mkdir(parents=True)
    if source.is_file():
        content = source.read_bytes()
        (source_dir / "requirements.txt").write_bytes(content)
    else:
        content = b""
    result["file_requirements"] = read_requirements(source_dir)

    # Line by line, as the SDK splits them (str.splitlines, strip, skip blank
    # and '#' lines): the SDK stops at the first refusal, these show them all.
    # Each line is judged alone, which is faithful because the SDK judges
    # lines independently (only its size and count limits span lines, and
    # those show in the whole-file verdict above).
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None:
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            line_dir = pathlib.Path(lines_root) / f"line-{number}"
            line_dir.mkdir()
            # Blank lines first, which the SDK skips, so its messages carry
            # the line's number in the real file.
            padded = "\n" * (number - 1) + line + "\n"
            (line_dir / "requirements.txt").write_text(padded, encoding="utf-8")
            verdict = read_requirements(line_dir)
            verdict.pop("digest")
            result["lines"].append({"number": number, "text": line, **verdict})

    return result


def main():
    outcomes = []
    for job in json.load(sys.stdin):
        try:
            report = admit(
                job["archive"],
                job["sha256"],
                job["data_root"],
                job["requirements"],
                job["lines_root"],
            )
        except Exception as exc:  # this job not observed; the others go on
            outcomes.append({"error": error_text(exc)})
        else:
            outcomes.append({"report": report})
    json.dump(outcomes, sys.stdout)


main()
