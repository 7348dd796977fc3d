# TEST-ONLY hostile worker variant `setsid-escape`, selected by the harness
# when VCC_TEST_WORKER_VARIANT=setsid-escape (worker A only). Appended after
# worker.py.
#
# The job's grandchild calls setsid(): it leaves the job's process group, so
# stopping the group does not stop it. The end-of-run survey must find it (by
# environment marker and working directory, never by name) and report RESIDUE.


class SetsidEscapeHooks(Hooks):
    grandchild_source = "import os\nos.setsid()\n" + GRANDCHILD_SOURCE


main(SetsidEscapeHooks())
