# Dependency-environment preparation of admitted archives, by the genuine SDK:
# one interpreter start (the SDK imported once) for every candidate of a run.
#
# Usage: python -I <bytecode options> -c <this> -     (JOBS on stdin)
#
#   JOBS  a JSON list of jobs, one per archive, each an object:
#     archive    the exact .lbpkg file (DIR/packages/<folder>/<file>.lbpkg)
#     sha256     its sha256, lower-case hex
#     data_root  the candidate's private runtime data root
#                (DIR/roots/dependencies/<folder>/data), the same for every run
#                so a later run, in a later process, reads back the earlier one
#     mode       `prepare`, or `requirements`: stop after reporting the
#                requirements the SDK keeps, before anything is installed (the
#                gate downloads them into the wheelhouse, then prepares)
#
# Prints one JSON list on stdout, in the order of JOBS: for each job either
# {"report": {...}} (what the SDK did; a refusal is the report's "error") or
# {"error": "<type>: <message>"} when this probe could not observe that job
# (an archive it cannot read, say): never read as the SDK refusing it. One
# job's error does not stop the others. Each job has its own data root; the
# jobs share this process, its HOME and TMPDIR, which is sound because no
# candidate code runs here: install_package reads and extracts bytes, and the
# SDK's installer runs pip as its own child, with its own HOME and TMPDIR in
# the job's staging folder, installing wheels only (the wheelhouse holds
# nothing else, sdists the profile allows included: they are built into
# wheels when the wheelhouse is built, in its sandbox).
#
# This follows the host's own path for an enabled installation
# (langbot_plugin.runtime.plugin.mgr): PluginArtifactStore.install_package, then
# PluginWorkerLauncher.prepare_dependency_environment with a
# PluginDependencyEnvironmentStore on the same data root, in the `oss_dev`
# runtime profile (the direct `pip install --target` installer; the `shared`
# profile needs nsjail). pip runs only when requirements remain after the SDK
# drops its own `langbot-plugin` pin, with the index the SDK reads from
# LANGBOT_PLUGIN_PYPI_INDEX_URL in this process's environment (the gate sets
# it to the run's wheelhouse); `pip_index_args` reports those arguments as the
# SDK's own helper builds them.
import asyncio
import json
import sys

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from langbot_plugin.entities.io.context import PluginWorkerPolicy
from langbot_plugin.runtime.helper import pkgmgr
from langbot_plugin.runtime.plugin.artifact import PluginArtifactStore
from langbot_plugin.runtime.plugin.dependency_environment import (
    PluginDependencyEnvironmentStore,
)
from langbot_plugin.runtime.plugin.worker_launcher import PluginWorkerLauncher

RUNTIME_PROFILE = "oss_dev"

# Worker limits do not enter dependency preparation or its fingerprint; the
# launcher only needs a valid policy to be configured.
POLICY = PluginWorkerPolicy(
    max_cpus=1.0,
    max_memory_mb=1024,
    max_pids=256,
    max_open_files=1024,
    max_file_size_mb=64,
)


def error_text(exc):
    return f"{type(exc).__name__}: {exc}"


def observe(archive, expected, data_root, mode):
    result = {
        "runtime_profile": RUNTIME_PROFILE,
        "pip_index_args": pkgmgr.get_pip_index_args(),
        "environments_before": [],
        "requirements": None,
        "requirement_names": None,
        "environment": None,
        "error": None,
    }
    # Read outside the SDK's try: a file the harness cannot read is not
    # something the SDK refused (the job errs and Rust says "not observed").
    with open(archive, "rb") as handle:
        package = handle.read()
    try:
        store = PluginArtifactStore(data_root)
        artifact = store.install_package(package, expected)
        environments = PluginDependencyEnvironmentStore(store.base_path)
        if environments.environments_path.is_dir():
            result["environments_before"] = sorted(
                p.name for p in environments.environments_path.iterdir()
            )
        # Reported only: `prepare` runs the same check again before installing.
        kept, _ = environments._read_requirements(artifact)
        result["requirements"] = list(kept)
        # The names pip must install here: requirements whose marker applies.
        parsed = [Requirement(r) for r in kept]
        result["requirement_names"] = [
            canonicalize_name(r.name)
            for r in parsed
            if r.marker is None or r.marker.evaluate()
        ]
        if mode == "requirements":
            return result

        launcher = PluginWorkerLauncher()
        launcher.configure(POLICY, RUNTIME_PROFILE)
        env = asyncio.run(launcher.prepare_dependency_environment(environments, artifact))
        readback = environments.get_ready(env.digest)
        marker = env.root_path / ".ready.json"
        result["environment"] = {
            "digest": env.digest,
            "artifact_digest": env.artifact_digest,
            "requirements_digest": env.requirements_digest,
            "runtime_fingerprint": env.runtime_fingerprint,
            "root_path": str(env.root_path),
            "site_packages_path": str(env.site_packages_path),
            "ready_readback": readback is not None
            and readback.digest == env.digest
            and readback.site_packages_path == env.site_packages_path,
            "ready_marker": json.loads(marker.read_text(encoding="utf-8")),
        }
    except Exception as exc:  # the SDK's refusal is the finding
        result["error"] = error_text(exc)
    return result


def main():
    outcomes = []
    for job in json.load(sys.stdin):
        try:
            if job["mode"] not in ("prepare", "requirements"):
                raise ValueError(f"unknown mode {job['mode']!r}")
            report = observe(job["archive"], job["sha256"], job["data_root"], job["mode"])
        except Exception as exc:  # this job not observed; the others go on
            outcomes.append({"error": error_text(exc)})
        else:
            outcomes.append({"report": report})
    json.dump(outcomes, sys.stdout)


main()
