# TEST-ONLY hostile worker variant `write-outside`, selected by the harness
# when VCC_TEST_WORKER_VARIANT=write-outside (worker A only). Appended after
# worker.py.
#
# When its job starts it writes two files carrying its own tag outside its
# root: one at the top of the evidence directory, and one in the run's
# bytecode cache DIR/roots/pycache, a folder other gates write too (left out
# of the comparison while such a gate runs beside the workers, but still read
# for a worker's tag). The `private-roots` check must refuse both. Under
# bwrap only its own root is writable: the writes fail and it carries on.

ESCAPED_NAME = "vcc-write-outside-escaped"


class WriteOutsideHooks(Hooks):
    def child_env(self, env):
        # DIR/roots/worker-isolation/a/data -> DIR
        evidence = os.environ["VCC_WORKER_DATA"]
        for _ in range(4):
            evidence = os.path.dirname(evidence)
        tag = "vcc-worker-id " + os.environ["VCC_WORKER_ID"]
        for folder in (evidence, os.path.join(evidence, "roots", "pycache")):
            try:
                os.makedirs(folder, exist_ok=True)
                with open(os.path.join(folder, ESCAPED_NAME), "w") as f:
                    f.write(tag + "\n")
            except OSError:
                pass
        return env


main(WriteOutsideHooks())
