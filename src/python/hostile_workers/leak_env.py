# TEST-ONLY hostile worker variant `leak-env`, selected by the harness when
# VCC_TEST_WORKER_VARIANT=leak-env (worker A only). Appended after worker.py.
#
# It copies its parent's environment (the harness's, read from
# /proc/<ppid>/environ) into its job's child: the environment leak the
# `environment-allowlist` check must catch. Under bwrap the parent is bwrap's
# own init in a new pid namespace, whose environment is already cleared.


class LeakEnvHooks(Hooks):
    def child_env(self, env):
        leaked = dict(env)
        try:
            with open("/proc/%d/environ" % os.getppid(), "rb") as f:
                for entry in f.read().split(b"\0"):
                    name, sep, value = entry.partition(b"=")
                    if sep:
                        leaked.setdefault(name.decode("utf-8", "replace"),
                                          value.decode("utf-8", "replace"))
        except OSError:
            pass
        return leaked


main(LeakEnvHooks())
