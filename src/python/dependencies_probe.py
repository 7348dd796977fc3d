# Dependency-environment preparation of one admitted archive, by the genuine SDK.
#
# Usage: python -I -B -c <this> ARCHIVE SHA256 DATA_ROOT [MODE]
#
#   ARCHIVE    the exact .lbpkg file (DIR/packages/<folder>/<file>.lbpkg)
#   SHA256     its sha256, lower-case hex
#   DATA_ROOT  the private runtime data root (DIR/roots/dependencies/<folder>/data),
#              the same for every run so a later run reads back the earlier one
#   MODE       `prepare` (default), or `requirements`: stop after reporting the
#              requirements the SDK keeps, before anything is installed (the
#              gate downloads them into the wheelhouse, then prepares)
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
# SDK's own helper builds them. One JSON document on stdout reports what the
# SDK did.
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


def main():
    archive, expected, data_root = sys.argv[1:4]
    mode = sys.argv[4] if len(sys.argv) > 4 else "prepare"
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
    # something the SDK refused (the probe fails and Rust says "not observed").
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
            json.dump(result, sys.stdout)
            return

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
    json.dump(result, sys.stdout)


main()
