"""Where the worker's interpreter and SDK live, and which pid namespace it runs in.

Printed as one JSON document. The `worker-isolation` gate runs it plainly to
learn the read-only paths a bwrap sandbox must bind (the venv and the base
interpreter's prefix), then inside bwrap as the preflight: the SDK must resolve
to the same package directory, in a new pid namespace.
"""

import json
import os
import sys

import langbot_plugin

print(json.dumps({
    "executable": sys.executable,
    "realpath": os.path.realpath(sys.executable),
    "prefix": sys.prefix,
    "base_prefix": sys.base_prefix,
    "exec_prefix": sys.exec_prefix,
    "base_exec_prefix": sys.base_exec_prefix,
    "sdk_package": os.path.dirname(langbot_plugin.__file__),
    "pid": os.getpid(),
    "pid_namespace": os.readlink("/proc/self/ns/pid"),
}))
